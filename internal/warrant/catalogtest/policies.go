package catalogtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// AttestPolicy makes attester a warrant.PolicyAttester: it attests
// {"action":…,"by":…,"digest":…} signed "policy".
func (a *attester) AttestPolicy(_ context.Context, c warrant.PolicyClaim) ([]byte, []byte, error) {
	b, _ := json.Marshal(map[string]any{"action": c.Action, "by": c.Decider, "digest": c.Digest, "head": c.Head.Seq})
	return b, []byte("policy"), nil
}

// titled returns a raw tool object with a title.
func titled(name, description, title string) warrant.RawTool {
	return warrant.RawTool{Name: name, Raw: fmt.Appendf(nil, `{"name":%q,"title":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, title, description)}
}

// testServiceReviewPolicies: review policies over the driver. A signed policy is stored
// with its signer and audit entry; a crawl then approves, by the policy, a title-only
// change to an approved tool (one write, its audit entry naming the policy's digest and
// what was graded) and leaves a reworded description, a change on another server and a
// new tool pending; the set is check-and-set (a stale or invalid set is refused, nothing
// written); a second policy of the same name, a CRITICAL grade or more than MaxPolicies
// are refused; after the policy is revoked a title-only change stays pending.
func testServiceReviewPolicies(t *testing.T, c warrant.Catalog) {
	ctx := t.Context()
	mustAdd(t, c, server("s"))
	mustAdd(t, c, server("other"))
	svc, err := warrant.New(warrant.Config{Catalog: c, Auditor: chainer{}, Identity: "crawler", Now: func() time.Time { return t0 }, ApplyPolicies: true})
	if err != nil {
		t.Fatal(err)
	}
	ingest := func(srv string, tools ...warrant.RawTool) warrant.IngestResult {
		t.Helper()
		res, err := svc.Ingest(ctx, warrant.Listing{Server: srv, Tools: tools})
		if err != nil || res.PolicyError != "" {
			t.Fatalf("ingest %s: %v %s", srv, err, res.PolicyError)
		}
		return res
	}
	approve := func(srv string, nv warrant.NewVersion) {
		t.Helper()
		if _, err := svc.DecideAs(ctx, warrant.DecisionRequest{Server: srv, Tool: nv.Tool, Digest: nv.Digest, Kind: warrant.DecisionApproved}, &attester{}); err != nil {
			t.Fatal(err)
		}
	}
	first := ingest("s", titled("a", "Add numbers", "Add"), titled("b", "Read a file", "Read"))
	for _, nv := range first.New {
		approve("s", nv)
	}
	for _, nv := range ingest("other", titled("a", "Add numbers", "Add")).New {
		approve("other", nv)
	}

	if set, err := c.Policies(ctx); err != nil || set.Seq != 0 || len(set.Policies) != 0 {
		t.Fatalf("Policies of a catalog with none: %+v %v", set, err)
	}
	p := warrant.ReviewPolicy{Name: "titles", Note: "titles are not read by the model",
		Accept: []warrant.PolicyRule{{Server: "s", MaxGrade: warrant.Warning, Rules: []warrant.Rule{warrant.RuleTitleChanged}}}}
	added, err := svc.AddPolicy(ctx, p, &attester{})
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := p.Digest()
	set, err := c.Policies(ctx)
	if err != nil || set.Seq != 1 || len(set.Policies) != 1 || set.Policies[0].Digest != pd || set.Policies[0].Signer != "bob" ||
		set.Policies[0].Entry != added.AuditHead.Seq || set.Policies[0].Policy.Note != p.Note || !set.Policies[0].AddedAt.Equal(t0) {
		t.Fatalf("after AddPolicy: %+v %v (added %+v)", set, err, added)
	}
	recs, err := c.AuditRecords(ctx, added.AuditHead.Seq-1, 1)
	if err != nil || len(recs) != 1 || recs[0].Type != warrant.EventPolicyAdded || recs[0].Actor != "bob" || !strings.Contains(string(recs[0].Body), string(pd)) {
		t.Fatalf("the policy's audit entry: %+v %v", recs, err)
	}

	// The set is check-and-set, and an invalid one is refused; nothing is written.
	wantErr(t, "a stale policy set", c.SetPolicies(ctx, warrant.PolicySet{Seq: 1, Policies: []warrant.ActivePolicy{}}, warrant.AuditAppend{}), warrant.ErrConflict)
	wantErr(t, "a policy set with a wrong digest", c.SetPolicies(ctx, warrant.PolicySet{Seq: 2, Policies: []warrant.ActivePolicy{{Policy: p, Digest: warrant.Digest("sha256:" + strings.Repeat("0", 64))}}}, warrant.AuditAppend{}), warrant.ErrInvalid)
	if set2, err := c.Policies(ctx); err != nil || set2.Seq != 1 || len(set2.Policies) != 1 {
		t.Fatalf("a refused set changed the policies: %+v %v", set2, err)
	}
	if _, err := svc.AddPolicy(ctx, p, &attester{}); !errors.Is(err, warrant.ErrConflict) {
		t.Errorf("the same policy twice: %v, want ErrConflict", err)
	}
	other := p
	other.Note = "another"
	if _, err := svc.AddPolicy(ctx, other, &attester{}); !errors.Is(err, warrant.ErrConflict) || !strings.Contains(err.Error(), "revoke it first") {
		t.Errorf("another policy of the same name: %v, want ErrConflict", err)
	}
	crit := warrant.ReviewPolicy{Name: "words", Accept: []warrant.PolicyRule{{Server: "s", MaxGrade: warrant.Critical, Rules: []warrant.Rule{warrant.RuleDescriptionChanged}}}}
	if _, err := svc.AddPolicy(ctx, crit, &attester{}); !errors.Is(err, warrant.ErrInvalid) {
		t.Errorf("a CRITICAL policy: %v, want ErrInvalid", err)
	}

	// A title-only change is approved by the policy; a reworded description, the same
	// title change on another server and a new tool are left for a person.
	before, _ := c.AuditHead(ctx)
	res := ingest("s", titled("a", "Add numbers", "Add two numbers"), titled("b", "Read any file on this machine", "Read"), titled("c", "New", "C"))
	if len(res.ByPolicy) != 1 || res.ByPolicy[0].Tool != "a" || res.ByPolicy[0].Policy.Digest != pd || res.ByPolicy[0].Policy.Grade != warrant.Warning ||
		len(res.ByPolicy[0].Policy.Rules) != 1 || res.ByPolicy[0].Policy.Rules[0] != warrant.RuleTitleChanged {
		t.Fatalf("ByPolicy: %+v", res.ByPolicy)
	}
	aps, err := c.Approvals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string]warrant.Approval{}
	for _, ap := range aps {
		byTool[ap.Server+"/"+ap.Tool] = ap
	}
	if ap := byTool["s/a"]; ap.Digest != res.ByPolicy[0].Digest || ap.By != "policy:titles" {
		t.Errorf("s/a after the crawl: %+v, want approved by policy:titles at %s", ap, res.ByPolicy[0].Digest)
	}
	if ap := byTool["s/b"]; ap.Digest != first.New[1].Digest {
		t.Errorf("s/b (reworded) after the crawl: %+v, want still %s", ap, first.New[1].Digest)
	}
	if _, ok := byTool["s/c"]; ok {
		t.Error("a new tool was approved by a policy")
	}
	recs, err = c.AuditRecords(ctx, before.Seq, 100)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	var body struct {
		Expect warrant.Digest          `json:"expect"`
		Policy *warrant.PolicyApproval `json:"policy"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil || last.Type != string(warrant.DecisionApproved) || last.Actor != "policy:titles" ||
		body.Policy == nil || body.Policy.Digest != pd || body.Policy.Baseline != first.New[0].Digest || body.Expect != first.New[0].Digest {
		t.Fatalf("the approval's audit entry: %+v %s %v", last, last.Body, err)
	}
	if res := ingest("other", titled("a", "Add numbers", "Add two numbers")); len(res.ByPolicy) != 0 {
		t.Errorf("a policy for server s approved a change on server other: %+v", res.ByPolicy)
	}

	// Revoked: a title-only change stays pending.
	if _, err := svc.RevokePolicy(ctx, "nosuch", &attester{}); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("revoking an unknown policy: %v", err)
	}
	if _, err := svc.RevokePolicy(ctx, pd.Hex()[:12], &attester{}); err != nil {
		t.Fatal(err)
	}
	if set, err := c.Policies(ctx); err != nil || set.Seq != 2 || len(set.Policies) != 0 {
		t.Fatalf("after RevokePolicy: %+v %v", set, err)
	}
	if res := ingest("s", titled("a", "Add numbers", "Add 2 numbers"), titled("b", "Read any file on this machine", "Read"), titled("c", "New", "C")); len(res.ByPolicy) != 0 {
		t.Errorf("a revoked policy approved: %+v", res.ByPolicy)
	}

	// At most MaxPolicies are active.
	for i := range warrant.MaxPolicies {
		q := warrant.ReviewPolicy{Name: fmt.Sprintf("p%02d", i), Accept: []warrant.PolicyRule{{Server: "*", MaxGrade: warrant.Info, Rules: []warrant.Rule{warrant.RuleIconsChanged}}}}
		if _, err := svc.AddPolicy(ctx, q, &attester{}); err != nil {
			t.Fatalf("policy %d: %v", i, err)
		}
	}
	q := warrant.ReviewPolicy{Name: "one-too-many", Accept: []warrant.PolicyRule{{Server: "*", MaxGrade: warrant.Info, Rules: []warrant.Rule{warrant.RuleIconsChanged}}}}
	if _, err := svc.AddPolicy(ctx, q, &attester{}); !errors.Is(err, warrant.ErrInvalid) {
		t.Errorf("policy %d: %v, want ErrInvalid", warrant.MaxPolicies+1, err)
	}
}
