package catalogtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// attester is a warrant.Attester of function fields; nil fields decide as "bob", compare
// exactly and attest {"by":…} signed "sig".
type attester struct {
	decider func(ctx context.Context, head warrant.AuditHead) (string, error)
	attest  func(ctx context.Context, c warrant.Claim) ([]byte, []byte, error)
	claims  []warrant.Claim
	bulk    []warrant.BulkClaim
}

func (a *attester) Decider(ctx context.Context, head warrant.AuditHead) (string, error) {
	if a.decider != nil {
		return a.decider(ctx, head)
	}
	return "bob", nil
}

func (a *attester) Same(x, y string) bool { return x == y }

func (a *attester) Attest(ctx context.Context, c warrant.Claim) ([]byte, []byte, error) {
	a.claims = append(a.claims, c)
	if a.attest != nil {
		return a.attest(ctx, c)
	}
	b, _ := json.Marshal(map[string]any{"by": c.Decider, "head": c.Head.Seq})
	return b, []byte("sig"), nil
}

// testServiceDecideAs: the decision use case over the driver. The attester's refusal
// and the rules' refusals record nothing; a decision is attested over the head read and
// recorded with the attester's statement and signature, and its result names the new head;
// approving the approved digest attests and records nothing; a log or an approval that
// moved between the check and the write is refused as ErrStale (and ErrConflict), with
// nothing recorded.
func testServiceDecideAs(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	// Crawled by "crawler", recorded without audit entries: the decisions chain from genesis.
	known := map[warrant.VersionKey]bool{}
	mustAdd(t, c, server("s"))
	mustRecord(t, c, crawl("s", 1, known, "a", "A"))
	_, dA := Def("a", "A")
	svc, err := warrant.New(warrant.Config{Catalog: c, Auditor: chainer{}, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	head := func() warrant.AuditHead {
		t.Helper()
		h, err := c.AuditHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	approve := func(d warrant.Digest) warrant.DecisionRequest {
		return warrant.DecisionRequest{Server: "s", Tool: "a", Digest: d, Kind: warrant.DecisionApproved, Note: "n"}
	}
	unchanged := func(what string, before warrant.AuditHead) {
		t.Helper()
		if h := head(); h != before {
			t.Errorf("%s: the audit head moved from %d to %d", what, before.Seq, h.Seq)
		}
	}

	h0 := head()
	refuse := errors.New("not on the list")
	if _, err := svc.DecideAs(ctx, approve(dA), &attester{decider: func(context.Context, warrant.AuditHead) (string, error) { return "", refuse }}); !errors.Is(err, refuse) {
		t.Errorf("refused by the attester: %v", err)
	}
	if _, err := svc.DecideAs(ctx, approve(dA), &attester{decider: func(context.Context, warrant.AuditHead) (string, error) { return "crawler", nil }}); !errors.Is(err, warrant.ErrSeparation) || errors.Is(err, warrant.ErrStale) {
		t.Errorf("the crawler approving: %v", err)
	}
	unchanged("refusals", h0)

	att := &attester{}
	res, err := svc.DecideAs(ctx, approve(dA), att)
	if err != nil {
		t.Fatal(err)
	}
	h1 := head()
	if res.Unchanged || res.AuditHead != h1 || h1.Seq != h0.Seq+1 || res.Decision.Actor != "bob" || len(att.claims) != 1 || att.claims[0].Head != h0 || att.claims[0].Decider != "bob" {
		t.Errorf("approval: %+v, claims %+v, head %d → %d", res, att.claims, h0.Seq, h1.Seq)
	}
	recs, err := c.AuditRecords(ctx, h0.Seq, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("audit records after the approval: %v, %v", recs, err)
	}
	var body struct { // the event as the service recorded it (chainer keeps it as the body)
		Statement json.RawMessage `json:"statement"`
		Signature string          `json:"signature"`
		Note      string          `json:"note"`
	}
	_ = json.Unmarshal(recs[0].Body, &body)
	if recs[0].Type != string(warrant.DecisionApproved) || recs[0].Actor != "bob" || body.Signature != "sig" || body.Note != "n" || string(body.Statement) != `{"by":"bob","head":`+jsonInt(h0.Seq)+`}` {
		t.Errorf("the decision's audit record: %+v %s", recs[0], recs[0].Body)
	}
	if a := approval(t, c, "s", "a"); a.Digest != dA || a.By != "bob" {
		t.Errorf("approval after DecideAs: %+v", a)
	}

	att = &attester{}
	if res, err := svc.DecideAs(ctx, approve(dA), att); err != nil || !res.Unchanged || len(att.claims) != 0 || res.AuditHead != h1 {
		t.Errorf("approving the approved digest: %+v, %v, %d claims", res, err, len(att.claims))
	}
	unchanged("approving the approved digest", h1)

	if _, err := svc.DecideAs(ctx, warrant.DecisionRequest{Server: "s", Tool: "a", Digest: dA, Kind: warrant.DecisionRejected, ReadHead: &h0}, &attester{}); !errors.Is(err, warrant.ErrStale) || !errors.Is(err, warrant.ErrConflict) {
		t.Errorf("deciding over a head that moved on: %v", err)
	}
	unchanged("a stale head", h1)

	// Someone else decides between this decider's check and its write.
	mustRecord(t, c, crawl("s", 2, known, "a", "A2"))
	_, dA2 := Def("a", "A2")
	h2 := head()
	race := &attester{attest: func(ctx context.Context, cl warrant.Claim) ([]byte, []byte, error) {
		if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "a", Digest: dA, Kind: warrant.DecisionRejected, Actor: "carol", Expect: dA}); err != nil {
			t.Errorf("the racing decision: %v", err)
		}
		return []byte(`{}`), []byte("sig"), nil
	}}
	if _, err := svc.DecideAs(ctx, approve(dA2), race); !errors.Is(err, warrant.ErrStale) || !errors.Is(err, warrant.ErrConflict) {
		t.Errorf("a decision that lost a race: %v", err)
	}
	if h := head(); h.Seq != h2.Seq+1 {
		t.Errorf("after the race the log has %d entries after %d, want only the racing decision's", h.Seq-h2.Seq, h2.Seq)
	}
	if a := approval(t, c, "s", "a"); a.Digest == dA2 {
		t.Errorf("the losing decision was recorded: %+v", a)
	}
}

// approval returns the tool's approval (zero if none).
func approval(t *testing.T, c warrant.Catalog, server, tool string) warrant.Approval {
	t.Helper()
	as, err := c.Approvals(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.Server == server && a.Tool == tool {
			return a
		}
	}
	return warrant.Approval{}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
