package catalogtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Run runs the conformance suite. newCatalog must return a new, empty catalog for each
// call; the suite does not close it (register cleanup in newCatalog).
func Run(t *testing.T, newCatalog func(t *testing.T) warrant.Catalog) {
	t.Run("Servers", func(t *testing.T) { testServers(t, newCatalog(t)) })
	t.Run("RecordCrawlCheckAndSet", func(t *testing.T) { testRecordCrawlCAS(t, newCatalog(t)) })
	t.Run("RecordCrawlRace", func(t *testing.T) { testRecordCrawlRace(t, newCatalog(t)) })
	t.Run("VersionsPutIfAbsent", func(t *testing.T) { testVersionsPutIfAbsent(t, newCatalog(t)) })
	t.Run("InvalidRecords", func(t *testing.T) { testInvalid(t, newCatalog(t)) })
	t.Run("ToolRecords", func(t *testing.T) { testToolRecords(t, newCatalog(t)) })
	t.Run("ServerTools", func(t *testing.T) { testServerTools(t, newCatalog(t)) })
	t.Run("GatewayObservations", func(t *testing.T) { testGatewayObservations(t, newCatalog(t)) })
	t.Run("GatewayRacesCrawl", func(t *testing.T) { testGatewayRace(t, newCatalog(t)) })
	t.Run("ServiceObserveGateway", func(t *testing.T) { testServiceObserveGateway(t, newCatalog(t)) })
	t.Run("ServiceCheckDecision", func(t *testing.T) { testServiceCheckDecision(t, newCatalog(t)) })
	t.Run("ServiceDecideAs", func(t *testing.T) { testServiceDecideAs(t, newCatalog(t)) })
	t.Run("ServiceApproveAll", func(t *testing.T) { testServiceApproveAll(t, newCatalog(t)) })
	t.Run("ServiceReviewPolicies", func(t *testing.T) { testServiceReviewPolicies(t, newCatalog(t)) })
	t.Run("DecideCheckAndSet", func(t *testing.T) { testDecide(t, newCatalog(t)) })
	t.Run("AuditHeadCheckAndSet", func(t *testing.T) { testAudit(t, newCatalog(t)) })
	t.Run("AuditFailureWritesNothing", func(t *testing.T) { testAuditAtomic(t, newCatalog(t)) })
	t.Run("AuditRace", func(t *testing.T) { testAuditRace(t, newCatalog(t)) })
	t.Run("LargeDefinitions", func(t *testing.T) { testLarge(t, newCatalog(t)) })
	t.Run("InvalidRecordsRefusedWhole", func(t *testing.T) { testInvalidWhole(t, newCatalog(t)) })
	t.Run("RejectLeavesApprover", func(t *testing.T) { testRejectLeavesApprover(t, newCatalog(t)) })
	t.Run("Catalog1Reads", func(t *testing.T) { testCatalog1(t, newCatalog(t)) })
	t.Run("PackagePins", func(t *testing.T) { testPackagePins(t, newCatalog(t)) })
	t.Run("CrawlChecksPackage", func(t *testing.T) { testCrawlChecksPackage(t, newCatalog(t)) })
}

// testCatalog1: the history of the upgrade fixtures, written by this driver, reads as the
// format-1 drivers read it (Catalog1Golden).
func testCatalog1(t *testing.T, c warrant.Catalog) {
	Scenario(t, c)
	if got := Golden(t, c); string(got) != string(Catalog1Golden) {
		t.Errorf("reads after Scenario differ from Catalog1Golden:\n%s", got)
	}
}

// testInvalidWhole: every refusal of warrant.ValidateCrawl is the driver's — each record
// is refused with ErrInvalid and writes nothing.
func testInvalidWhole(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	long := strings.Repeat("x", warrant.MaxToolNameBytes+1)
	cases := map[string]func(r *warrant.CrawlRecord){
		"no server":                      func(r *warrant.CrawlRecord) { r.Crawl.Server = "" },
		"invalid server name":            func(r *warrant.CrawlRecord) { r.Crawl.Server = "s/x" },
		"number 0":                       func(r *warrant.CrawlRecord) { r.Crawl.Seq = 0 },
		"unknown source":                 func(r *warrant.CrawlRecord) { r.Crawl.Source = "rumour" },
		"observation without a tool":     func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Tool = "" },
		"observation with a long name":   func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Tool = long },
		"observation with invalid UTF-8": func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Tool = "a\xff" },
		"observation with neither":       func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Digest = "" },
		"observation with both":          func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Refused = "x" },
		"malformed digest":               func(r *warrant.CrawlRecord) { r.Crawl.Observations[0].Digest = "sha256:ab" },
		"unsorted observations": func(r *warrant.CrawlRecord) {
			r.Crawl.Observations[0], r.Crawl.Observations[1] = r.Crawl.Observations[1], r.Crawl.Observations[0]
		},
		"duplicate observations":     func(r *warrant.CrawlRecord) { r.Crawl.Observations[1].Tool = "a" },
		"version of another server":  func(r *warrant.CrawlRecord) { r.Versions[0].Server = "other" },
		"version without a tool":     func(r *warrant.CrawlRecord) { r.Versions[0].Tool = "" },
		"version with a long name":   func(r *warrant.CrawlRecord) { r.Versions[0].Tool = long },
		"version not its bytes":      func(r *warrant.CrawlRecord) { r.Versions[0].Canonical = []byte(`{}`) },
		"proposal of another server": func(r *warrant.CrawlRecord) { r.Proposals[0].Server = "other" },
		"proposal without a tool":    func(r *warrant.CrawlRecord) { r.Proposals[0].Tool = "" },
		"proposal with a bad digest": func(r *warrant.CrawlRecord) { r.Proposals[0].Digest = "sha256:ab" },
		"proposal naming no version": func(r *warrant.CrawlRecord) { r.Proposals[0].Digest = warrant.DigestOf([]byte(`{}`)) },
	}
	for name, breakIt := range cases {
		r := crawl("s", 1, nil, "a", "A", "b", "B")
		breakIt(&r)
		wantErr(t, name, c.RecordCrawl(ctx, r, warrant.AuditAppend{}), warrant.ErrInvalid)
	}
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 0 {
		t.Errorf("invalid records advanced LastCrawl to %d", srv.LastCrawl)
	}
	if tools, _ := c.Tools(ctx); len(tools) != 0 {
		t.Errorf("invalid records left tools: %+v", tools)
	}
	mustRecord(t, c, crawl("s", 1, nil, "a", "A", "b", "B"))
}

// testRejectLeavesApprover: rejecting a digest that is not the approved one leaves the
// approval and who made it as they are (warrant.ApprovalState.Decide).
func testRejectLeavesApprover(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	d1, d2 := twoVersions(t, c)
	mustDecide(t, c, warrant.Decision{Server: "s", Tool: "t", Digest: d1, Kind: warrant.DecisionApproved, Actor: "bob", At: t0})
	mustDecide(t, c, warrant.Decision{Server: "s", Tool: "t", Digest: d2, Kind: warrant.DecisionRejected, Actor: "carol", At: t0.Add(time.Hour), Expect: d1})
	aps, err := c.Approvals(ctx)
	if err != nil || len(aps) != 1 || aps[0].Digest != d1 || aps[0].By != "bob" || !aps[0].At.Equal(t0) {
		t.Errorf("approvals after rejecting another digest = %+v, %v; want %s by bob at %s", aps, err, d1.Short(), t0)
	}
	if recs, _ := c.Tools(ctx); len(recs) != 1 || recs[0].CurrentDecision != warrant.DecisionRejected || recs[0].State() != warrant.StateDrift {
		t.Errorf("tool = %+v", recs)
	}
}

var t0 = time.Date(2026, 10, 12, 9, 30, 0, 123456789, time.UTC)

// Def returns a tool definition (canonical JSON) and its digest.
func Def(tool, description string) ([]byte, warrant.Digest) {
	b := []byte(fmt.Sprintf(`{"description":%q,"inputSchema":{"type":"object"},"name":%q}`, description, tool))
	return b, warrant.DigestOf(b)
}

// LargeDef returns a tool definition (canonical JSON) of exactly size bytes (at least 64)
// and its digest: the description is filled with text derived from the tool's name, so
// two tools never share their bytes.
func LargeDef(tool string, size int) ([]byte, warrant.Digest) {
	head, tail := `{"description":"`, `","inputSchema":{"type":"object"},"name":`+fmt.Sprintf("%q", tool)+`}`
	fill := size - len(head) - len(tail)
	seed := sha256.Sum256([]byte(tool))
	pattern := hex.EncodeToString(seed[:]) + " "
	desc := strings.Repeat(pattern, fill/len(pattern)+1)[:max(fill, 0)]
	b := []byte(head + desc + tail)
	return b, warrant.DigestOf(b)
}

// LargeCrawl builds crawl seq of srv listing the named tools with definitions of the given
// sizes (name → size); tools in known are observed without a new version.
func LargeCrawl(srv string, seq int64, known map[string]bool, sizes map[string]int) warrant.CrawlRecord {
	r := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: srv, Seq: seq, Source: warrant.SourceCrawl,
		StartedAt: t0.Add(time.Duration(seq) * time.Minute), FinishedAt: t0.Add(time.Duration(seq)*time.Minute + time.Second), By: "crawler"}}
	names := make([]string, 0, len(sizes))
	for n := range sizes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		b, d := LargeDef(name, sizes[name])
		r.Crawl.Observations = append(r.Crawl.Observations, warrant.Observation{Tool: name, Digest: d})
		if known[name] {
			continue
		}
		r.Versions = append(r.Versions, warrant.Version{Server: srv, Tool: name, Digest: d, Canonical: b, FirstSeenAt: r.Crawl.FinishedAt, FirstSeenBy: "crawler", FirstCrawl: seq})
		r.Proposals = append(r.Proposals, warrant.Proposal{Server: srv, Tool: name, Digest: d, OpenedAt: r.Crawl.FinishedAt, Crawl: seq})
	}
	return r
}

func server(name string) warrant.Server {
	return warrant.Server{Name: name, URL: "https://" + name + ".example.com/mcp", AddedAt: t0, AddedBy: "alice",
		Headers: []warrant.HeaderRef{{Header: "Authorization", Env: "TOKEN_" + name}}}
}

func mustAdd(t *testing.T, c warrant.Catalog, s warrant.Server) {
	t.Helper()
	if err := c.AddServer(t.Context(), s, warrant.AuditAppend{}); err != nil {
		t.Fatalf("AddServer(%s): %v", s.Name, err)
	}
}

// crawl builds crawl seq of srv listing tools (name → description; "" refuses the tool).
func crawl(srv string, seq int64, known map[warrant.VersionKey]bool, tools ...string) warrant.CrawlRecord {
	r := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: srv, Seq: seq, Source: warrant.SourceCrawl,
		StartedAt: t0.Add(time.Duration(seq) * time.Minute), FinishedAt: t0.Add(time.Duration(seq)*time.Minute + time.Second), By: "crawler"}}
	for i := 0; i+1 < len(tools); i += 2 {
		name, desc := tools[i], tools[i+1]
		if desc == "" {
			r.Crawl.Observations = append(r.Crawl.Observations, warrant.Observation{Tool: name, Refused: "invalid UTF-8"})
			continue
		}
		b, d := Def(name, desc)
		r.Crawl.Observations = append(r.Crawl.Observations, warrant.Observation{Tool: name, Digest: d})
		k := warrant.VersionKey{Server: srv, Tool: name, Digest: d}
		if known == nil || !known[k] {
			r.Versions = append(r.Versions, warrant.Version{Server: srv, Tool: name, Digest: d, Canonical: b, FirstSeenAt: r.Crawl.FinishedAt, FirstSeenBy: "crawler", FirstCrawl: seq})
			r.Proposals = append(r.Proposals, warrant.Proposal{Server: srv, Tool: name, Digest: d, OpenedAt: r.Crawl.FinishedAt, Crawl: seq})
			if known != nil {
				known[k] = true
			}
		}
	}
	return r
}

func mustRecord(t *testing.T, c warrant.Catalog, r warrant.CrawlRecord) {
	t.Helper()
	if err := c.RecordCrawl(t.Context(), r, warrant.AuditAppend{}); err != nil {
		t.Fatalf("RecordCrawl(%s #%d): %v", r.Crawl.Server, r.Crawl.Seq, err)
	}
}

// twoVersions adds server s and records two crawls in which its tool t is described "one",
// then "two"; it returns the two versions' digests.
func twoVersions(t *testing.T, c warrant.Catalog) (d1, d2 warrant.Digest) {
	t.Helper()
	mustAdd(t, c, server("s"))
	known := map[warrant.VersionKey]bool{}
	mustRecord(t, c, crawl("s", 1, known, "t", "one"))
	mustRecord(t, c, crawl("s", 2, known, "t", "two"))
	_, d1 = Def("t", "one")
	_, d2 = Def("t", "two")
	return d1, d2
}

// threeTools adds server s and records its crawl 1 listing tools a, b and gone (described
// "A", "B", "G"); it returns the versions known and the three digests.
func threeTools(t *testing.T, c warrant.Catalog) (known map[warrant.VersionKey]bool, dA, dB, dG warrant.Digest) {
	t.Helper()
	mustAdd(t, c, server("s"))
	known = map[warrant.VersionKey]bool{}
	mustRecord(t, c, crawl("s", 1, known, "a", "A", "b", "B", "gone", "G"))
	_, dA = Def("a", "A")
	_, dB = Def("b", "B")
	_, dG = Def("gone", "G")
	return known, dA, dB, dG
}

// mustDecide records d, with no audit records.
func mustDecide(t *testing.T, c warrant.Catalog, d warrant.Decision) {
	t.Helper()
	if err := c.Decide(t.Context(), d, warrant.AuditAppend{}); err != nil {
		t.Fatalf("Decide(%s/%s %s %s): %v", d.Server, d.Tool, d.Kind, d.Digest.Short(), err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: err = %v, want %v", what, err, want)
	}
}

func testServers(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	b, a := server("beta"), server("alpha")
	a.AllowPrivate = true
	mustAdd(t, c, b)
	mustAdd(t, c, a)
	got, err := c.Server(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != a.URL || !got.AllowPrivate || len(got.Headers) != 1 || got.Headers[0] != a.Headers[0] ||
		!got.AddedAt.Equal(t0) || got.AddedBy != "alice" || got.LastCrawl != 0 {
		t.Errorf("Server(alpha) = %+v", got)
	}
	all, err := c.Servers(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "alpha" || all[1].Name != "beta" {
		t.Errorf("Servers = %+v, %v; want alpha, beta", all, err)
	}
	// Identical: a no-op. Different: a conflict, and the stored one is unchanged.
	if err := c.AddServer(ctx, a, warrant.AuditAppend{}); err != nil {
		t.Errorf("re-adding an identical server: %v", err)
	}
	a2 := a
	a2.URL = "https://elsewhere.example.com/mcp"
	wantErr(t, "re-adding with another URL", c.AddServer(ctx, a2, warrant.AuditAppend{}), warrant.ErrConflict)
	if got, _ := c.Server(ctx, "alpha"); got.URL != a.URL {
		t.Errorf("conflicting AddServer changed the URL to %s", got.URL)
	}
	_, err = c.Server(ctx, "nope")
	wantErr(t, "unknown server", err, warrant.ErrNotFound)
	wantErr(t, "invalid name", c.AddServer(ctx, warrant.Server{Name: "bad name", URL: "https://x/"}, warrant.AuditAppend{}), warrant.ErrInvalid)
}

func testRecordCrawlCAS(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	known := map[warrant.VersionKey]bool{}
	mustRecord(t, c, crawl("s", 1, known, "a", "A", "b", "B"))
	wantErr(t, "crawl 1 again", c.RecordCrawl(ctx, crawl("s", 1, nil, "a", "A"), warrant.AuditAppend{}), warrant.ErrConflict)
	wantErr(t, "crawl 3 before 2", c.RecordCrawl(ctx, crawl("s", 3, nil, "a", "A"), warrant.AuditAppend{}), warrant.ErrConflict)
	wantErr(t, "unknown server", c.RecordCrawl(ctx, crawl("nope", 1, nil, "a", "A"), warrant.AuditAppend{}), warrant.ErrNotFound)
	mustRecord(t, c, crawl("s", 2, known, "a", "A2", "c", ""))
	srv, err := c.Server(ctx, "s")
	if err != nil || srv.LastCrawl != 2 {
		t.Fatalf("LastCrawl = %d, %v; want 2", srv.LastCrawl, err)
	}
	_, err = c.Crawl(ctx, "s", 3)
	wantErr(t, "crawl 3 after a refused write", err, warrant.ErrNotFound)
	cr, err := c.Crawl(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	_, dA2 := Def("a", "A2")
	want := []warrant.Observation{{Tool: "a", Digest: dA2}, {Tool: "c", Refused: "invalid UTF-8"}}
	if len(cr.Observations) != 2 || cr.Observations[0] != want[0] || cr.Observations[1] != want[1] || cr.By != "crawler" ||
		cr.Source != warrant.SourceCrawl || !cr.StartedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("Crawl(s, 2) = %+v", cr)
	}
	vs, err := c.Versions(ctx, "s", "a")
	if err != nil || len(vs) != 2 || vs[1].Digest != dA2 || vs[0].FirstCrawl != 1 {
		t.Errorf("Versions(s, a) = %+v, %v", vs, err)
	}
	keys, err := c.VersionKeys(ctx, "s")
	if err != nil || len(keys) != 3 || keys[0].Tool != "a" || keys[2].Tool != "b" {
		t.Errorf("VersionKeys = %+v, %v", keys, err)
	}
	if vs, err := c.Versions(ctx, "s", "zzz"); err != nil || len(vs) != 0 {
		t.Errorf("Versions of an unknown tool = %v, %v; want empty", vs, err)
	}
}

func testRecordCrawlRace(t *testing.T, c warrant.Catalog) {
	mustAdd(t, c, server("s"))
	const n = 8
	won := race(t, n, func(i int) error {
		return c.RecordCrawl(t.Context(), crawl("s", 1, nil, "t", fmt.Sprintf("racer %d", i)), warrant.AuditAppend{})
	})
	if len(won) != 1 {
		t.Errorf("%d of %d racing crawl-1 writes won, want exactly 1", len(won), n)
	}
	if vs, _ := c.Versions(t.Context(), "s", "t"); len(vs) != 1 {
		t.Errorf("%d versions after the race, want the winner's only", len(vs))
	}
}

func testVersionsPutIfAbsent(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	mustRecord(t, c, crawl("s", 1, nil, "a", "A"))
	// The same version again (a driver retry, or a racing crawl): accepted, unchanged.
	mustRecord(t, c, crawl("s", 2, nil, "a", "A"))
	// Other bytes under a stored digest: a conflict, and the whole crawl is not written.
	r := crawl("s", 3, nil, "a", "A")
	r.Versions[0].Canonical = append([]byte(nil), r.Versions[0].Canonical...)
	r.Versions[0].Canonical[len(r.Versions[0].Canonical)-1] = ' '
	r.Versions[0].Digest = warrant.DigestOf(r.Versions[0].Canonical)
	r.Crawl.Observations[0].Digest = r.Versions[0].Digest
	r.Proposals[0].Digest = r.Versions[0].Digest
	// Forge a collision: same digest as stored, other bytes. Only a driver bug or SHA-256
	// collision could produce it; the port must refuse rather than overwrite.
	_, stored := Def("a", "A")
	forged := r
	forged.Versions = []warrant.Version{r.Versions[0]}
	forged.Versions[0].Digest = stored
	err := c.RecordCrawl(ctx, forged, warrant.AuditAppend{})
	if !errors.Is(err, warrant.ErrInvalid) && !errors.Is(err, warrant.ErrConflict) {
		t.Errorf("version whose digest does not match its bytes: %v", err)
	}
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 2 {
		t.Errorf("a refused crawl advanced LastCrawl to %d", srv.LastCrawl)
	}
	v, err := c.Version(ctx, "s", "a", stored)
	if b, _ := Def("a", "A"); err != nil || string(v.Canonical) != string(b) || v.FirstCrawl != 1 {
		t.Errorf("stored version changed: %+v %v", v, err)
	}
	_, err = c.Version(ctx, "s", "a", warrant.DigestOf([]byte("{}")))
	wantErr(t, "unknown version", err, warrant.ErrNotFound)
}

func testInvalid(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	unsorted := crawl("s", 1, nil, "b", "B", "a", "A")
	wantErr(t, "unsorted observations", c.RecordCrawl(ctx, unsorted, warrant.AuditAppend{}), warrant.ErrInvalid)
	dup := crawl("s", 1, nil, "a", "A", "a", "A2")
	wantErr(t, "duplicate observations", c.RecordCrawl(ctx, dup, warrant.AuditAppend{}), warrant.ErrInvalid)
	foreign := crawl("s", 1, nil, "a", "A")
	foreign.Versions[0].Server = "other"
	wantErr(t, "version of another server", c.RecordCrawl(ctx, foreign, warrant.AuditAppend{}), warrant.ErrInvalid)
	both := crawl("s", 1, nil, "a", "A")
	both.Crawl.Observations[0].Refused = "x"
	wantErr(t, "observation with digest and refusal", c.RecordCrawl(ctx, both, warrant.AuditAppend{}), warrant.ErrInvalid)
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 0 {
		t.Errorf("invalid records advanced LastCrawl to %d", srv.LastCrawl)
	}
}

func testToolRecords(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	known, dA, dB, _ := threeTools(t, c)
	approve := func(tool string, d, expect warrant.Digest) {
		t.Helper()
		mustDecide(t, c, warrant.Decision{Server: "s", Tool: tool, Digest: d, Kind: warrant.DecisionApproved, Actor: "bob", At: t0, Expect: expect})
	}
	approve("a", dA, "")
	approve("b", dB, "")
	mustRecord(t, c, crawl("s", 2, known, "a", "A2", "b", "B", "c", ""))
	_, dA2 := Def("a", "A2")

	recs, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]warrant.ToolRecord{}
	var order []string
	for _, r := range recs {
		got[r.Tool] = r
		order = append(order, r.Tool)
	}
	if fmt.Sprint(order) != "[a b gone]" {
		t.Errorf("tools = %v, want [a b gone] (c was refused and has no version)", order)
	}
	a := got["a"]
	if a.Current != dA2 || a.Approved != dA || a.Previous != dA || a.Versions != 2 || a.State() != warrant.StateDrift || !a.Pending() || a.Baseline() != dA {
		t.Errorf("a = %+v (state %s)", a, a.State())
	}
	if b := got["b"]; b.Current != dB || b.State() != warrant.StateApproved || b.Pending() || b.Previous != "" {
		t.Errorf("b = %+v (state %s)", b, b.State())
	}
	if g := got["gone"]; g.LastCrawl != 1 || g.ServerLastCrawl != 2 || g.State() != warrant.StateRemoved {
		t.Errorf("gone = %+v (state %s)", g, g.State())
	}
	props, err := c.Proposals(ctx)
	if err != nil || len(props) != 2 || props[0].Tool != "a" || props[0].Digest != dA2 || props[1].Tool != "gone" {
		t.Errorf("pending proposals = %+v, %v; want a@A2 and gone", props, err)
	}
}

// testServerTools: ServerTools is Tools restricted to one server, for a server with
// crawled, approved, removed and gateway-observed tools among others; empty for a server
// without tools; ErrNotFound for an unknown one.
func testServerTools(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	for _, name := range []string{"a", "ab", "b", "empty"} {
		mustAdd(t, c, server(name))
	}
	known := map[warrant.VersionKey]bool{}
	mustRecord(t, c, crawl("a", 1, known, "x", "X", "y", "Y", "z", "Z"))
	mustRecord(t, c, crawl("ab", 1, known, "x", "X"))
	mustRecord(t, c, crawl("b", 1, known, "w", "W", "x", "X2"))
	_, dX := Def("x", "X")
	for _, srv := range []string{"a", "ab"} {
		mustDecide(t, c, warrant.Decision{Server: srv, Tool: "x", Digest: dX, Kind: warrant.DecisionApproved, Actor: "bob", At: t0})
	}
	mustRecord(t, c, crawl("a", 2, known, "x", "X1", "y", "Y"))
	mustRecord(t, c, gateway("a", 3, "g", "G", "y", "Y2"))
	all, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []string{"a", "ab", "b", "empty"} {
		want := []warrant.ToolRecord{}
		for _, r := range all {
			if r.Server == srv {
				want = append(want, r)
			}
		}
		got, err := c.ServerTools(ctx, srv)
		if err != nil {
			t.Errorf("ServerTools(%s): %v", srv, err)
			continue
		}
		if got == nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("ServerTools(%s) =\n%+v\nwant Tools' records of the server\n%+v", srv, got, want)
		}
	}
	if got, _ := c.ServerTools(ctx, "a"); len(got) != 4 {
		t.Errorf("ServerTools(a) = %+v; want g, x, y, z", got)
	}
	_, err = c.ServerTools(ctx, "nope")
	wantErr(t, "ServerTools of an unknown server", err, warrant.ErrNotFound)
	_, err = c.ServerTools(ctx, "bad name")
	wantErr(t, "ServerTools of an invalid name", err, warrant.ErrNotFound)
}

func testDecide(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	d1, d2 := twoVersions(t, c)
	dec := func(kind warrant.DecisionKind, d, expect warrant.Digest) error {
		return c.Decide(ctx, warrant.Decision{Server: "s", Tool: "t", Digest: d, Kind: kind, Actor: "bob", At: t0, Expect: expect, Note: "n"}, warrant.AuditAppend{})
	}
	mustDec := func(kind warrant.DecisionKind, d, expect warrant.Digest) {
		t.Helper()
		if err := dec(kind, d, expect); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "approve an unknown version", dec(warrant.DecisionApproved, warrant.DigestOf([]byte("{}")), ""), warrant.ErrNotFound)
	wantErr(t, "approve with a stale expectation", dec(warrant.DecisionApproved, d1, d2), warrant.ErrConflict)
	mustDec(warrant.DecisionApproved, d1, "")
	wantErr(t, "approve again expecting none", dec(warrant.DecisionApproved, d2, ""), warrant.ErrConflict)
	mustDec(warrant.DecisionApproved, d2, d1)
	mustDec(warrant.DecisionRolledBack, d1, d2)
	aps, err := c.Approvals(ctx)
	if err != nil || len(aps) != 1 || aps[0].Digest != d1 || aps[0].By != "bob" {
		t.Errorf("approvals after rollback = %+v, %v", aps, err)
	}
	// Rejecting a digest that is not approved leaves the approval alone; rejecting the
	// approved one clears it.
	mustDec(warrant.DecisionRejected, d2, d1)
	if aps, _ := c.Approvals(ctx); len(aps) != 1 || aps[0].Digest != d1 {
		t.Errorf("rejecting another digest changed the approval: %+v", aps)
	}
	mustDec(warrant.DecisionRejected, d1, d1)
	if aps, _ := c.Approvals(ctx); len(aps) != 0 {
		t.Errorf("approvals after rejecting the approved digest = %+v, want none", aps)
	}
	ds, err := c.Decisions(ctx, "s", "t")
	if err != nil || len(ds) != 5 || ds[0].Kind != warrant.DecisionApproved || ds[4].Kind != warrant.DecisionRejected || ds[4].Expect != d1 || ds[0].Note != "n" {
		t.Errorf("decisions = %+v, %v", ds, err)
	}
	recs, _ := c.Tools(ctx)
	if len(recs) != 1 || recs[0].State() != warrant.StateRejected || recs[0].Current != d2 {
		t.Errorf("tool after decisions = %+v", recs)
	}
	if props, _ := c.Proposals(ctx); len(props) != 0 {
		t.Errorf("pending proposals after deciding both = %+v", props)
	}
}

// Records chains n test records from head (the hash is a stand-in, not the audit
// package's scheme: the port only checks linkage).
func Records(head warrant.AuditHead, n int, typ string) []warrant.AuditRecord {
	out := make([]warrant.AuditRecord, n)
	prev := head
	for i := range out {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%s", prev.Hash, prev.Seq+1, typ)))
		h := hex.EncodeToString(sum[:])
		out[i] = warrant.AuditRecord{Seq: prev.Seq + 1, Type: typ, Actor: "alice", At: t0, PrevHash: prev.Hash, Hash: h,
			Body: []byte(`{"n":` + fmt.Sprint(prev.Seq+1) + `}`), KeyID: "key-1", Signature: []byte{1, 2, 3}}
		prev = warrant.AuditHead{Seq: prev.Seq + 1, Hash: h}
	}
	return out
}

func testAudit(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	head, err := c.AuditHead(ctx)
	if err != nil || head != warrant.Genesis() {
		t.Fatalf("empty head = %+v, %v; want genesis", head, err)
	}
	srv := server("s")
	recs := Records(head, 1, warrant.EventServerAdded)
	if err := c.AddServer(ctx, srv, warrant.AuditAppend{Prev: head, Records: recs}); err != nil {
		t.Fatal(err)
	}
	head2, _ := c.AuditHead(ctx)
	if head2.Seq != 1 || head2.Hash != recs[0].Hash {
		t.Fatalf("head after one record = %+v", head2)
	}
	// A crawl chained from the stale head is refused, and writes nothing.
	stale := warrant.AuditAppend{Prev: head, Records: Records(head, 2, warrant.EventCrawlObserved)}
	wantErr(t, "crawl on a stale head", c.RecordCrawl(ctx, crawl("s", 1, nil, "a", "A"), stale), warrant.ErrConflict)
	if s, _ := c.Server(ctx, "s"); s.LastCrawl != 0 {
		t.Error("a crawl refused for its audit head was written")
	}
	// Records that do not link are invalid.
	bad := Records(head2, 2, "x")
	bad[1].PrevHash = "beef"
	wantErr(t, "records that do not link", c.AppendAudit(ctx, warrant.AuditAppend{Prev: head2, Records: bad}), warrant.ErrInvalid)
	wantErr(t, "no records", c.AppendAudit(ctx, warrant.AuditAppend{Prev: head2}), warrant.ErrInvalid)
	good := warrant.AuditAppend{Prev: head2, Records: Records(head2, 2, warrant.EventCrawlObserved)}
	if err := c.RecordCrawl(ctx, crawl("s", 1, nil, "a", "A"), good); err != nil {
		t.Fatal(err)
	}
	all, err := c.AuditRecords(ctx, 0, 100)
	if err != nil || len(all) != 3 || all[2].Seq != 3 || all[2].PrevHash != all[1].Hash || string(all[0].Body) != `{"n":1}` ||
		all[0].KeyID != "key-1" || string(all[0].Signature) != "\x01\x02\x03" || !all[0].At.Equal(t0) {
		t.Errorf("audit records = %+v, %v", all, err)
	}
	if page, _ := c.AuditRecords(ctx, 1, 1); len(page) != 1 || page[0].Seq != 2 {
		t.Errorf("AuditRecords(after 1, limit 1) = %+v", page)
	}
	// An identical AddServer is a no-op and must not append its records either.
	h3, _ := c.AuditHead(ctx)
	if err := c.AddServer(ctx, srv, warrant.AuditAppend{Prev: h3, Records: Records(h3, 1, warrant.EventServerAdded)}); err != nil {
		t.Fatal(err)
	}
	if h4, _ := c.AuditHead(ctx); h4 != h3 {
		t.Errorf("a no-op AddServer advanced the audit head to %+v", h4)
	}
}

// testAuditAtomic injects a failure in the audit part of a write (a record that does not
// link) and checks that the decision it accompanies is not written either.
func testAuditAtomic(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	mustRecord(t, c, crawl("s", 1, nil, "t", "one"))
	_, d := Def("t", "one")
	head, _ := c.AuditHead(ctx)
	recs := Records(head, 1, "approved")
	recs[0].Seq = 7 // the injected failure
	err := c.Decide(ctx, warrant.Decision{Server: "s", Tool: "t", Digest: d, Kind: warrant.DecisionApproved, Actor: "bob", At: t0}, warrant.AuditAppend{Prev: head, Records: recs})
	wantErr(t, "decision with a broken audit record", err, warrant.ErrInvalid)
	if ds, _ := c.Decisions(ctx, "s", "t"); len(ds) != 0 {
		t.Errorf("the decision was written without its audit record: %+v", ds)
	}
	if aps, _ := c.Approvals(ctx); len(aps) != 0 {
		t.Errorf("the approval was written without its audit record: %+v", aps)
	}
	if h, _ := c.AuditHead(ctx); h != head {
		t.Errorf("the audit head moved to %+v", h)
	}
	// And the other way round: a decision that fails its own check leaves no record.
	err = c.Decide(ctx, warrant.Decision{Server: "s", Tool: "t", Digest: d, Kind: warrant.DecisionApproved, Actor: "bob", At: t0, Expect: d},
		warrant.AuditAppend{Prev: head, Records: Records(head, 1, "approved")})
	wantErr(t, "decision on a stale approval", err, warrant.ErrConflict)
	if recs, _ := c.AuditRecords(ctx, 0, 10); len(recs) != 0 {
		t.Errorf("an audit record was written without its decision: %+v", recs)
	}
}

func testAuditRace(t *testing.T, c warrant.Catalog) {
	head, _ := c.AuditHead(t.Context())
	won := race(t, 8, func(i int) error {
		return c.AppendAudit(t.Context(), warrant.AuditAppend{Prev: head, Records: Records(head, 1, fmt.Sprintf("racer-%d", i))})
	})
	recs, _ := c.AuditRecords(t.Context(), 0, 100)
	if len(won) != 1 || len(recs) != 1 {
		t.Errorf("%d racing appends won, %d records stored; want 1 and 1 (a linear chain)", len(won), len(recs))
	}
}

// race runs write(0) … write(n-1) at once and returns the writers that succeeded; every
// other must fail with ErrConflict (or ErrUnavailable, a driver's busy answer).
func race(t *testing.T, n int, write func(i int) error) []int {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(i)
		}()
	}
	wg.Wait()
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !errors.Is(err, warrant.ErrConflict) && !errors.Is(err, warrant.ErrUnavailable):
			t.Errorf("racing writer %d: %v, want ErrConflict", i, err)
		}
	}
	return won
}

// gateway builds record seq of srv with Source gateway, observing tools (name →
// description; "" refuses the tool) without versions or proposals, as the gateway
// processor's observations are recorded.
func gateway(srv string, seq int64, tools ...string) warrant.CrawlRecord {
	r := crawl(srv, seq, nil, tools...)
	r.Crawl.Source, r.Crawl.By, r.Versions, r.Proposals = warrant.SourceGateway, "gateway", nil, nil
	return r
}

func toolRecords(t *testing.T, c warrant.Catalog) map[string]warrant.ToolRecord {
	t.Helper()
	recs, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]warrant.ToolRecord{}
	for _, r := range recs {
		got[r.Tool] = r
	}
	return got
}

// testGatewayObservations: a gateway record is numbered like a crawl but partial. Its
// observations become a tool's current one (drift on an approved tool, a new tool listed
// without a version) until a later record of either source observes the tool; a tool it
// does not observe is not removed; only a crawl removes a tool, and a gateway observation
// after that crawl lists it again.
func testGatewayObservations(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	known, dA, dB, dG := threeTools(t, c)
	for tool, d := range map[string]warrant.Digest{"a": dA, "b": dB} {
		mustDecide(t, c, warrant.Decision{Server: "s", Tool: tool, Digest: d, Kind: warrant.DecisionApproved, Actor: "bob", At: t0})
	}
	// The gateway saw a reworded a, a tool never crawled and one it could not digest.
	mustRecord(t, c, gateway("s", 2, "a", "A2", "new", "N", "odd", ""))
	_, dA2 := Def("a", "A2")
	_, dN := Def("new", "N")
	srv, err := c.Server(ctx, "s")
	if err != nil || srv.LastCrawl != 2 || srv.LastSourceCrawl != 1 {
		t.Fatalf("server after a gateway record = %+v, %v; want LastCrawl 2, LastSourceCrawl 1", srv, err)
	}
	cr, err := c.Crawl(ctx, "s", 2)
	if err != nil || cr.Source != warrant.SourceGateway || len(cr.Observations) != 3 || cr.Observations[0] != (warrant.Observation{Tool: "a", Digest: dA2}) || cr.By != "gateway" {
		t.Errorf("Crawl(s, 2) = %+v, %v", cr, err)
	}
	got := toolRecords(t, c)
	if _, ok := got["odd"]; ok || len(got) != 4 {
		t.Errorf("tools = %v; want a, b, gone, new (odd was refused and has no version)", got)
	}
	if a := got["a"]; a.Current != dA2 || a.CurrentSource != warrant.SourceGateway || a.LastCrawl != 2 || a.ServerLastCrawl != 1 ||
		a.Approved != dA || a.Previous != dA || a.Versions != 1 || a.State() != warrant.StateDrift || !a.Pending() {
		t.Errorf("a after the gateway saw it drift = %+v (state %s); want DRIFT, current A2 from the gateway", a, a.State())
	}
	if b := got["b"]; b.Current != dB || b.CurrentSource != warrant.SourceCrawl || b.LastCrawl != 1 || b.State() != warrant.StateApproved {
		t.Errorf("b, not in the gateway record = %+v (state %s); want APPROVED: a gateway record removes nothing", b, b.State())
	}
	if g := got["gone"]; g.State() != warrant.StatePending {
		t.Errorf("gone = %+v (state %s); want PENDING", g, g.State())
	}
	if n := got["new"]; n.Current != dN || n.CurrentSource != warrant.SourceGateway || n.Versions != 0 || n.Approved != "" ||
		n.State() != warrant.StatePending || !n.Pending() || n.Previous != "" {
		t.Errorf("new = %+v (state %s); want PENDING with no version", n, n.State())
	}
	if keys, _ := c.VersionKeys(ctx, "s"); len(keys) != 3 {
		t.Errorf("version keys after a gateway record = %+v; want the crawl's 3", keys)
	}
	if props, _ := c.Proposals(ctx); len(props) != 1 || props[0].Tool != "gone" {
		t.Errorf("pending proposals = %+v; want gone only (the gateway opens none)", props)
	}

	// A crawl after it settles a and removes gone and new, which it does not list.
	mustRecord(t, c, crawl("s", 3, known, "a", "A", "b", "B"))
	got = toolRecords(t, c)
	if a := got["a"]; a.Current != dA || a.CurrentSource != warrant.SourceCrawl || a.State() != warrant.StateApproved || a.Previous != "" {
		t.Errorf("a after the next crawl = %+v (state %s); want APPROVED", a, a.State())
	}
	for _, tool := range []string{"gone", "new"} {
		if r := got[tool]; r.State() != warrant.StateRemoved || r.ServerLastCrawl != 3 {
			t.Errorf("%s after a crawl that did not list it = %+v (state %s); want REMOVED", tool, r, r.State())
		}
	}
	// The gateway lists gone again, and sees b's definition refused.
	mustRecord(t, c, gateway("s", 4, "b", "", "gone", "G"))
	got = toolRecords(t, c)
	if g := got["gone"]; g.State() != warrant.StatePending || g.Current != dG || g.LastCrawl != 4 || g.CurrentSource != warrant.SourceGateway {
		t.Errorf("gone listed again by the gateway = %+v (state %s); want PENDING", g, g.State())
	}
	if b := got["b"]; b.Current != "" || b.Refused == "" || b.State() != warrant.StateDrift {
		t.Errorf("b refused by the gateway = %+v (state %s); want DRIFT", b, b.State())
	}
	if r := got["new"]; r.State() != warrant.StateRemoved {
		t.Errorf("new, not in the gateway record = %+v (state %s); want still REMOVED", r, r.State())
	}
	// The crawl that records new's definition opens its proposal.
	mustRecord(t, c, crawl("s", 5, known, "a", "A", "b", "B", "new", "N"))
	got = toolRecords(t, c)
	if n := got["new"]; n.Current != dN || n.Versions != 1 || n.CurrentSource != warrant.SourceCrawl || n.State() != warrant.StatePending {
		t.Errorf("new after a crawl = %+v (state %s)", n, n.State())
	}
	if b := got["b"]; b.State() != warrant.StateApproved {
		t.Errorf("b after a crawl = %+v (state %s)", b, b.State())
	}
	props, err := c.Proposals(ctx)
	if err != nil || len(props) != 2 || props[1].Tool != "new" || props[1].Digest != dN || props[1].Crawl != 5 {
		t.Errorf("pending proposals = %+v, %v; want gone and new", props, err)
	}
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 5 || srv.LastSourceCrawl != 5 {
		t.Errorf("server = %+v; want LastCrawl 5, LastSourceCrawl 5", srv)
	}
}

// testGatewayRace: a gateway record and a crawl racing for the same number: exactly one
// is written; the loser writes nothing.
func testGatewayRace(t *testing.T, c warrant.Catalog) {
	mustAdd(t, c, server("s"))
	mustRecord(t, c, crawl("s", 1, nil, "a", "A"))
	wins := race(t, 6, func(i int) error {
		r := crawl("s", 2, nil, "a", fmt.Sprintf("crawler %d", i))
		if i%2 == 1 {
			r = gateway("s", 2, "a", fmt.Sprintf("gateway %d", i))
		}
		return c.RecordCrawl(t.Context(), r, warrant.AuditAppend{})
	})
	if len(wins) == 0 {
		t.Fatal("no racing write won")
	}
	if len(wins) > 1 {
		t.Errorf("writers %v all recorded number 2", wins)
	}
	won := wins[0]
	cr, err := c.Crawl(t.Context(), "s", 2)
	if err != nil || (cr.Source == warrant.SourceGateway) != (won%2 == 1) {
		t.Errorf("record 2 = %+v, %v; want the winner's (%d)", cr, err, won)
	}
	srv, _ := c.Server(t.Context(), "s")
	vs, _ := c.Versions(t.Context(), "s", "a")
	if wantLSC, wantVs := map[bool]int64{true: 1, false: 2}[won%2 == 1], map[bool]int{true: 1, false: 2}[won%2 == 1]; srv.LastSourceCrawl != wantLSC || len(vs) != wantVs {
		t.Errorf("after the race: LastSourceCrawl %d, %d versions; want %d and %d", srv.LastSourceCrawl, len(vs), wantLSC, wantVs)
	}
}

// chainer is a test Auditor: records linked like Records (the port checks linkage only).
type chainer struct{}

func (chainer) Chain(_ context.Context, head warrant.AuditHead, events []warrant.Event) ([]warrant.AuditRecord, error) {
	out := Records(head, len(events), "")
	for i, e := range events {
		out[i].Type, out[i].Actor, out[i].At, out[i].Body = e.Type, e.Actor, e.At, e.Body
	}
	return out, nil
}

// newService returns a service over c acting as identity at t0, its audit chained by
// chainer, with server s added.
func newService(t *testing.T, c warrant.Catalog, identity string) *warrant.Service {
	t.Helper()
	svc, err := warrant.New(warrant.Config{Catalog: c, Auditor: chainer{}, Identity: identity, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddServer(t.Context(), server("s")); err != nil {
		t.Fatal(err)
	}
	return svc
}

// listing builds srv's listing of tools (name, description pairs); an empty description
// gives a definition that is not valid UTF-8, which the service refuses.
func listing(srv string, tools ...string) warrant.Listing {
	l := warrant.Listing{Server: srv}
	for i := 0; i+1 < len(tools); i += 2 {
		b, _ := Def(tools[i], tools[i+1])
		if tools[i+1] == "" {
			b = []byte("{\"name\":\"" + tools[i] + "\",\"description\":\"\xff\"}")
		}
		l.Tools = append(l.Tools, warrant.RawTool{Name: tools[i], Raw: b})
	}
	return l
}

// testServiceObserveGateway: the service's ObserveGateway over the driver — the
// gateway's drift and new tool in List without a crawl, with one audit record; a retry
// writes nothing; the next crawl's removed tools are those of the previous crawl.
func testServiceObserveGateway(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	svc := newService(t, c, "gw")
	if _, err := svc.Ingest(ctx, listing("s", "a", "A", "old", "O")); err != nil {
		t.Fatal(err)
	}
	_, dA := Def("a", "A")
	_, dA2 := Def("a", "A2")
	_, dN := Def("new", "N")
	if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "a", Digest: dA, Kind: warrant.DecisionApproved, Actor: "bob"}); err != nil {
		t.Fatal(err)
	}
	obs := []warrant.Observation{{Tool: "new", Digest: dN}, {Tool: "a", Digest: dA2}}
	head, _ := c.AuditHead(ctx)
	for range 2 { // the second is a retry of the same batch: nothing new to write
		if err := svc.ObserveGateway(ctx, "s", t0.Add(time.Minute), obs); err != nil {
			t.Fatal(err)
		}
	}
	if h, _ := c.AuditHead(ctx); h.Seq != head.Seq+1 {
		t.Errorf("audit head moved from %d to %d, want one record", head.Seq, h.Seq)
	}
	if srv, _ := c.Server(ctx, "s"); srv.LastCrawl != 2 || srv.LastSourceCrawl != 1 {
		t.Errorf("server = %+v; want one gateway record after crawl 1", srv)
	}
	rows, err := svc.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, r := range rows {
		states[r.Tool] = fmt.Sprintf("%s %s %d", r.State, r.Source, r.Versions)
	}
	if fmt.Sprint(states) != "map[a:DRIFT gateway 1 new:PENDING gateway 0 old:PENDING crawl 1]" {
		t.Errorf("list after the gateway's observations: %v", states)
	}
	res, err := svc.Ingest(ctx, listing("s", "a", "A2", "new", "N"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Removed) != "[old]" || res.Crawl != 3 || len(res.New) != 2 {
		t.Errorf("crawl after the gateway record: removed %v, crawl %d, %d new", res.Removed, res.Crawl, len(res.New))
	}
	if props, _ := c.Proposals(ctx); len(props) != 3 {
		t.Errorf("proposals after the crawl: %+v; want old, a@A2 and new", props)
	}
}

// testServiceCheckDecision: the rules every decision follows (CLI and approvals API alike)
// over the driver: recorded versions only, suspicious text only rejected unless accepted,
// no approval by an identity that crawled the digest, approving the approved digest is a
// no-op, rollback only to an earlier approved digest other than the current one.
func testServiceCheckDecision(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	svc := newService(t, c, "crawler")
	ingest := func(tools ...string) {
		t.Helper()
		if _, err := svc.Ingest(ctx, listing("s", tools...)); err != nil {
			t.Fatal(err)
		}
	}
	ingest("a", "A", "sus", "Hid\u200bden")
	_, dA := Def("a", "A")
	vs, err := c.Versions(ctx, "s", "sus")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions of sus: %v, %v", vs, err)
	}
	dS := vs[0].Digest
	check := func(tool string, d warrant.Digest, kind warrant.DecisionKind, accept bool, actor string, want error) warrant.DecisionCheck {
		t.Helper()
		chk, err := svc.CheckDecision(ctx, "s", tool, d, kind, accept, actor, strings.EqualFold)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("CheckDecision(%s %s %s accept=%v by %s) = %v, want %v", kind, tool, d.Short(), accept, actor, err, want)
		}
		return chk
	}
	check("a", "sha256:"+warrant.Digest(strings.Repeat("ab", 32)), warrant.DecisionApproved, false, "bob", warrant.ErrNotFound)
	check("nope", dA, warrant.DecisionApproved, false, "bob", warrant.ErrNotFound)
	check("a", dS, warrant.DecisionApproved, false, "bob", warrant.ErrNotFound) // another tool's digest
	check("a", "sha256:ab", warrant.DecisionApproved, false, "bob", warrant.ErrInvalid)
	check("a", dA, warrant.DecisionApproved, false, "CRAWLER", warrant.ErrSeparation)
	check("a", dA, warrant.DecisionRejected, false, "crawler", nil) // rejecting needs no separation
	if chk := check("a", dA, warrant.DecisionApproved, false, "bob", nil); chk.Unchanged || chk.Approved != "" || chk.Version.Version.Digest != dA {
		t.Errorf("first approval: %+v", chk)
	}
	check("sus", dS, warrant.DecisionApproved, false, "bob", warrant.ErrSuspicious)
	check("sus", dS, warrant.DecisionRejected, false, "bob", nil)
	if chk := check("sus", dS, warrant.DecisionApproved, true, "bob", nil); !chk.AcceptedSuspicious {
		t.Errorf("accepted suspicious approval: %+v", chk)
	}
	if chk := check("a", dA, warrant.DecisionRejected, true, "bob", nil); chk.AcceptedSuspicious {
		t.Error("AcceptedSuspicious on a version with nothing suspicious")
	}

	if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "a", Digest: dA, Kind: warrant.DecisionApproved, Actor: "bob"}); err != nil {
		t.Fatal(err)
	}
	if chk := check("a", dA, warrant.DecisionApproved, false, "bob", nil); !chk.Unchanged || chk.Approved != dA {
		t.Errorf("approving the approved digest: %+v", chk)
	}
	check("a", dA, warrant.DecisionRolledBack, false, "bob", warrant.ErrConflict) // it is the approved one
	ingest("a", "A2", "sus", "Hid\u200bden")
	_, dA2 := Def("a", "A2")
	if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "a", Digest: dA2, Kind: warrant.DecisionApproved, Actor: "bob", Expect: dA}); err != nil {
		t.Fatal(err)
	}
	if chk := check("a", dA, warrant.DecisionRolledBack, false, "bob", nil); chk.Approved != dA2 {
		t.Errorf("rollback check: %+v", chk)
	}
	check("a", dA, warrant.DecisionRolledBack, false, "crawler", warrant.ErrSeparation)
	check("sus", dS, warrant.DecisionRolledBack, true, "bob", warrant.ErrConflict) // never approved
}

// testLarge: definitions as large as a crawl accepts are stored and read back exactly —
// 60 tools of ~73 KB and one of 2 MB in one first crawl, then one at the crawl's response
// cap (10 MiB) — and the server's later crawls (unchanged, or with one new version) are
// recorded too.
func testLarge(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("big"))
	sizes := map[string]int{"huge": 2 << 20}
	for i := range 60 {
		sizes[fmt.Sprintf("tool_%02d", i)] = 73<<10 + i
	}
	first := LargeCrawl("big", 1, nil, sizes)
	head, err := c.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs := Records(head, 1+len(first.Versions), warrant.EventVersionRecorded)
	if err := c.RecordCrawl(ctx, first, warrant.AuditAppend{Prev: head, Records: recs}); err != nil {
		t.Fatalf("first crawl of 60 tools of ~73 KB and one of 2 MB: %v", err)
	}
	roundTrip := func(v warrant.Version) {
		t.Helper()
		got, err := c.Version(ctx, v.Server, v.Tool, v.Digest)
		if err != nil {
			t.Errorf("Version(%s): %v", v.Tool, err)
			return
		}
		if warrant.DigestOf(got.Canonical) != v.Digest || string(got.Canonical) != string(v.Canonical) || got.FirstCrawl != v.FirstCrawl {
			t.Errorf("Version(%s) returned %d bytes hashing to %s, want the %d bytes of %s", v.Tool, len(got.Canonical), warrant.DigestOf(got.Canonical), len(v.Canonical), v.Digest)
		}
	}
	for _, v := range first.Versions {
		roundTrip(v)
	}
	if vs, err := c.Versions(ctx, "big", "huge"); err != nil || len(vs) != 1 || warrant.DigestOf(vs[0].Canonical) != vs[0].Digest || len(vs[0].Canonical) != 2<<20 {
		t.Errorf("Versions(huge) = %d versions, %v", len(vs), err)
	}
	if keys, err := c.VersionKeys(ctx, "big"); err != nil || len(keys) != 61 {
		t.Errorf("VersionKeys = %d keys, %v; want 61", len(keys), err)
	}
	if cr, err := c.Crawl(ctx, "big", 1); err != nil || len(cr.Observations) != 61 || cr.Observations[0].Tool != "huge" {
		t.Errorf("Crawl(big, 1) = %d observations, %v", len(cr.Observations), err)
	}
	if tools, err := c.ServerTools(ctx, "big"); err != nil || len(tools) != 61 {
		t.Errorf("ServerTools(big) = %d records, %v; want 61", len(tools), err)
	}
	if got, err := c.AuditRecords(ctx, 0, 1000); err != nil || len(got) != len(recs) {
		t.Errorf("%d audit records, %v; want %d", len(got), err, len(recs))
	}
	huge := first.Versions[0]
	if err := c.Decide(ctx, warrant.Decision{Server: "big", Tool: huge.Tool, Digest: huge.Digest, Kind: warrant.DecisionApproved, Actor: "bob", At: t0}, warrant.AuditAppend{}); err != nil {
		t.Errorf("approve the 2 MB tool: %v", err)
	}

	// Later crawls of the server: the same listing, then one more tool at the cap.
	known := map[string]bool{}
	for n := range sizes {
		known[n] = true
	}
	mustRecord(t, c, LargeCrawl("big", 2, known, sizes))
	sizes["cap"] = 10<<20 - 1024
	third := LargeCrawl("big", 3, known, sizes)
	if len(third.Versions) != 1 {
		t.Fatalf("crawl 3 has %d new versions, want 1", len(third.Versions))
	}
	mustRecord(t, c, third)
	roundTrip(third.Versions[0])
	if srv, err := c.Server(ctx, "big"); err != nil || srv.LastCrawl != 3 {
		t.Errorf("server after three crawls = %+v, %v", srv, err)
	}
	if aps, err := c.Approvals(ctx); err != nil || len(aps) != 1 || aps[0].Digest != huge.Digest {
		t.Errorf("approvals = %+v, %v", aps, err)
	}
}
