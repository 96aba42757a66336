package warrant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DecisionRequest is what a decider asks for: one decision on one exact digest of a tool.
type DecisionRequest struct {
	Server, Tool string
	// Digest is the exact digest decided (sha256: and all 64 hex digits).
	Digest Digest
	// Kind is approved, rejected or rolled_back.
	Kind DecisionKind
	// AcceptSuspicious decides although the version has suspicious text (recorded in the
	// attested statement).
	AcceptSuspicious bool
	// Note is free text recorded with the decision.
	Note string
	// ReadHead is the audit head the decider read (the approvals API: from the listing or
	// diff the caller was shown; a page: the head it rendered). Nil: the decider reads it
	// now, as the CLI does. The decision is recorded only if it is still the head.
	ReadHead *AuditHead
}

// Attester vouches for who makes a decision and attests what they decided: an SSH key on
// the trust list, signing with OpenSSH's SSHSIG (trust.SSHAttester, the CLI), or the
// caller's IAM principal that API Gateway verified (iamattest.Attester, the approvals API).
// The decision's audit entry records the statement and signature it returns.
type Attester interface {
	// Decider returns the identity that decides, as the audit log records it, as of head
	// (the audit head the decider read). It refuses someone who may not decide: a key not
	// on the trust list at head, the crawl role (ErrForbidden or the attester's own error).
	Decider(ctx context.Context, head AuditHead) (string, error)
	// Same reports whether two identities are the same person or role, for separation of
	// duties (a role and its sessions are one identity).
	Same(a, b string) bool
	// Attest returns the statement the decider stands behind (canonical JSON naming
	// server, tool, digest, decision and the audit head read) and the signature over it.
	Attest(ctx context.Context, c Claim) (statement, signature []byte, err error)
}

// Claim is what an [Attester] attests: a decision as checked, by whom, over which head.
type Claim struct {
	Kind               DecisionKind
	Server, Tool       string
	Digest             Digest
	AcceptedSuspicious bool
	// Decider is the identity Attester.Decider returned.
	Decider string
	// Head is the audit head the decider read.
	Head AuditHead
	// At is when the decision is made.
	At time.Time
}

// DecisionResult is what [Service.DecideAs] did.
type DecisionResult struct {
	// Decision is the decision as recorded (or, when Unchanged, as it would have been):
	// Actor is the decider.
	Decision Decision
	// Check is what the decision resolved to before it was attested.
	Check DecisionCheck
	// Unchanged is true when the digest was already the approved one: nothing was
	// attested or recorded.
	Unchanged bool
	// AuditHead is the head after the decision: its audit entry (the head read, when
	// Unchanged or without an Auditor).
	AuditHead AuditHead
}

// DecisionCheck is what a decision resolves to before the decider signs it.
type DecisionCheck struct {
	// Version is the exact version decided.
	Version VersionView
	// Approved is the tool's approved digest now ("" if none): the decision's Expect.
	Approved Digest
	// Unchanged is true when approving the digest that is already approved: there is
	// nothing to record.
	Unchanged bool
	// AcceptedSuspicious is true when the version has suspicious text and the decider
	// accepted it (recorded in the signed statement).
	AcceptedSuspicious bool
}

// DecideAs is the decision use case: every approve, reject and rollback goes through it,
// whoever decides (the CLI with an SSH key, the approvals API with an IAM principal). In
// order:
//
//  1. the audit head the decider read: req.ReadHead, else the head now;
//  2. who decides: att.Decider over that head (refusals are the attester's);
//  3. the rules: [Service.CheckDecision], reading the tool and the version once;
//  4. approving the approved digest again records nothing (Unchanged);
//  5. att.Attest over the decision as checked and the head read;
//  6. one write, chained from the head read: a moved head or approval is refused with an
//     error matching ErrStale and ErrConflict, and nothing is recorded.
func (s *Service) DecideAs(ctx context.Context, req DecisionRequest, att Attester) (DecisionResult, error) {
	switch req.Kind {
	case DecisionApproved, DecisionRejected, DecisionRolledBack:
	default:
		return DecisionResult{}, fmt.Errorf("%w: decision %q", ErrInvalid, req.Kind)
	}
	if att == nil {
		return DecisionResult{}, errors.New("decide: no attester")
	}
	head := req.ReadHead
	if head == nil {
		h, err := s.cat.AuditHead(ctx)
		if err != nil {
			return DecisionResult{}, err
		}
		head = &h
	}
	who, err := att.Decider(ctx, *head)
	if err != nil {
		return DecisionResult{}, err
	}
	if who == "" {
		return DecisionResult{}, fmt.Errorf("%w: the attester named no decider", ErrForbidden)
	}
	chk, err := s.CheckDecision(ctx, req.Server, req.Tool, req.Digest, req.Kind, req.AcceptSuspicious, who, att.Same)
	if err != nil {
		return DecisionResult{}, err
	}
	d := Decision{Server: req.Server, Tool: req.Tool, Digest: req.Digest, Kind: req.Kind, Actor: who, At: s.clock(),
		Expect: chk.Approved, AcceptedSuspicious: chk.AcceptedSuspicious, Note: req.Note, ReadHead: head}
	res := DecisionResult{Decision: d, Check: chk, Unchanged: chk.Unchanged, AuditHead: *head}
	if chk.Unchanged {
		return res, nil
	}
	d.Statement, d.Signature, err = att.Attest(ctx, Claim{Kind: d.Kind, Server: d.Server, Tool: d.Tool, Digest: d.Digest,
		AcceptedSuspicious: d.AcceptedSuspicious, Decider: who, Head: *head, At: d.At})
	if err != nil {
		return DecisionResult{}, err
	}
	after, err := s.record(ctx, d)
	if errors.Is(err, ErrConflict) {
		return DecisionResult{}, staleError{err}
	}
	if err != nil {
		return DecisionResult{}, err
	}
	res.Decision = d
	if after != nil {
		res.AuditHead = *after
	}
	return res, nil
}

// CheckDecision applies the rules every decision follows, wherever it is made (the CLI
// with an SSH key, the approvals API with an IAM principal), before anything is signed:
// d must be a recorded version of the tool (ErrNotFound); a version with suspicious text
// can only be rejected unless acceptSuspicious (ErrSuspicious); no identity that crawled d
// may approve or roll back to it (ErrSeparation; same compares identities, nil means
// equal strings); a rollback goes to an earlier approved digest that is not the approved
// one now (ErrConflict). It records nothing: [Service.DecideAs] calls it, then records the
// decision over the head the decider read.
func (s *Service) CheckDecision(ctx context.Context, server, tool string, d Digest, kind DecisionKind, acceptSuspicious bool,
	actor string, same func(a, b string) bool) (DecisionCheck, error) {
	if !d.Valid() {
		return DecisionCheck{}, fmt.Errorf("%w: digest %q: give the exact digest (sha256: and all 64 hex digits)", ErrInvalid, d)
	}
	tr, vs, err := s.tool(ctx, server, tool)
	if err != nil {
		return DecisionCheck{}, err
	}
	view, err := s.show(ctx, tr, vs, string(d))
	if err != nil || view.Version.Digest != d {
		return DecisionCheck{}, fmt.Errorf("server %q tool %q: %s is not a recorded version of this tool: %w", server, tool, d, ErrNotFound)
	}
	chk := DecisionCheck{Version: view, Approved: tr.Approved}
	suspicious := view.Inspection.Suspicious()
	if suspicious && !acceptSuspicious && kind != DecisionRejected {
		return chk, fmt.Errorf("server %q tool %q version %s has %s: %w", server, tool, d.Short(), view.Inspection.Summary(), ErrSuspicious)
	}
	chk.AcceptedSuspicious = suspicious && acceptSuspicious
	if kind != DecisionRejected {
		crawled, err := s.ObservedBy(ctx, server, tool, d)
		if err != nil {
			return chk, err
		}
		if same == nil {
			same = func(a, b string) bool { return a == b }
		}
		if slices.ContainsFunc(crawled, func(c string) bool { return same(c, actor) }) {
			return chk, fmt.Errorf("%s crawled this digest, so it cannot approve it too: %w", actor, ErrSeparation)
		}
	}
	switch kind {
	case DecisionApproved:
		chk.Unchanged = tr.Approved == d
	case DecisionRolledBack:
		// view.Decisions are the decisions on d.
		was := slices.ContainsFunc(view.Decisions, func(x Decision) bool { return x.Kind == DecisionApproved || x.Kind == DecisionRolledBack })
		if !was || tr.Approved == d {
			return chk, fmt.Errorf("server %q tool %q: %s is not an earlier approved digest to roll back to: %w", server, tool, d.Short(), ErrConflict)
		}
	}
	return chk, nil
}

// Decide records a decision as given, applying none of CheckDecision's rules and
// attesting nothing itself: the write under [Service.DecideAs], open to fixtures and
// tests that set up a catalog's state. Approved and rolled_back make d.Digest the approved
// digest, rejected clears it if it was d.Digest. d.Digest must be a recorded version
// (ErrNotFound) and d.Expect the approved digest the caller read (ErrConflict otherwise);
// At is set here when zero, Actor defaults to the service's identity.
func (s *Service) Decide(ctx context.Context, d Decision) error {
	switch d.Kind {
	case DecisionApproved, DecisionRejected, DecisionRolledBack:
	default:
		return fmt.Errorf("%w: decision %q", ErrInvalid, d.Kind)
	}
	if !d.Digest.Valid() {
		return fmt.Errorf("%w: digest %q", ErrInvalid, d.Digest)
	}
	if d.At.IsZero() {
		d.At = s.clock()
	}
	if d.Actor == "" {
		d.Actor = s.identity
	}
	if _, err := s.cat.Version(ctx, d.Server, d.Tool, d.Digest); err != nil {
		return fmt.Errorf("server %q tool %q: %s is not a recorded version: %w", d.Server, d.Tool, d.Digest, err)
	}
	_, err := s.record(ctx, d)
	return err
}

// record writes d with its audit entry, chained from d.ReadHead when set, and returns the
// head after it (nil without an Auditor).
func (s *Service) record(ctx context.Context, d Decision) (*AuditHead, error) {
	var after *AuditHead
	// One attempt: a conflict means the approval or the audit head moved since the decider
	// read them, and the decider must read again rather than have us decide for them.
	err := s.auditedFrom(ctx, "record decision", 1, d.ReadHead, func() ([]Event, error) {
		body := map[string]any{"server": d.Server, "tool": d.Tool, "digest": d.Digest, "expect": d.Expect,
			"acceptedSuspicious": d.AcceptedSuspicious, "note": d.Note}
		if len(d.Statement) > 0 {
			if !json.Valid(d.Statement) {
				return nil, fmt.Errorf("%w: the decision's statement is not JSON", ErrInvalid)
			}
			body["statement"] = json.RawMessage(d.Statement)
			body["signature"] = string(d.Signature)
		}
		return []Event{{Type: string(d.Kind), Actor: d.Actor, At: d.At, Body: mustJSON(body)}}, nil
	}, func(a AuditAppend) error {
		if err := s.cat.Decide(ctx, d, a); err != nil {
			return err
		}
		if n := len(a.Records); n > 0 {
			after = &AuditHead{Seq: a.Records[n-1].Seq, Hash: a.Records[n-1].Hash}
		}
		return nil
	})
	return after, err
}
