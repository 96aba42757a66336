package warrant

import (
	"context"
	"fmt"
	"slices"
)

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

// CheckDecision applies the rules every decision follows, wherever it is made (the CLI
// with an SSH key, the approvals API with an IAM principal), before anything is signed:
// d must be a recorded version of the tool (ErrNotFound); a version with suspicious text
// can only be rejected unless acceptSuspicious (ErrSuspicious); no identity that crawled d
// may approve or roll back to it (ErrSeparation; same compares identities, nil means
// equal strings); a rollback goes to an earlier approved digest that is not the approved
// one now (ErrConflict). It records nothing: Decide does, over the head the decider read.
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
