package enforce

import (
	"bytes"
	"testing"
)

// TestListingMemo: a repeat listing is answered from the memo with the same decision and
// metrics, and the memo never answers once anything the decision depends on has changed:
// the approvals (a new snapshot generation), or the listing state another listing left
// (which tools/call reads).
func TestListingMemo(t *testing.T) {
	v1 := []byte(`{"name":"echo","description":"Echoes","inputSchema":{}}`)
	v2 := []byte(`{"name":"echo","description":"Echoes, reworded","inputSchema":{}}`)
	other := []byte(`{"name":"add","description":"Adds","inputSchema":{}}`)
	src := newMemSource()
	src.set("s", "echo", ToolEvidence{Approved: d(v1), Crawled: d(v1)})
	tp := newTestProcessor(t, src, []string{"s"}, nil)
	listing := func(tools ...[]byte) []byte {
		return []byte(`{"tools":[` + string(bytes.Join(tools, []byte(","))) + `]}`)
	}
	list := func(b []byte) Decision { return tp.ListTools(t.Context(), []string{"s"}, b) }
	call := func() Decision { return tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"echo"}`)) }
	a, b := listing(v1, other), listing(v2, other)

	first := list(a)
	if first.Outcome != OutcomeMutated || first.Dropped != 1 {
		t.Fatalf("first listing: %v dropped %d", first.Outcome, first.Dropped)
	}
	if len(tp.memo.entries) != 1 {
		t.Fatalf("memo entries = %d, want 1", len(tp.memo.entries))
	}
	again := list(a)
	if again.Outcome != first.Outcome || !bytes.Equal(again.Mutated, first.Mutated) || again.Dropped != first.Dropped {
		t.Fatalf("repeat listing: %+v, want %+v", again, first)
	}
	if len(tp.memo.entries) != 1 {
		t.Fatalf("a repeat listing added a memo entry (%d)", len(tp.memo.entries))
	}
	if got := call(); got.Outcome != OutcomePass {
		t.Fatalf("call after listing v1: %s", got.Reason)
	}

	// Another listing shows v2 of echo: calls are denied; the memoized v1 listing must
	// bring the listing state back (it is a miss: the state version moved), then calls pass.
	if got := list(b); got.Dropped != 2 {
		t.Fatalf("v2 listing dropped %d, want 2", got.Dropped)
	}
	if got := call(); got.Cause != CauseDrifted {
		t.Fatalf("call after listing v2: %v", got.Cause)
	}
	if got := list(a); got.Dropped != 1 {
		t.Fatalf("v1 listing again dropped %d", got.Dropped)
	}
	if got := call(); got.Outcome != OutcomePass {
		t.Fatalf("call after listing v1 again: %s", got.Reason)
	}

	// The approvals change (add approved): one refresh later the same bytes decide anew.
	src.set("s", "add", ToolEvidence{Approved: d(other), Crawled: d(other)})
	tp.refresh(t)
	if got := list(a); got.Outcome != OutcomePass {
		t.Fatalf("after approving add: %v dropped %d", got.Outcome, got.Dropped)
	}
	// A refresh that reads the same evidence keeps the generation: still memoized.
	gen := tp.cache.entries["s"].snap.Load().gen
	tp.refresh(t)
	if got := tp.cache.entries["s"].snap.Load().gen; got != gen {
		t.Fatalf("an unchanged refresh moved the generation %d -> %d", gen, got)
	}
}

// TestListingMemoDisabled: a negative ListingMemoBytes turns the memo off.
func TestListingMemoDisabled(t *testing.T) {
	src := newMemSource()
	src.set("s", "echo", ToolEvidence{})
	tp := newTestProcessor(t, src, []string{"s"}, func(c *Config) { c.ListingMemoBytes = -1 })
	if tp.memo != nil {
		t.Fatal("memo present")
	}
	if got := tp.ListTools(t.Context(), []string{"s"}, []byte(`{"tools":[]}`)); got.Outcome != OutcomePass {
		t.Fatalf("empty listing: %v", got.Outcome)
	}
}
