package catalogtest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// testPackagePins: pins are numbered per server from 1, check-and-set, with their audit
// record in the same write; Server and Servers return the newest; pinning what the newest
// pin already says writes nothing; a bad pin, an unknown server or a stale number changes
// nothing.
func testPackagePins(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	svc := newService(t, c, "olivia")
	mustAdd(t, c, server("other"))
	id1 := []byte(`{"type":"npm","name":"@acme/weather","version":"1.2.3","integrity":"sha512-AAAA"}`)
	id2 := []byte(`{"type":"npm","name":"@acme/weather","version":"1.2.4","integrity":"sha512-BBBB"}`)

	if srv, err := c.Server(ctx, "s"); err != nil || srv.Package != nil {
		t.Fatalf("before any pin: Package = %+v, %v; want nil", srv.Package, err)
	}
	head0, _ := c.AuditHead(ctx)
	p1, changed, err := svc.PinPackage(ctx, warrant.PackagePin{Server: "s", Spec: "npm:@acme/weather@1.2.3", Identity: []byte("  " + string(id1) + "\n")})
	if err != nil || !changed || p1.Seq != 1 || p1.PinnedBy != "olivia" || !p1.PinnedAt.Equal(t0) {
		t.Fatalf("first pin = %+v, %v, %v", p1, changed, err)
	}
	srv, err := c.Server(ctx, "s")
	if err != nil || srv.Package == nil || srv.Package.Seq != 1 || srv.Package.Spec != "npm:@acme/weather@1.2.3" ||
		!bytes.Equal(srv.Package.Identity, id1) || srv.Package.PinnedBy != "olivia" || !srv.Package.PinnedAt.Equal(t0) {
		t.Fatalf("Server after the pin: %+v, %v", srv.Package, err)
	}
	head1, _ := c.AuditHead(ctx)
	if head1.Seq != head0.Seq+1 {
		t.Errorf("a pin appended %d audit records, want 1", head1.Seq-head0.Seq)
	}
	if recs, err := c.AuditRecords(ctx, head0.Seq, 10); err != nil || len(recs) != 1 || recs[0].Type != warrant.EventPackagePinned ||
		!bytes.Contains(recs[0].Body, []byte(`sha512-AAAA`)) {
		t.Errorf("the pin's audit record: %+v, %v", recs, err)
	}

	// The same again: nothing written.
	if _, changed, err := svc.PinPackage(ctx, warrant.PackagePin{Server: "s", Spec: "npm:@acme/weather@1.2.3", Identity: id1}); err != nil || changed {
		t.Errorf("pinning the same again: changed %v, %v", changed, err)
	}
	if h, _ := c.AuditHead(ctx); h != head1 {
		t.Errorf("pinning the same again moved the audit head")
	}

	// A stale number and an unknown server: refused, nothing written.
	stale := warrant.PackagePin{Server: "s", Seq: 1, Spec: "npm:@acme/weather@1.2.4", Identity: id2, PinnedAt: t0, PinnedBy: "mallory"}
	wantErr(t, "a pin with a stale number", c.PinPackage(ctx, stale, warrant.AuditAppend{}), warrant.ErrConflict)
	skip := stale
	skip.Seq = 3
	wantErr(t, "a pin skipping a number", c.PinPackage(ctx, skip, warrant.AuditAppend{}), warrant.ErrConflict)
	unknown := stale
	unknown.Server, unknown.Seq = "nosuch", 1
	wantErr(t, "a pin of an unknown server", c.PinPackage(ctx, unknown, warrant.AuditAppend{}), warrant.ErrNotFound)
	bad := stale
	bad.Seq, bad.Identity = 2, []byte(`"not an object"`)
	wantErr(t, "a pin whose identity is not an object", c.PinPackage(ctx, bad, warrant.AuditAppend{}), warrant.ErrInvalid)
	if _, _, err := svc.PinPackage(ctx, warrant.PackagePin{Server: "s", Spec: "bad\nspec", Identity: id2}); !errors.Is(err, warrant.ErrInvalid) {
		t.Errorf("a spec with a newline: %v, want ErrInvalid", err)
	}

	// A new pin: number 2, the newest everywhere; the other server has none.
	p2, changed, err := svc.PinPackage(ctx, warrant.PackagePin{Server: "s", Spec: "npm:@acme/weather@1.2.4", Identity: id2})
	if err != nil || !changed || p2.Seq != 2 {
		t.Fatalf("second pin = %+v, %v, %v", p2, changed, err)
	}
	all, err := c.Servers(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("Servers = %+v, %v", all, err)
	}
	for _, s := range all {
		switch {
		case s.Name == "other" && s.Package != nil:
			t.Errorf("Servers: other has a pin %+v", s.Package)
		case s.Name == "s" && (s.Package == nil || s.Package.Seq != 2 || !bytes.Equal(s.Package.Identity, id2)):
			t.Errorf("Servers: s's pin = %+v, want the second", s.Package)
		}
	}
	// A crawl still records on a pinned server: the store's crawl counter is its own.
	mustRecord(t, c, crawl("s", 1, nil, "a"))
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 1 || srv.Package == nil || srv.Package.Seq != 2 {
		t.Errorf("after a crawl: LastCrawl %d, pin %+v", srv.LastCrawl, srv.Package)
	}
}

// testCrawlChecksPackage: Service.Crawl asks the checker about a pinned server before it
// lists it; a drift or an error refuses that server (StagePackage), lists nothing for it
// and records nothing, and the other servers are crawled; a pinned server with no checker
// is refused.
func testCrawlChecksPackage(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	svc := newService(t, c, "crawler")
	mustAdd(t, c, server("plain"))
	if _, _, err := svc.PinPackage(ctx, warrant.PackagePin{Server: "s", Spec: "tls", Identity: []byte(`{"type":"remote","spki":"sha256:00"}`)}); err != nil {
		t.Fatal(err)
	}
	lister := listAll{tools: []string{"a", "A"}}
	headers := func(context.Context, warrant.Server) (map[string]string, error) { return nil, nil }
	drift := &warrant.PackageDriftError{Server: "s", Severity: warrant.Critical, Rule: "package-integrity-changed", Detail: "sha256:00 is now sha256:11"}
	for _, tc := range []struct {
		name    string
		checker warrant.PackageChecker
		want    error
	}{
		{"drift", checkerFunc(func(_ context.Context, srv warrant.Server, pin warrant.PackagePin) error {
			if srv.Name != "s" || pin.Spec != "tls" {
				t.Errorf("checker asked about %s %+v", srv.Name, pin)
			}
			return drift
		}), warrant.ErrPackageDrift},
		{"unreachable registry", checkerFunc(func(context.Context, warrant.Server, warrant.PackagePin) error {
			return errors.New("registry unreachable")
		}), nil},
		{"no checker", nil, nil},
	} {
		outs, err := svc.Crawl(ctx, warrant.CrawlRequest{Headers: headers, Lister: lister, Packages: tc.checker})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(outs) != 2 || outs[0].Server != "plain" || outs[0].Failed != "" || outs[1].Server != "s" || outs[1].Failed != warrant.StagePackage || outs[1].Listed() {
			t.Fatalf("%s: outcomes %+v; want plain recorded and s refused at the package step", tc.name, outs)
		}
		if tc.want != nil && !errors.Is(outs[1].Err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, outs[1].Err, tc.want)
		}
		if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 0 {
			t.Errorf("%s: the refused server's crawl was recorded (LastCrawl %d)", tc.name, srv.LastCrawl)
		}
	}
	// A checker that says yes: the pinned server is listed and recorded.
	outs, err := svc.Crawl(ctx, warrant.CrawlRequest{Headers: headers, Lister: lister,
		Packages: checkerFunc(func(context.Context, warrant.Server, warrant.PackagePin) error { return nil })})
	if err != nil || len(outs) != 2 || outs[1].Failed != "" {
		t.Fatalf("with the package as pinned: %+v, %v", outs, err)
	}
}

type checkerFunc func(context.Context, warrant.Server, warrant.PackagePin) error

func (f checkerFunc) CheckPackage(ctx context.Context, s warrant.Server, p warrant.PackagePin) error {
	return f(ctx, s, p)
}

// listAll lists every target with the same tools.
type listAll struct{ tools []string }

func (l listAll) List(_ context.Context, targets []warrant.CrawlTarget) []warrant.Listed {
	out := make([]warrant.Listed, 0, len(targets))
	for _, tg := range targets {
		ls := listing(tg.Server.Name, l.tools...)
		out = append(out, warrant.Listed{Server: tg.Server.Name, Listing: &ls})
	}
	return out
}
