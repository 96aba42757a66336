package trust

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// auditLog is an in-memory AuditLog.
type auditLog []warrant.AuditRecord

func (l auditLog) AuditHead(context.Context) (warrant.AuditHead, error) {
	if len(l) == 0 {
		return warrant.Genesis(), nil
	}
	return warrant.AuditHead{Seq: l[len(l)-1].Seq, Hash: l[len(l)-1].Hash}, nil
}

func (l auditLog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	var out []warrant.AuditRecord
	for _, r := range l {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// record makes the audit record of a trust change (its body as audit writes it:
// {"event": …}).
func record(seq int64, prev string, c Change) warrant.AuditRecord {
	ev, _ := json.Marshal(c)
	body, _ := json.Marshal(map[string]json.RawMessage{"event": ev})
	return warrant.AuditRecord{Seq: seq, Type: EventTrustChanged, PrevHash: prev, Hash: strings.Repeat(string(rune('a'+seq)), 64), Body: body}
}

// TestSSHAttester: the decider is the principal of the signer's key on the trust list as
// it stands at the head read (ErrNoList before the list, *UntrustedError for another key),
// and what it attests passes State.Step, the audit-verify step for SSH-signed decisions.
func TestSSHAttester(t *testing.T) {
	ctx := t.Context()
	alice, eve := newSigner(t), newSigner(t)
	log := auditLog{record(1, warrant.GenesisHash, Change{Action: "init", List: List{Keys: []Key{key(t, "alice", alice)}}})}
	head, _ := log.AuditHead(ctx)

	a := SSHAttester{Signer: alice, Log: log}
	if _, err := a.Decider(ctx, warrant.Genesis()); !errors.Is(err, ErrNoList) || !errors.Is(err, warrant.ErrForbidden) {
		t.Errorf("before the list: %v", err)
	}
	var ue *UntrustedError
	if _, err := (SSHAttester{Signer: eve, Log: log}).Decider(ctx, head); !errors.As(err, &ue) || ue.Fingerprint != eve.Public().Fingerprint() {
		t.Errorf("an untrusted key: %v", err)
	}
	who, err := a.Decider(ctx, head)
	if err != nil || who != "alice" {
		t.Fatalf("Decider = %q, %v", who, err)
	}

	d := warrant.Digest("sha256:" + strings.Repeat("ab", 32))
	stmt, sig, err := a.Attest(ctx, warrant.Claim{Kind: warrant.DecisionApproved, Server: "s", Tool: "t", Digest: d, Decider: who, Head: head, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := Load(ctx, log)
	if err != nil || st.List == nil {
		t.Fatalf("Load: %+v, %v", st, err)
	}
	event, _ := json.Marshal(map[string]any{"server": "s", "tool": "t", "digest": d, "acceptedSuspicious": false,
		"statement": json.RawMessage(stmt), "signature": string(sig)})
	r := warrant.AuditRecord{Seq: 2, Type: string(warrant.DecisionApproved), Actor: "alice", PrevHash: head.Hash}
	if p := st.Step(r, event); len(p) != 0 {
		t.Errorf("what the attester attests does not verify: %v", p)
	}
}
