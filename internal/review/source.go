package review

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Source is what the page reads and where it sends decisions: the embedded catalog
// ([ServiceSource]) or the approvals API of an AWS deployment. Implementations return
// the warrant sentinels (ErrNotFound, ErrConflict, ErrStale, ErrSuspicious,
// ErrSeparation, ErrForbidden, ErrInvalid, ErrUnavailable), wrapped with context, so the
// page maps them to statuses in one place. They must be safe for concurrent use.
type Source interface {
	// Tools returns the audit head, read first, and then one row per tool (as
	// `toolwarrant list`).
	Tools(ctx context.Context) (warrant.AuditHead, []warrant.ToolRow, error)
	// Diff returns the graded diff of the tool's current version against its baseline
	// (the approved digest, else the previous one seen, else nothing), with the audit
	// head read before it.
	Diff(ctx context.Context, server, tool string) (warrant.AuditHead, warrant.DiffView, error)
	// RollbackTargets returns the digests a rollback of the tool may go to: approved
	// before and not approved now, newest decision first. Nil when the source cannot
	// tell (the page then offers no rollback for the tool).
	RollbackTargets(ctx context.Context, server, tool string, approved warrant.Digest) ([]warrant.Digest, error)
	// Since returns up to limit audit records after seq, oldest first: what was recorded
	// since a page was rendered.
	Since(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error)
	// Decide records one decision through warrant.Service.DecideAs, over req.ReadHead
	// (never nil here): ErrStale (and ErrConflict) when the log moved since.
	Decide(ctx context.Context, req warrant.DecisionRequest) (Outcome, error)
}

// Outcome is what a recorded decision answered.
type Outcome struct {
	// Decider is the identity the decision was recorded for.
	Decider string
	// Unchanged is true when the digest was already the approved one: nothing recorded.
	Unchanged bool
	// Head is the audit head after the decision (its own entry).
	Head warrant.AuditHead
}

// ErrReadOnly is a decision sent to a page that was started without a way to attest it.
var ErrReadOnly = fmt.Errorf("%w: this page was started without a signer: restart 'toolwarrant review' with --sign-key FILE or --agent (or --remote URL)", warrant.ErrForbidden)

// ServiceSource is the embedded catalog: reads through the service, decisions through
// warrant.Service.DecideAs with Attester.
type ServiceSource struct {
	// Service is the toolwarrant service over the catalog. Required.
	Service *warrant.Service
	// Attester attests decisions (trust.SSHAttester: the person's SSH key). Nil: the page
	// is read-only and Decide returns ErrReadOnly.
	Attester warrant.Attester
}

var _ Source = ServiceSource{}

// Tools reads the head, then the rows.
func (s ServiceSource) Tools(ctx context.Context) (warrant.AuditHead, []warrant.ToolRow, error) {
	head, err := s.Service.Catalog().AuditHead(ctx)
	if err != nil {
		return head, nil, err
	}
	rows, err := s.Service.List(ctx, false)
	return head, rows, err
}

// Diff reads the head, then the diff.
func (s ServiceSource) Diff(ctx context.Context, server, tool string) (warrant.AuditHead, warrant.DiffView, error) {
	head, err := s.Service.Catalog().AuditHead(ctx)
	if err != nil {
		return head, warrant.DiffView{}, err
	}
	dv, err := s.Service.Diff(ctx, server, tool, "", "")
	return head, dv, err
}

// RollbackTargets reads the tool's decisions.
func (s ServiceSource) RollbackTargets(ctx context.Context, server, tool string, approved warrant.Digest) ([]warrant.Digest, error) {
	decs, err := s.Service.Catalog().Decisions(ctx, server, tool)
	if err != nil {
		return nil, err
	}
	var out []warrant.Digest
	for _, d := range slices.Backward(decs) {
		if (d.Kind == warrant.DecisionApproved || d.Kind == warrant.DecisionRolledBack) && d.Digest != approved && !slices.Contains(out, d.Digest) {
			out = append(out, d.Digest)
		}
	}
	return out, nil
}

// Since reads the audit records after seq.
func (s ServiceSource) Since(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	return s.Service.Catalog().AuditRecords(ctx, after, limit)
}

// Decide calls warrant.Service.DecideAs with the attester.
func (s ServiceSource) Decide(ctx context.Context, req warrant.DecisionRequest) (Outcome, error) {
	if s.Attester == nil {
		return Outcome{}, ErrReadOnly
	}
	if req.ReadHead == nil {
		return Outcome{}, errors.New("review: a decision from the page names the head it was rendered from")
	}
	res, err := s.Service.DecideAs(ctx, req, s.Attester)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Decider: res.Decision.Actor, Unchanged: res.Unchanged, Head: res.AuditHead}, nil
}
