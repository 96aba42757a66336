package enforce

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// decisionSink keeps every batch written.
type decisionSink struct {
	mu      sync.Mutex
	batches []DecisionBatch
	fail    error
	// queued makes each write keep its batch but answer warrant.ErrQueued, as a
	// sequenced log that queued it and did not integrate it in time does.
	queued bool
}

func (s *decisionSink) RecordDecisions(_ context.Context, b DecisionBatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.batches = append(s.batches, b)
	if s.queued {
		return fmt.Errorf("record decisions: %w", warrant.ErrQueued)
	}
	return nil
}

// counts sums every record written, by "server tool method outcome cause".
func (s *decisionSink) counts() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]uint64{}
	for _, b := range s.batches {
		for _, r := range b.Records {
			out[strings.Join(strings.Fields(fmt.Sprintf("%s %s %s %s %s", r.Server, r.Tool, r.Method, r.Outcome, r.Cause)), " ")] += r.Count
		}
	}
	return out
}

// recordsFixture: server s with tool a approved, b unapproved; the listing holds both.
func recordsFixture(t *testing.T, mod func(*Config)) (*testProcessor, *decisionSink, []byte) {
	t.Helper()
	a, b := `{"name":"a","inputSchema":{}}`, `{"name":"b","inputSchema":{}}`
	src := newMemSource()
	src.set("s", "a", ToolEvidence{Approved: liveDigest(t, []byte(a)), Crawled: liveDigest(t, []byte(a))})
	src.set("s", "b", ToolEvidence{Crawled: liveDigest(t, []byte(b))})
	sink := &decisionSink{}
	tp := newTestProcessor(t, src, []string{"s"}, func(c *Config) {
		c.Decisions, c.RecordEvery = sink, time.Hour
		if mod != nil {
			mod(c)
		}
	})
	return tp, sink, []byte(`{"tools":[` + a + `,` + b + `]}`)
}

// TestDecisionRecords: every decision is counted once, a memoized listing included, and
// the window is written on Sync and on Close.
func TestDecisionRecords(t *testing.T) {
	tp, sink, listing := recordsFixture(t, nil)
	for range 5 { // the first decides in full, the others hit the memo
		if d := tp.ListTools(t.Context(), []string{"s"}, listing); d.Outcome != OutcomeMutated {
			t.Fatalf("listing: %v %s", d.Outcome, d.Reason)
		}
	}
	for _, name := range []string{"a", "a", "b", "zz"} {
		tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"`+name+`"}`))
	}
	tp.Decide(t.Context(), Message{Phase: PhaseRequest, Method: "prompts/get", Services: []string{"s"}, Body: []byte(`{}`)})
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"s a tools/list allowed": 5, "s b tools/list filtered unapproved": 5, "s a tools/call allowed": 2,
		"s b tools/call denied unapproved": 1, "s zz tools/call denied unknown": 1, "s other denied method": 1}
	got := sink.counts()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%q counted %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("records %v, want exactly %v", got, want)
	}
	b := sink.batches[0]
	if b.Point != PointExtMcp || b.Shadow || b.Instance == "" || b.To.Before(b.From) {
		t.Errorf("batch header %+v", b)
	}
	for _, r := range b.Records {
		if r.Method == "tools/list" && (r.Digest == "" || r.Approvals == "") {
			t.Errorf("listing record without its digest or approval set: %+v", r)
		}
	}
	// Nothing new: nothing written; then one more decision is written by Close.
	if err := tp.Sync(t.Context(), true); err != nil || len(sink.batches) != 1 {
		t.Fatalf("an empty window was written: %d batches, %v", len(sink.batches), err)
	}
	tp.ListTools(t.Context(), []string{"s"}, listing)
	tp.Close(t.Context())
	if len(sink.batches) != 2 || sink.counts()["s a tools/list allowed"] != 6 {
		t.Errorf("Close did not write the last window: %d batches, %v", len(sink.batches), sink.counts())
	}
}

// TestDecisionRecordsKeptOnFailure: a failed write keeps the counts for the next window.
func TestDecisionRecordsKeptOnFailure(t *testing.T) {
	tp, sink, _ := recordsFixture(t, nil)
	tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"b"}`))
	sink.fail = fmt.Errorf("the log is unreachable")
	if err := tp.Sync(t.Context(), true); err == nil {
		t.Fatal("a failed write was not reported")
	}
	sink.fail = nil
	tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"b"}`))
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := sink.counts()["s b tools/call denied unapproved"]; got != 2 {
		t.Errorf("after a failed write, %d decisions recorded, want 2", got)
	}
	if tp.Metrics().decisionRecordFailures.Load() != 1 {
		t.Error("the failure was not counted")
	}
}

// TestDecisionRecordsQueuedAreWritten: a write the sequenced log queued but did not yet
// sequence (ErrQueued) is durable: its counts are not given back, so they are not
// recorded twice.
func TestDecisionRecordsQueuedAreWritten(t *testing.T) {
	tp, sink, _ := recordsFixture(t, nil)
	tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"b"}`))
	sink.queued = true
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatalf("a queued write was reported as failed: %v", err)
	}
	sink.queued = false
	tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"b"}`))
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := sink.counts()["s b tools/call denied unapproved"]; got != 2 {
		t.Errorf("after a queued write, %d decisions recorded, want 2 (each once)", got)
	}
	if tp.Metrics().decisionRecordFailures.Load() != 0 {
		t.Error("a queued write was counted as a failure")
	}
}

// TestMemoEvictionCountsExactly: listings that push each other out of the memo are
// counted exactly, whatever was evicted between flushes.
func TestMemoEvictionCountsExactly(t *testing.T) {
	tp, sink, _ := recordsFixture(t, nil)
	const n = maxMemoEntries * 3
	var listings [][]byte
	for i := range n {
		listings = append(listings, []byte(fmt.Sprintf(`{"tools":[{"name":"a","inputSchema":{}}],"pad":%d}`, i)))
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for r := range 50 {
				tp.ListTools(context.Background(), []string{"s"}, listings[(r*7+w)%n])
				if r%10 == 0 {
					_ = tp.Sync(context.Background(), true)
				}
			}
		})
	}
	wg.Wait()
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := sink.counts()["s a tools/list allowed"]; got != 200 {
		t.Errorf("%d listings counted, want 200", got)
	}
	tp.tally.mu.Lock()
	shapes := len(tp.tally.shapes)
	tp.tally.mu.Unlock()
	if shapes > maxMemoEntries {
		t.Errorf("the tally holds %d shapes after a flush; evicted ones must go", shapes)
	}
}

// TestDecisionRecordsFolded: a client naming endless tools cannot grow the window.
func TestDecisionRecordsFolded(t *testing.T) {
	tp, sink, _ := recordsFixture(t, nil)
	for i := range maxRecordKeys + 50 {
		tp.CallTool(t.Context(), []string{"s"}, []byte(fmt.Sprintf(`{"name":"t%d"}`, i)))
	}
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	b := sink.batches[0]
	if len(b.Records) > maxRecordKeys+1 || b.Folded != 50 {
		t.Errorf("%d records, %d folded; want at most %d records and 50 folded", len(b.Records), b.Folded, maxRecordKeys+1)
	}
}

// TestShadowMode: the rules run and are recorded; everything passes.
func TestShadowMode(t *testing.T) {
	tp, sink, listing := recordsFixture(t, func(c *Config) { c.Shadow = true })
	d := tp.ListTools(t.Context(), []string{"s"}, listing)
	if d.Outcome != OutcomePass || !d.Shadow || d.Would != OutcomeMutated || d.Dropped != 1 || d.Mutated != nil {
		t.Errorf("shadow listing: %+v", d)
	}
	d = tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"b"}`))
	if d.Outcome != OutcomePass || !d.Shadow || d.Would != OutcomeDeny || d.Cause != CauseUnapproved {
		t.Errorf("shadow call: %+v", d)
	}
	if d := tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"a"}`)); d.Shadow || d.Outcome != OutcomePass {
		t.Errorf("an approved call in shadow mode: %+v", d)
	}
	tp.Decide(t.Context(), Message{Phase: PhaseResponse, Method: "tools/list", Services: []string{"s"}, Body: []byte(`{"tools":`)})
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	got := sink.counts()
	for _, k := range []string{"s b tools/list would-deny unapproved", "s b tools/call would-deny unapproved", "s tools/list would-deny malformed", "s a tools/call allowed"} {
		if got[k] != 1 {
			t.Errorf("%q = %d (all %v)", k, got[k], got)
		}
	}
	if !sink.batches[0].Shadow {
		t.Error("the batch does not say shadow")
	}
	var b strings.Builder
	if _, err := tp.Metrics().WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"toolwarrant_extmcp_shadow 1\n", `toolwarrant_extmcp_denials_total{cause="unapproved",method="tools/call"} 1` + "\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestStatelessCalls: without the listing memory, a call is decided on the catalog alone.
func TestStatelessCalls(t *testing.T) {
	tp, _, _ := recordsFixture(t, func(c *Config) { c.Stateless = true })
	if d := tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"a"}`)); d.Outcome != OutcomePass {
		t.Errorf("stateless call never listed: %s", d.Reason)
	}
	tp2, _, _ := recordsFixture(t, nil)
	if d := tp2.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"a"}`)); d.Cause != CauseUnlisted {
		t.Errorf("stateful call never listed: %v", d.Cause)
	}
}

// TestPrefixedNaming: AgentCore's TARGET___TOOL names, in listings and calls.
func TestPrefixedNaming(t *testing.T) {
	a := `{"name":"a","inputSchema":{}}`
	src := newMemSource()
	src.set("s", "a", ToolEvidence{Approved: liveDigest(t, []byte(a)), Crawled: liveDigest(t, []byte(a))})
	src.set("t", "x", ToolEvidence{})
	tp := newTestProcessor(t, src, []string{"s", "t"}, func(c *Config) { c.Naming, c.Stateless, c.PassMethods = NamingPrefixed, true, true })
	all := []string{"s", "t"}
	listing := `{"tools":[{"name":"s___a","inputSchema":{}},{"name":"t___x","inputSchema":{}},{"name":"x_amz_bedrock_agentcore_search","inputSchema":{}}]}`
	d := tp.ListTools(t.Context(), all, []byte(listing))
	if d.Outcome != OutcomeMutated || string(d.Mutated) != `{"tools":[{"name":"s___a","inputSchema":{}}]}` {
		t.Errorf("prefixed listing: %v %s %s", d.Outcome, d.Mutated, d.Reason)
	}
	if d := tp.CallTool(t.Context(), all, []byte(`{"name":"s___a"}`)); d.Outcome != OutcomePass {
		t.Errorf("prefixed approved call: %s", d.Reason)
	}
	for name, cause := range map[string]Cause{"t___x": CauseUnapproved, "x_amz_bedrock_agentcore_search": CauseUnknown, "a": CauseUnknown} {
		if d := tp.CallTool(t.Context(), all, []byte(`{"name":"`+name+`"}`)); d.Outcome != OutcomeDeny || d.Cause != cause {
			t.Errorf("call %s: %v %v %s", name, d.Outcome, d.Cause, d.Reason)
		}
	}
}

// TestPassMethods: a point that sees every message passes MCP's other methods and denies
// what is not MCP's; without PassMethods everything but the two is denied.
func TestPassMethods(t *testing.T) {
	tp, _, _ := recordsFixture(t, func(c *Config) { c.PassMethods = true })
	for _, m := range []string{"initialize", "ping", "resources/read", "prompts/get", "notifications/initialized", "server/discover", "completion/complete"} {
		if d := tp.Decide(t.Context(), Message{Phase: PhaseRequest, Method: m, Services: []string{"s"}}); d.Outcome != OutcomePass {
			t.Errorf("%s: %v %s", m, d.Outcome, d.Reason)
		}
	}
	d := tp.Decide(t.Context(), Message{Phase: PhaseRequest, Method: "tools/explode", Services: []string{"s"}})
	if d.Outcome != OutcomeDeny || d.Cause != CauseMethod || d.RPCCode() != -32001 {
		t.Errorf("an unknown method: %+v", d)
	}
	strict, _, _ := recordsFixture(t, nil)
	if d := strict.Decide(t.Context(), Message{Phase: PhaseRequest, Method: "initialize", Services: []string{"s"}}); d.Outcome != OutcomeDeny {
		t.Errorf("without PassMethods, initialize: %v", d.Outcome)
	}
}

func TestRPCCode(t *testing.T) {
	for c, want := range map[Cause]int64{CauseUnknown: -32001, CauseDrifted: -32001, CauseMethod: -32001, CauseMalformed: -32600, CauseStale: -32603, CausePanic: -32603, CauseOversized: -32603} {
		if got := (Decision{Outcome: OutcomeDeny, Cause: c}).RPCCode(); got != want {
			t.Errorf("%v: %d, want %d", c, got, want)
		}
	}
}

// TestObserveIsNoDecision: a listing taken in by Observe moves the listing state (a call
// of a tool it shows drifted is denied) but counts nothing.
func TestObserveIsNoDecision(t *testing.T) {
	tp, sink, listing := recordsFixture(t, nil)
	tp.ListTools(t.Context(), []string{"s"}, listing)
	if d := tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"a"}`)); d.Outcome != OutcomePass {
		t.Fatal(d.Reason)
	}
	tp.Observe(t.Context(), []string{"s"}, []byte(`{"tools":[{"name":"a","description":"now different","inputSchema":{}}]}`))
	if d := tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"a"}`)); d.Cause != CauseDrifted {
		t.Errorf("after a drifted observation: %v", d.Cause)
	}
	if err := tp.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := sink.counts(); got["s a tools/list allowed"] != 1 || got["s a tools/list filtered drifted"] != 0 {
		t.Errorf("Observe was counted as a decision: %v", got)
	}
}

// TestStateNamesTheApprovalSet: the approval set changes exactly when an approval does.
func TestStateNamesTheApprovalSet(t *testing.T) {
	tp, _, _ := recordsFixture(t, nil)
	st := tp.State()
	if len(st) != 1 || !st[0].Fresh || st[0].Approved != 1 || !strings.HasPrefix(st[0].Approvals, "sha256:") {
		t.Fatalf("state %+v", st)
	}
	tp.src.set("s", "b", ToolEvidence{Crawled: "sha256:" + strings.Repeat("ab", 32)}) // no approval change
	tp.refresh(t)
	if got := tp.State()[0].Approvals; got != st[0].Approvals {
		t.Errorf("a crawl changed the approval set: %s → %s", st[0].Approvals, got)
	}
	tp.src.set("s", "b", ToolEvidence{Approved: "sha256:" + strings.Repeat("ab", 32)})
	tp.refresh(t)
	if got := tp.State()[0].Approvals; got == st[0].Approvals {
		t.Error("an approval did not change the approval set")
	}
}
