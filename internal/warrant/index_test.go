package warrant_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// TestIndexReadsFormat1Items: the INDEX and APPROVALS items the format-1 DynamoDB driver
// wrote after catalogtest.Scenario (testdata/dynamo-catalog1-items.json, taken from moto)
// decode into the domain's Index and ApprovalState, encode back to the very same bytes
// (no format change, so no upgrade: catalog/1 tables keep working), and derive the tool
// records and pending proposals that driver read (catalogtest.Catalog1Golden).
func TestIndexReadsFormat1Items(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "dynamo-catalog1-items.json"))
	if err != nil {
		t.Fatal(err)
	}
	var items map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Servers   []warrant.Server
		Tools     []warrant.ToolRecord
		Proposals []warrant.Proposal
		Approvals []warrant.Approval
	}
	if err := json.Unmarshal(catalogtest.Catalog1Golden, &golden); err != nil {
		t.Fatal(err)
	}
	approvals := map[string]map[string]warrant.ApprovalState{}
	for k, v := range items {
		if !strings.HasPrefix(k, "approval/") {
			continue
		}
		var it map[string]string
		if err := json.Unmarshal(v, &it); err != nil {
			t.Fatal(err)
		}
		st := warrant.ApprovalState{Approved: warrant.Digest(it["approved"]), By: it["by"]}
		if it["at"] != "" {
			if st.At, err = time.Parse(time.RFC3339Nano, it["at"]); err != nil {
				t.Fatal(err)
			}
		}
		if st.Decisions, err = strconv.ParseInt(it["n"], 10, 64); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(it["kinds"]), &st.Latest); err != nil {
			t.Fatal(err)
		}
		if approvals[it["server"]] == nil {
			approvals[it["server"]] = map[string]warrant.ApprovalState{}
		}
		approvals[it["server"]][it["tool"]] = st
	}
	var tools []warrant.ToolRecord
	props := []warrant.Proposal{}
	for _, s := range golden.Servers {
		var stored string
		if err := json.Unmarshal(items["index/"+s.Name], &stored); err != nil {
			t.Fatal(err)
		}
		ix := warrant.NewIndex()
		if err := json.Unmarshal([]byte(stored), ix); err != nil {
			t.Fatalf("index of %s: %v", s.Name, err)
		}
		if again, _ := json.Marshal(ix); string(again) != stored {
			t.Errorf("index of %s re-encodes as\n%s\nnot as stored\n%s", s.Name, again, stored)
		}
		tools = append(tools, ix.Records(s.Name, s.LastSourceCrawl, approvals[s.Name])...)
		props = append(props, ix.Pending(s.Name, approvals[s.Name])...)
	}
	aps := warrant.Approvals(approvals)
	for what, pair := range map[string][2]any{"tools": {tools, golden.Tools}, "proposals": {props, golden.Proposals}, "approvals": {aps, golden.Approvals}} {
		got, _ := json.Marshal(pair[0])
		want, _ := json.Marshal(pair[1])
		if string(got) != string(want) {
			t.Errorf("%s =\n%s\nwant\n%s", what, got, want)
		}
	}
}

// TestRebuildIndexIsApply: the index derived once from a server's history (the upgrade
// of a catalog that kept none) is the one applying its records in turn built, for random
// histories of crawls and gateway records.
func TestRebuildIndexIsApply(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ix := warrant.NewIndex()
		var crawls []warrant.Crawl
		var versions []warrant.Version
		var proposals []warrant.Proposal
		known := map[string]bool{}
		var lsc int64
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for seq := int64(1); seq <= int64(1+rng.IntN(12)); seq++ {
			r := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: "s", Seq: seq, Source: warrant.SourceCrawl, By: "c"}}
			if rng.IntN(3) == 0 {
				r.Crawl.Source = warrant.SourceGateway
			}
			for _, tool := range []string{"a", "b", "c", "d"} {
				if rng.IntN(3) == 0 {
					continue
				}
				if rng.IntN(6) == 0 {
					r.Crawl.Observations = append(r.Crawl.Observations, warrant.Observation{Tool: tool, Refused: "invalid UTF-8"})
					continue
				}
				b, d := catalogtest.Def(tool, fmt.Sprint(rng.IntN(3)))
				r.Crawl.Observations = append(r.Crawl.Observations, warrant.Observation{Tool: tool, Digest: d})
				if r.Crawl.Source == warrant.SourceCrawl && !known[tool+string(d)] {
					known[tool+string(d)] = true
					v := warrant.Version{Server: "s", Tool: tool, Digest: d, Canonical: b, FirstSeenAt: at, FirstCrawl: seq}
					p := warrant.Proposal{Server: "s", Tool: tool, Digest: d, OpenedAt: at, Crawl: seq}
					r.Versions, r.Proposals = append(r.Versions, v), append(r.Proposals, p)
				}
			}
			if _, err := ix.Apply(r, lsc); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			lsc = warrant.Server{LastSourceCrawl: lsc}.After(r.Crawl).LastSourceCrawl
			crawls = append(crawls, r.Crawl)
			versions, proposals = append(versions, r.Versions...), append(proposals, r.Proposals...)
		}
		rng.Shuffle(len(crawls), func(i, j int) { crawls[i], crawls[j] = crawls[j], crawls[i] })
		for i := range versions {
			versions[i].Canonical = nil // the upgrade reads keys only
		}
		got, _ := json.Marshal(warrant.RebuildIndex(crawls, versions, proposals))
		want, _ := json.Marshal(ix)
		if string(got) != string(want) {
			t.Fatalf("seed %d: rebuilt\n%s\napplied\n%s", seed, got, want)
		}
	}
}

// TestIndexApplyReportsChange: a listing that changes nothing leaves the index as it is
// (a driver then writes nothing); a refused record leaves it untouched.
func TestIndexApplyReportsChange(t *testing.T) {
	b, d := catalogtest.Def("a", "A")
	rec := func(seq int64, src warrant.Source, withVersion bool) warrant.CrawlRecord {
		r := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: "s", Seq: seq, Source: src, Observations: []warrant.Observation{{Tool: "a", Digest: d}}}}
		if withVersion {
			r.Versions = []warrant.Version{{Server: "s", Tool: "a", Digest: d, Canonical: b, FirstCrawl: seq}}
			r.Proposals = []warrant.Proposal{{Server: "s", Tool: "a", Digest: d, Crawl: seq}}
		}
		return r
	}
	ix := warrant.NewIndex()
	for _, tc := range []struct {
		name    string
		r       warrant.CrawlRecord
		lsc     int64
		changed bool
	}{
		{"first crawl", rec(1, warrant.SourceCrawl, true), 0, true},
		{"the same listing", rec(2, warrant.SourceCrawl, false), 1, false},
		{"the same version again", rec(3, warrant.SourceCrawl, true), 2, false},
		{"a gateway record", rec(4, warrant.SourceGateway, false), 3, true},
	} {
		changed, err := ix.Apply(tc.r, tc.lsc)
		if err != nil || changed != tc.changed {
			t.Errorf("%s: changed %v, %v; want %v", tc.name, changed, err, tc.changed)
		}
	}
	before, _ := json.Marshal(ix)
	bad := rec(5, warrant.SourceCrawl, true)
	bad.Proposals[0].Digest = warrant.DigestOf([]byte(`{}`))
	if _, err := ix.Apply(bad, 3); !errors.Is(err, warrant.ErrInvalid) {
		t.Errorf("proposal naming no version: %v", err)
	}
	if after, _ := json.Marshal(ix); string(after) != string(before) {
		t.Error("a refused record changed the index")
	}
}

// TestApprovalStateDecide: what each decision makes of a tool's approval.
func TestApprovalStateDecide(t *testing.T) {
	_, d1 := catalogtest.Def("t", "one")
	_, d2 := catalogtest.Def("t", "two")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dec := func(kind warrant.DecisionKind, d, expect warrant.Digest, actor string, h int) warrant.Decision {
		return warrant.Decision{Server: "s", Tool: "t", Digest: d, Kind: kind, Expect: expect, Actor: actor, At: t0.Add(time.Duration(h) * time.Hour)}
	}
	var st warrant.ApprovalState
	steps := []struct {
		name           string
		d              warrant.Decision
		err            error
		approved       warrant.Digest
		by             string
		latest         warrant.DecisionKind
		decisionsAfter int64
	}{
		{"approve", dec(warrant.DecisionApproved, d1, "", "bob", 1), nil, d1, "bob", warrant.DecisionApproved, 1},
		{"stale expectation", dec(warrant.DecisionApproved, d2, "", "bob", 2), warrant.ErrConflict, d1, "bob", "", 1},
		{"reject another digest", dec(warrant.DecisionRejected, d2, d1, "carol", 3), nil, d1, "bob", warrant.DecisionRejected, 2},
		{"approve it after all", dec(warrant.DecisionApproved, d2, d1, "dave", 4), nil, d2, "dave", warrant.DecisionApproved, 3},
		{"roll back", dec(warrant.DecisionRolledBack, d1, d2, "erin", 5), nil, d1, "erin", warrant.DecisionRolledBack, 4},
		{"reject the approved one", dec(warrant.DecisionRejected, d1, d1, "frank", 6), nil, "", "", warrant.DecisionRejected, 5},
		{"unknown kind", dec("maybe", d1, "", "bob", 7), warrant.ErrInvalid, "", "", "", 5},
		{"malformed digest", dec(warrant.DecisionApproved, "sha256:ab", "", "bob", 8), warrant.ErrInvalid, "", "", "", 5},
	}
	var history []warrant.Decision
	for _, s := range steps {
		next, err := st.Decide(s.d)
		if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.err)
		}
		if err == nil {
			st = next
			history = append(history, s.d)
			if st.Latest[s.d.Digest] != s.latest {
				t.Errorf("%s: latest on %s = %q, want %q", s.name, s.d.Digest.Short(), st.Latest[s.d.Digest], s.latest)
			}
		}
		if st.Approved != s.approved || st.By != s.by || st.Decisions != s.decisionsAfter {
			t.Errorf("%s: state %+v; want approved %q by %q after %d decisions", s.name, st, s.approved, s.by, s.decisionsAfter)
		}
	}
	if got, want := fmt.Sprintf("%+v", warrant.RebuildApproval(history)), fmt.Sprintf("%+v", st); got != want {
		t.Errorf("rebuilt from the decisions: %s, want %s", got, want)
	}
}
