package catalogtest

import (
	_ "embed"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Catalog1Golden is what the format-1 drivers (before the domain's Index) read from a
// catalog after Scenario: Servers, Tools, ServerTools, Proposals, Approvals and
// VersionKeys, as Golden encodes them. The drivers' upgrade tests compare a catalog
// written by that code (testdata of sqlitestore and warrant) against it, and Run compares
// a new catalog written by this code.
//
//go:embed testdata/catalog1.golden.json
var Catalog1Golden []byte

// Scenario writes, through the service with a fixed clock, the history of the catalogs
// that the format-1 drivers wrote as upgrade fixtures: two servers; crawls that add,
// change, refuse and remove tools; gateway records that see drift, a new tool, a refusal
// and a removed tool listed again; approvals, a rejection of an approved and of an
// unapproved digest, and a rollback.
func Scenario(t *testing.T, c warrant.Catalog) {
	t.Helper()
	ctx := t.Context()
	now := t0
	svc, err := warrant.New(warrant.Config{Catalog: c, Identity: "crawler", Now: func() time.Time { now = now.Add(time.Second); return now }})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"s", "t"} {
		_, err := svc.AddServer(ctx, warrant.Server{Name: n, URL: "https://" + n + ".example.com/mcp"})
		must(err)
	}
	ingest := func(srv string, tools ...string) {
		t.Helper()
		_, err := svc.Ingest(ctx, listing(srv, tools...))
		must(err)
	}
	d := func(tool, desc string) warrant.Digest { _, x := Def(tool, desc); return x }
	decide := func(srv, tool string, dg warrant.Digest, kind warrant.DecisionKind, expect warrant.Digest, actor string) {
		t.Helper()
		must(svc.Decide(ctx, warrant.Decision{Server: srv, Tool: tool, Digest: dg, Kind: kind, Expect: expect, Actor: actor}))
	}
	ingest("s", "a", "A", "b", "B", "gone", "G", "bad", "")
	decide("s", "a", d("a", "A"), warrant.DecisionApproved, "", "bob")
	decide("s", "b", d("b", "B"), warrant.DecisionApproved, "", "bob")
	ingest("s", "a", "A2", "b", "B", "c", "C")
	must(svc.ObserveGateway(ctx, "s", time.Time{}, []warrant.Observation{{Tool: "a", Digest: d("a", "A3")}, {Tool: "new", Digest: d("new", "N")}, {Tool: "odd", Refused: "invalid UTF-8"}}))
	decide("s", "c", d("c", "C"), warrant.DecisionRejected, "", "carol")
	decide("s", "a", d("a", "A2"), warrant.DecisionApproved, d("a", "A"), "dave")
	decide("s", "a", d("a", "A"), warrant.DecisionRolledBack, d("a", "A2"), "erin")
	decide("s", "b", d("b", "B"), warrant.DecisionRejected, d("b", "B"), "frank")
	ingest("s", "a", "A", "b", "B2", "c", "C", "new", "N")
	must(svc.ObserveGateway(ctx, "s", time.Time{}, []warrant.Observation{{Tool: "gone", Digest: d("gone", "G")}}))
	ingest("t", "x", "X")
	must(svc.ObserveGateway(ctx, "t", time.Time{}, []warrant.Observation{{Tool: "x", Digest: d("x", "X")}, {Tool: "y", Digest: d("y", "Y")}}))
	decide("t", "x", d("x", "X"), warrant.DecisionRejected, "", "bob")
}

// Golden encodes what the catalog's reads return (after Scenario: Catalog1Golden).
func Golden(t *testing.T, c warrant.Catalog) []byte {
	t.Helper()
	ctx := t.Context()
	servers, err := c.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	props, err := c.Proposals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	aps, err := c.Approvals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]warrant.VersionKey{}
	st := map[string][]warrant.ToolRecord{}
	for _, s := range servers {
		if keys[s.Name], err = c.VersionKeys(ctx, s.Name); err != nil {
			t.Fatal(err)
		}
		if st[s.Name], err = c.ServerTools(ctx, s.Name); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.MarshalIndent(map[string]any{"servers": servers, "tools": tools, "serverTools": st, "proposals": props, "approvals": aps, "versionKeys": keys}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
