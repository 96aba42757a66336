package iamattest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestAttester: the principal decides unless it is missing or the crawl role, and what it
// attests passes Check, the audit-verify step for IAM-attested decisions.
func TestAttester(t *testing.T) {
	const crawl = "arn:aws:iam::123456789012:role/dev-toolwarrant-crawl"
	for _, tc := range []struct {
		principal string
		ok        bool
	}{
		{"arn:aws:sts::123456789012:assumed-role/approver/alice", true},
		{"", false},
		{"arn:aws:sts::123456789012:assumed-role/dev-toolwarrant-crawl/fn", false},
	} {
		who, err := Attester{Principal: tc.principal, CrawlRole: crawl}.Decider(t.Context(), warrant.Genesis())
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, warrant.ErrForbidden) || tc.ok && who != tc.principal {
			t.Errorf("Decider(%q) = %q, %v", tc.principal, who, err)
		}
	}

	a := Attester{Principal: "arn:aws:sts::123456789012:assumed-role/approver/alice", RequestID: "req-1", CrawlRole: crawl}
	head := warrant.AuditHead{Seq: 4, Hash: strings.Repeat("c", 64)}
	d := warrant.Digest("sha256:" + strings.Repeat("ab", 32))
	stmt, sig, err := a.Attest(t.Context(), warrant.Claim{Kind: warrant.DecisionApproved, Server: "s", Tool: "t", Digest: d,
		Decider: a.Principal, Head: head, At: time.Date(2026, 10, 12, 9, 30, 0, 0, time.UTC)})
	if err != nil || string(sig) != SignaturePrefix+"req-1" {
		t.Fatalf("Attest: %s, %v", sig, err)
	}
	event, _ := json.Marshal(map[string]any{"server": "s", "tool": "t", "digest": d, "acceptedSuspicious": false,
		"statement": json.RawMessage(stmt), "signature": string(sig)})
	r := warrant.AuditRecord{Seq: 5, Type: string(warrant.DecisionApproved), Actor: a.Principal, PrevHash: head.Hash}
	if p := Checker(nil, crawl)(r, event); len(p) != 0 {
		t.Errorf("what the attester attests does not verify: %v", p)
	}
}
