package enforce_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestChangeFeedOnTheCatalog: the feed over a real catalog written by warrant.Service
// names exactly the server each kind of write touched, and none for decision records:
// the entries the service writes carry what the feed attributes them by.
func TestChangeFeedOnTheCatalog(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cat, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(dir, "toolwarrant.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	logKey, err := keysigner.Create(filepath.Join(dir, "log.key"), keysigner.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := warrant.New(warrant.Config{Catalog: cat, Auditor: &audit.Chainer{Signer: logKey}, Identity: "crawler@test"})
	if err != nil {
		t.Fatal(err)
	}
	feed := enforce.CatalogFeedSource{CatalogSource: enforce.CatalogSource{Catalog: cat}}
	cursor := ""
	step := func(name string, wantAll bool, want ...string) {
		t.Helper()
		ch, err := feed.Changes(ctx, cursor)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cursor = ch.Cursor
		got := map[string]bool{}
		for s := range ch.Servers {
			got[s] = true
		}
		ok := ch.All == wantAll && len(got) == len(want)
		for _, s := range want {
			ok = ok && got[s]
		}
		if !ok {
			t.Errorf("%s: All=%v servers=%v; want All=%v servers=%v", name, ch.All, got, wantAll, want)
		}
	}
	step("first call", true)
	step("nothing written", false)
	for _, s := range []string{"a", "b"} {
		if _, err := svc.AddServer(ctx, warrant.Server{Name: s, URL: "https://" + s + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	step("two servers added", false, "a", "b")
	listing := func(server, desc string) {
		t.Helper()
		raw := []byte(`{"name":"t","description":"` + desc + `","inputSchema":{"type":"object"}}`)
		if _, err := svc.Ingest(ctx, warrant.Listing{Server: server, Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}); err != nil {
			t.Fatal(err)
		}
	}
	listing("a", "one")
	step("a crawled with a new tool", false, "a")
	listing("a", "one")
	step("a crawled, unchanged", false, "a")
	now := time.Now().UTC()
	if err := svc.RecordDecisions(ctx, warrant.DecisionWindow{Point: "proxy", Instance: "i-1", From: now.Add(-time.Minute), To: now,
		Records: []warrant.DecisionCount{{Server: "b", Tool: "t", Method: "tools/call", Outcome: "denied", Cause: "unapproved", Count: 3}}}); err != nil {
		t.Fatal(err)
	}
	step("decision records only", false)
	listing("b", "two")
	step("b crawled", false, "b")
	step("nothing since", false)
}
