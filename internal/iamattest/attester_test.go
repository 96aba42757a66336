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

// TestBulkChecker: an IAM-attested bulk approval verifies as one statement over its
// consecutive entries, the statement naming the head before the first; entries cut short,
// out of order, or a later item without its first are problems.
func TestBulkChecker(t *testing.T) {
	const crawl = "arn:aws:iam::123456789012:role/dev-toolwarrant-crawl"
	a := Attester{Principal: "arn:aws:sts::123456789012:assumed-role/approver/alice", RequestID: "req-2", CrawlRole: crawl}
	head := warrant.AuditHead{Seq: 7, Hash: strings.Repeat("d", 64)}
	items := []warrant.BulkItem{{Tool: "a", Digest: warrant.Digest("sha256:" + strings.Repeat("01", 32))},
		{Tool: "b", Digest: warrant.Digest("sha256:" + strings.Repeat("02", 32))},
		{Tool: "c", Digest: warrant.Digest("sha256:" + strings.Repeat("03", 32))}}
	stmt, sig, err := a.AttestBulk(t.Context(), warrant.BulkClaim{Server: "s", Items: items, Decider: a.Principal, Head: head, At: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)})
	if err != nil || string(sig) != SignaturePrefix+"req-2" {
		t.Fatalf("AttestBulk: %s, %v", sig, err)
	}
	entry := func(i int) (warrant.AuditRecord, json.RawMessage) {
		event, _ := json.Marshal(map[string]any{"server": "s", "tool": items[i].Tool, "digest": items[i].Digest, "acceptedSuspicious": false,
			"statement": json.RawMessage(stmt), "signature": string(sig), "item": i, "items": len(items)})
		prev := head.Hash
		if i > 0 {
			prev = strings.Repeat(string(rune('e'+i)), 64)
		}
		return warrant.AuditRecord{Seq: head.Seq + 1 + int64(i), Type: string(warrant.DecisionApproved), Actor: a.Principal, PrevHash: prev}, event
	}
	other := warrant.AuditRecord{Seq: head.Seq + 3, Type: "server_added", Actor: "x", PrevHash: strings.Repeat("f", 64)}
	otherEvent := json.RawMessage(`{"server":"t"}`)
	for _, tc := range []struct {
		name  string
		order []int // item indexes; -1 is another entry
		bad   bool
	}{
		{"all three in order", []int{0, 1, 2}, false},
		{"cut short", []int{0, 1, -1}, true},
		{"a later item without its first", []int{1, 2}, true},
		{"out of order", []int{0, 2, 1}, true},
	} {
		check := Checker(nil, crawl)
		var problems []string
		for k, i := range tc.order {
			if i < 0 {
				problems = append(problems, check(other, otherEvent)...)
				continue
			}
			r, ev := entry(i)
			r.Seq = head.Seq + 1 + int64(k)
			if tc.order[0] != 0 && k == 0 {
				r.PrevHash = head.Hash // the entry right after the statement's head, but not item 0
			}
			problems = append(problems, check(r, ev)...)
		}
		if tc.bad != (len(problems) > 0) {
			t.Errorf("%s: problems %q", tc.name, problems)
		}
	}
}
