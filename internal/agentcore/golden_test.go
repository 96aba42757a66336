package agentcore

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/outputs.golden")

const goldenHeader = `This file pins the interceptor's exact output for each committed sample event
(events/agentcore-*.json, the developer guide's payload shapes) and for a few variants of
them, over the unit tests' fixture (helpers_test.go: target "weather" with get_forecast
approved, get_alerts unapproved, get_radar approved in another definition than the one
listed). It guards the wire form the gateway reads: the output envelope, the bodies passed
byte for byte (the events' own indentation included), the listing with only the removed
tools cut out, and the JSON-RPC errors of denials. A change here changes what every
deployed gateway receives: make it on purpose.

Regenerate with: go test ./internal/agentcore/ -run TestGoldenOutputs -update
`

// goldenCases are the events of the golden file: each committed sample as it is, and the
// variants the RIE test sends too.
func goldenCases(t testing.TB) ([]string, map[string][]byte) {
	t.Helper()
	ev := func(name string) []byte { return testenv.Event(t, name) }
	call := ev("agentcore-request-tools-call.json")
	names := []string{"agentcore-request-initialize.json", "agentcore-request-tools-list.json", "agentcore-response-tools-list.json",
		"agentcore-request-tools-call.json", "tools-call-unapproved", "tools-call-search", "unknown-method", "malformed", "response-null-body"}
	cases := map[string][]byte{
		"tools-call-unapproved": bytes.ReplaceAll(call, []byte("weather___get_forecast"), []byte("weather___get_alerts")),
		"tools-call-search":     bytes.ReplaceAll(call, []byte("weather___get_forecast"), []byte(searchTool)),
		"unknown-method":        bytes.Replace(call, []byte(`"method": "tools/call"`), []byte(`"method": "tools/delete"`), 1),
		"malformed":             call[:len(call)/2],
		"response-null-body":    bytes.Replace(ev("agentcore-response-tools-list.json"), []byte(`"body": {`+"\n"+`        "jsonrpc": "2.0",`+"\n"+`        "id": 1,`+"\n"+`        "result"`), []byte(`"body": null, "x": {"result"`), 1),
	}
	for _, n := range names[:4] {
		cases[n] = ev(n)
	}
	return names, cases
}

func TestGoldenOutputs(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	names, cases := goldenCases(t)
	var got strings.Builder
	got.WriteString(goldenHeader)
	for _, n := range names {
		if !strings.HasPrefix(n, "agentcore-") && (bytes.Equal(cases[n], testenv.Event(t, "agentcore-request-tools-call.json")) ||
			bytes.Equal(cases[n], testenv.Event(t, "agentcore-response-tools-list.json"))) {
			t.Fatalf("variant %s did not change its event", n)
		}
		got.WriteString("\n-- " + n + " --\n")
		got.Write(f.invoke(t, t.Context(), cases[n]))
		got.WriteString("\n")
	}
	path := filepath.Join("testdata", "outputs.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("outputs differ from %s (run with -update if on purpose):\n%s", path, got.String())
	}
}
