package lockerclient

import (
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

func TestReadDemoPad(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	c := serve(t, d.Handler)
	ch, err := c.Read(t.Context(), locker.DemoPadID, "", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Head != locker.DemoHead || len(ch.Blocks) != 3 || ch.Integrity.Verdict != VerdictInternalConsistencyOnly {
		t.Fatalf("chain = %+v", ch)
	}
	head := locker.DemoHead
	ch, err = c.Read(t.Context(), locker.DemoPadID, "", ReadOptions{ExpectedHead: &head})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Integrity.Verdict != VerdictTrustedHeadMatch {
		t.Fatalf("verdict = %s", ch.Integrity.Verdict)
	}
	txt, ok := ch.Blocks[1].Text()
	if !ok || txt != "Permanent read-only demo handoff pad.\n" {
		t.Fatalf("text %q", txt)
	}
}
