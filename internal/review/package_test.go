package review

import (
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// A card says what its server runs from when the server has a package pin (issue 31
// item 5): the spec, what pins it by content and who pinned it; a server with none says
// nothing of it.
func TestCardShowsPackagePin(t *testing.T) {
	w := newWorld(t)
	ingest(t, w.svc, plainDef)
	h, err := New(Config{Source: ServiceSource{Service: w.svc}, Addr: addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if rec := serve(h, req{method: "GET", target: "/", cookie: true}); rec.Code != 200 || strings.Contains(rec.Body.String(), "Runs from") {
		t.Fatalf("a server with no pin: %d, shows a package: %v", rec.Code, strings.Contains(rec.Body.String(), "Runs from"))
	}
	const integrity = "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ=="
	if _, _, err := w.svc.PinPackage(t.Context(), warrant.PackagePin{Server: "s", Spec: "npm:@acme/weather@1.0.0",
		Identity: []byte(`{"type":"npm","name":"@acme/weather","version":"1.0.0","integrity":"` + integrity + `"}`)}); err != nil {
		t.Fatal(err)
	}
	rec := serve(h, req{method: "GET", target: "/", cookie: true})
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `Runs from <code>npm:@acme/weather@1.0.0</code> <code class="digest">`+strings.ReplaceAll(integrity, "+", "&#43;")+`</code>: pin 1, by crawler@test`) {
		t.Errorf("the card does not show the pin: %d\n%s", rec.Code, body)
	}
}
