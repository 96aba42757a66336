package warrant_test

import (
	"crypto"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func window(n int) warrant.DecisionWindow {
	w := warrant.DecisionWindow{Point: "proxy", Instance: "host/1", From: gwT0, To: gwT0.Add(60e9), Folded: 3}
	for i := range n {
		w.Records = append(w.Records, warrant.DecisionCount{Server: "wx", Tool: fmt.Sprintf("t%04d", i), Method: "tools/list",
			Digest: warrant.Digest("sha256:" + strings.Repeat("ab", 32)), Outcome: "allowed", Approvals: warrant.Digest("sha256:" + strings.Repeat("cd", 32)), Count: uint64(i + 1)})
	}
	return w
}

// TestRecordDecisions: a window is one signed entry per 200 records, read back whole by
// ParseDecisions, and the log verifies.
func TestRecordDecisions(t *testing.T) {
	e := newGwEnv(t)
	if err := e.svc.RecordDecisions(t.Context(), window(450)); err != nil {
		t.Fatal(err)
	}
	recs, err := e.cat.AuditRecords(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := warrant.ParseDecisions(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries for 450 records, want 3", len(entries))
	}
	total, folded := 0, uint64(0)
	for i, en := range entries {
		if en.Part != i+1 || en.Parts != 3 || en.Point != "proxy" || !en.To.Equal(gwT0.Add(60e9)) {
			t.Errorf("entry %d: %+v", i, en.DecisionWindow)
		}
		total += len(en.Records)
		folded += en.Folded
	}
	if total != 450 || folded != 3 || entries[2].Records[49].Tool != "t0449" || entries[2].Records[49].Count != 450 {
		t.Errorf("read back %d records, %d folded", total, folded)
	}
	if rep := audit.Verify(recs, audit.Options{Keys: map[string]crypto.PublicKey{e.key.KeyID(): e.key.Public()}}); !rep.OK() {
		t.Errorf("audit verify: %+v", rep)
	}
}

// TestRecordDecisionsRefusesMalformed: nothing is written for a window that is not well
// formed.
func TestRecordDecisionsRefusesMalformed(t *testing.T) {
	e := newGwEnv(t)
	head, _ := e.cat.AuditHead(t.Context())
	for name, mod := range map[string]func(*warrant.DecisionWindow){
		"no point":   func(w *warrant.DecisionWindow) { w.Point = "" },
		"backwards":  func(w *warrant.DecisionWindow) { w.To = w.From.Add(-1) },
		"outcome":    func(w *warrant.DecisionWindow) { w.Records[0].Outcome = "maybe" },
		"zero count": func(w *warrant.DecisionWindow) { w.Records[0].Count = 0 },
		"digest":     func(w *warrant.DecisionWindow) { w.Records[0].Digest = "sha256:XYZ" },
		"no method":  func(w *warrant.DecisionWindow) { w.Records[0].Method = "" },
	} {
		w := window(2)
		mod(&w)
		if err := e.svc.RecordDecisions(t.Context(), w); !errors.Is(err, warrant.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if now, _ := e.cat.AuditHead(t.Context()); now != head {
		t.Errorf("a refused window moved the head from %v to %v", head, now)
	}
}
