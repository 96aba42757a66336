package warrant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PolicyAttester vouches for who adds or revokes a review policy and signs the change
// (trust.SSHAttester: a key on the trust list).
type PolicyAttester interface {
	// Decider returns the identity that signs, as of head; it refuses one who may not.
	Decider(ctx context.Context, head AuditHead) (string, error)
	// AttestPolicy returns the statement the signer stands behind (canonical JSON naming
	// the change, the policy, its digest and the head read) and the signature over it.
	AttestPolicy(ctx context.Context, c PolicyClaim) (statement, signature []byte, err error)
}

// Policy change actions.
const (
	PolicyAdd    = "add"
	PolicyRevoke = "revoke"
)

// PolicyClaim is what a [PolicyAttester] attests.
type PolicyClaim struct {
	// Action is PolicyAdd or PolicyRevoke.
	Action string
	// Policy is the policy added, or the one revoked.
	Policy ReviewPolicy
	Digest Digest
	// Decider is the identity Decider returned; Head the audit head read; At when.
	Decider string
	Head    AuditHead
	At      time.Time
}

// PolicyResult is what AddPolicy and RevokePolicy did.
type PolicyResult struct {
	Action string       `json:"action"`
	Policy ActivePolicy `json:"policy"`
	// By is who signed the change; AuditHead the head after it.
	By        string    `json:"by"`
	AuditHead AuditHead `json:"auditHead"`
}

// Policies returns the active review policies.
func (s *Service) Policies(ctx context.Context) (PolicySet, error) { return s.cat.Policies(ctx) }

// AddPolicy signs and adds a review policy: p must be valid, its name not active, and no
// more than MaxPolicies active after it (ErrConflict, ErrInvalid). The signer must be on
// the trust list at the head read; the change is recorded only if that is still the head.
func (s *Service) AddPolicy(ctx context.Context, p ReviewPolicy, att PolicyAttester) (PolicyResult, error) {
	if err := p.Validate(); err != nil {
		return PolicyResult{}, err
	}
	d, err := p.Digest()
	if err != nil {
		return PolicyResult{}, err
	}
	return s.changePolicy(ctx, PolicyAdd, att, func(set PolicySet) (ActivePolicy, PolicySet, error) {
		if ap, ok := set.Find(p.Name); ok {
			if ap.Digest == d {
				return ap, set, fmt.Errorf("%w: policy %s (%s) is already active", ErrConflict, p.Name, d.Short())
			}
			return ap, set, fmt.Errorf("%w: a policy named %s is active (%s): revoke it first, or give this one another name", ErrConflict, p.Name, ap.Digest.Short())
		}
		if len(set.Policies) >= MaxPolicies {
			return ActivePolicy{}, set, fmt.Errorf("%w: %d policies are active, the most there may be; revoke one first", ErrInvalid, len(set.Policies))
		}
		ap := ActivePolicy{Policy: p, Digest: d}
		next := PolicySet{Seq: set.Seq + 1, Policies: append(slices.Clone(set.Policies), ap)}
		slices.SortFunc(next.Policies, func(a, b ActivePolicy) int { return strings.Compare(a.Policy.Name, b.Policy.Name) })
		return ap, next, nil
	})
}

// RevokePolicy signs and revokes the active policy named by name or digest (ErrNotFound
// when none is). From the next crawl on it accepts nothing; what it approved stays
// approved, as any approval does until it is rejected.
func (s *Service) RevokePolicy(ctx context.Context, nameOrDigest string, att PolicyAttester) (PolicyResult, error) {
	return s.changePolicy(ctx, PolicyRevoke, att, func(set PolicySet) (ActivePolicy, PolicySet, error) {
		ap, ok := set.Find(nameOrDigest)
		if !ok {
			return ActivePolicy{}, set, fmt.Errorf("no active policy is named %q ('toolwarrant policy list' shows them): %w", nameOrDigest, ErrNotFound)
		}
		next := PolicySet{Seq: set.Seq + 1, Policies: slices.DeleteFunc(slices.Clone(set.Policies), func(x ActivePolicy) bool { return x.Digest == ap.Digest })}
		return ap, next, nil
	})
}

// changePolicy reads the head and the set, applies change, has att sign it over the head
// read and writes the set with its audit entry, once: a moved head or set is ErrStale.
func (s *Service) changePolicy(ctx context.Context, action string, att PolicyAttester,
	change func(PolicySet) (ActivePolicy, PolicySet, error)) (PolicyResult, error) {
	if att == nil {
		return PolicyResult{}, errors.New("policy: no attester")
	}
	if s.auditor == nil {
		return PolicyResult{}, errors.New("policy: a policy change needs the audit log")
	}
	head, err := s.cat.AuditHead(ctx)
	if err != nil {
		return PolicyResult{}, err
	}
	who, err := att.Decider(ctx, head)
	if err != nil {
		return PolicyResult{}, err
	}
	if who == "" || strings.HasPrefix(who, PolicyActorPrefix) {
		return PolicyResult{}, fmt.Errorf("%w: the attester named no person", ErrForbidden)
	}
	set, err := s.cat.Policies(ctx)
	if err != nil {
		return PolicyResult{}, err
	}
	ap, next, err := change(set)
	if err != nil {
		return PolicyResult{}, err
	}
	at := s.clock()
	stmt, sig, err := att.AttestPolicy(ctx, PolicyClaim{Action: action, Policy: ap.Policy, Digest: ap.Digest, Decider: who, Head: head, At: at})
	if err != nil {
		return PolicyResult{}, err
	}
	if !json.Valid(stmt) {
		return PolicyResult{}, fmt.Errorf("%w: the policy statement is not JSON", ErrInvalid)
	}
	typ := EventPolicyAdded
	if action == PolicyRevoke {
		typ = EventPolicyRevoked
	}
	res := PolicyResult{Action: action, By: who, AuditHead: head}
	err = s.auditedFrom(ctx, action+" policy "+ap.Policy.Name, 1, &head, func() ([]Event, error) {
		return []Event{{Type: typ, Actor: who, At: at, Body: mustJSON(map[string]any{
			"name": ap.Policy.Name, "digest": ap.Digest, "policy": ap.Policy, "statement": json.RawMessage(stmt), "signature": string(sig)})}}, nil
	}, func(a AuditAppend) error {
		if n := len(a.Records); n > 0 {
			res.AuditHead = AuditHead{Seq: a.Records[n-1].Seq, Hash: a.Records[n-1].Hash}
			if action == PolicyAdd {
				for i := range next.Policies {
					if next.Policies[i].Digest == ap.Digest {
						next.Policies[i].Signer, next.Policies[i].AddedAt, next.Policies[i].Entry = who, at.UTC(), a.Records[n-1].Seq
						ap = next.Policies[i]
					}
				}
			}
		}
		return s.cat.SetPolicies(ctx, next, a)
	})
	if errors.Is(err, ErrConflict) {
		return PolicyResult{}, staleError{err}
	}
	if err != nil {
		return PolicyResult{}, err
	}
	res.Policy = ap
	return res, nil
}

// applyPolicies approves, as decisions by the active policies, the new versions of
// approved tools a policy accepts: graded against the approved digest, not CRITICAL,
// without suspicious text, every rule within one of the policy's accept rules. The
// approvals are written MaxBulk at a time, each under Decide's check-and-set (the
// approval is still the baseline); a write that loses a race leaves its tools pending.
func (s *Service) applyPolicies(ctx context.Context, server string, nvs []NewVersion, approved map[string]Digest) ([]PolicyDecision, error) {
	set, err := s.cat.Policies(ctx)
	if err != nil || len(set.Policies) == 0 {
		return nil, err
	}
	var ds []Decision
	var out []PolicyDecision
	at := s.clock()
	for _, nv := range nvs {
		base := approved[nv.Tool]
		if base == "" || nv.Baseline != base || nv.Digest == base {
			continue
		}
		rules := nv.Drift.Rules()
		for _, ap := range set.Policies {
			i, ok := ap.Policy.Accepts(server, nv.Drift.Grade, rules, nv.Inspection.Suspicious())
			if !ok {
				continue
			}
			pa := PolicyApproval{Name: ap.Policy.Name, Digest: ap.Digest, Accept: i, Baseline: base, Grade: nv.Drift.Grade, Rules: rules}
			ds = append(ds, Decision{Server: server, Tool: nv.Tool, Digest: nv.Digest, Kind: DecisionApproved, Actor: PolicyActorPrefix + ap.Policy.Name,
				At: at, Expect: base, Note: fmt.Sprintf("accepted by review policy %s (%s), signed by %s", ap.Policy.Name, ap.Digest.Short(), ap.Signer), Policy: &pa})
			out = append(out, PolicyDecision{Tool: nv.Tool, Digest: nv.Digest, Policy: pa})
			break
		}
	}
	var done []PolicyDecision
	for len(ds) > 0 {
		n := min(len(ds), MaxBulk)
		chunk := ds[:n]
		// Retried when the head moved (nothing is signed over it); a moved approval is
		// refused by DecideAll's check-and-set every time, and the chunk stays pending.
		err := s.audited(ctx, "approve by policy on "+server, func() ([]Event, error) {
			events := make([]Event, len(chunk))
			for i, d := range chunk {
				events[i] = Event{Type: string(DecisionApproved), Actor: d.Actor, At: d.At, Body: mustJSON(map[string]any{
					"server": d.Server, "tool": d.Tool, "digest": d.Digest, "expect": d.Expect, "acceptedSuspicious": false, "note": d.Note,
					"policy": d.Policy})}
			}
			return events, nil
		}, func(a AuditAppend) error { return s.cat.DecideAll(ctx, chunk, a) })
		if err != nil && !errors.Is(err, ErrConflict) {
			return done, err
		}
		if err == nil {
			done = append(done, out[:n]...)
		}
		ds, out = ds[n:], out[n:]
	}
	return done, nil
}
