package enforce

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestApprovalChangesTakeEffectInOneRefresh: a re-approval, a rejection and a rollback each
// change decisions after exactly one refresh round, with no other event needed.
func TestApprovalChangesTakeEffectInOneRefresh(t *testing.T) {
	v1 := []byte(`{"name":"echo","description":"Echoes","inputSchema":{}}`)
	v2 := []byte(`{"name":"echo","description":"Echoes, reworded","inputSchema":{}}`)
	src := newMemSource()
	src.set("s", "echo", ToolEvidence{Approved: d(v1), Crawled: d(v1)})
	tp := newTestProcessor(t, src, []string{"s"}, nil)
	list := func(raw []byte) Decision {
		return tp.ListTools(t.Context(), []string{"s"}, []byte(`{"tools":[`+string(raw)+`]}`))
	}
	call := func() Decision { return tp.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"echo"}`)) }

	// The upstream rewords the description: the listing drops it, calls are denied.
	src.set("s", "echo", ToolEvidence{Approved: d(v1), Crawled: d(v2)})
	tp.refresh(t)
	if got := list(v2); got.Outcome != OutcomeMutated || got.Dropped != 1 {
		t.Fatalf("drifted listing: %v", got.Outcome)
	}
	if got := call(); got.Cause != CauseDrifted {
		t.Fatalf("drifted call: %v", got.Cause)
	}
	// Re-approval of v2: one refresh later it is listed and callable.
	src.set("s", "echo", ToolEvidence{Approved: d(v2), Crawled: d(v2)})
	if got := list(v2); got.Outcome != OutcomeMutated {
		t.Fatal("re-approval took effect before any refresh")
	}
	tp.refresh(t)
	if got := list(v2); got.Outcome != OutcomePass {
		t.Fatalf("after one refresh, re-approved tool: %v %s", got.Outcome, got.Reason)
	}
	if got := call(); got.Outcome != OutcomePass {
		t.Fatalf("after one refresh, re-approved call: %s", got.Reason)
	}
	// Rejection: gone after one refresh.
	src.set("s", "echo", ToolEvidence{Crawled: d(v2)})
	tp.refresh(t)
	if got := call(); got.Cause != CauseUnapproved {
		t.Fatalf("after one refresh, rejected: %v", got.Cause)
	}
	// Rollback to v1 while the upstream serves v1 again.
	src.set("s", "echo", ToolEvidence{Approved: d(v1), Crawled: d(v1)})
	tp.refresh(t)
	if got := list(v1); got.Outcome != OutcomePass {
		t.Fatalf("after one refresh, rolled back: %v", got.Outcome)
	}
	if got := call(); got.Outcome != OutcomePass {
		t.Fatalf("after one refresh, rolled-back call: %s", got.Reason)
	}
}

// TestApprovalRefreshRealTime: with the real ticker, an approval edited in the evidence
// file is in force within one refresh interval (plus scheduling slack).
func TestApprovalRefreshRealTime(t *testing.T) {
	const interval = 200 * time.Millisecond
	v1 := []byte(`{"name":"echo","inputSchema":{}}`)
	path := filepath.Join(t.TempDir(), "evidence.json")
	write := func(approved string) {
		doc := &EvidenceDoc{Servers: []EvidenceServer{{Name: "s", Tools: []EvidenceTool{{Name: "echo", Approved: approved, Crawled: d(v1)}}}}}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, doc.Marshal(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	p, err := New(Config{Servers: []string{"s"}, Source: &EvidenceFile{Path: path}, Refresh: interval, Staleness: 10 * interval})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	defer p.Close(context.Background())
	listing := []byte(`{"tools":[` + string(v1) + `]}`)
	if got := p.ListTools(t.Context(), []string{"s"}, listing); got.Outcome != OutcomeMutated {
		t.Fatalf("unapproved tool listed: %v", got.Outcome)
	}
	write(d(v1))
	changed := time.Now()
	for p.ListTools(t.Context(), []string{"s"}, listing).Outcome != OutcomePass {
		if time.Since(changed) > 10*interval {
			t.Fatalf("approval not in force after %s", time.Since(changed))
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(changed)
	t.Logf("approval in force %s after the edit (refresh interval %s)", took.Round(time.Millisecond), interval)
	// One interval, plus slack for a loaded machine (the race detector, parallel packages):
	// TestApprovalChangesTakeEffectInOneRefresh proves the one-round bound exactly.
	if took > interval+300*time.Millisecond {
		t.Errorf("approval took %s, more than one refresh interval (%s) plus slack", took, interval)
	}
}
