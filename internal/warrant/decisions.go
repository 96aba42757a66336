package warrant

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// EventDecisionsRecorded is the audit entry of one window of an enforcement point's
// decisions (internal/enforce): what agents were shown and allowed to call, and what was
// filtered or denied, under which approvals.
const EventDecisionsRecorded = "decisions_recorded"

// DecisionCount counts identical decisions of one window: one per (server, tool, method,
// live digest, outcome, cause, approval set).
type DecisionCount struct {
	Server string `json:"server"`
	// Tool is "" for a decision about a whole message (a malformed listing, a method not
	// decided, approvals gone stale).
	Tool string `json:"tool,omitempty"`
	// Method is tools/list (a listed tool kept or removed) or tools/call, or the method a
	// whole-message denial was about.
	Method string `json:"method"`
	// Digest is the live digest judged; "" when none could be computed.
	Digest Digest `json:"digest,omitempty"`
	// Outcome is allowed, filtered, denied or would-deny (shadow mode).
	Outcome string `json:"outcome"`
	// Cause says why a tool was filtered or denied; "" when allowed.
	Cause string `json:"cause,omitempty"`
	// Approvals names the approval set the decisions were made under ("" when none was
	// fresh): SHA-256 over the server's sorted "tool digest" lines.
	Approvals Digest `json:"approvals,omitempty"`
	Count     uint64 `json:"count"`
}

// DecisionWindow is one window of one enforcement point's decisions.
type DecisionWindow struct {
	// Point is the kind of enforcement point: extmcp, proxy or agentcore.
	Point string `json:"point"`
	// Instance names the process that decided.
	Instance string `json:"instance"`
	// Shadow: the point let everything through; would-deny counts what it would have
	// stopped.
	Shadow bool      `json:"shadow"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// Records are sorted by server, tool, method, outcome, digest, cause and approvals.
	Records []DecisionCount `json:"records"`
	// Folded counts decisions recorded without their tool name (the point's window was
	// full of distinct records).
	Folded uint64 `json:"folded,omitempty"`
	// Part and Parts number the entries of a window too large for one (from 1).
	Part  int `json:"part"`
	Parts int `json:"parts"`
}

// DecisionOutcomes are the outcomes a decision record may carry.
var DecisionOutcomes = []string{"allowed", "filtered", "denied", "would-deny"}

// MaxDecisionsPerEntry bounds the records one decisions_recorded entry holds: a window
// with more is written as several entries (Part of Parts), each well within a DynamoDB
// item and a signing request.
const MaxDecisionsPerEntry = 200

// RecordDecisions appends one window of decisions to the audit log as signed
// decisions_recorded entries (one per MaxDecisionsPerEntry records): through the
// Sequencer when the service has one, else chained from the head and retried when another
// write wins the race. It needs an Auditor. ErrInvalid, and
// nothing written, for a window that is not well formed.
func (s *Service) RecordDecisions(ctx context.Context, w DecisionWindow) error {
	if s.auditor == nil {
		return errors.New("record decisions: no audit log key configured")
	}
	if err := w.validate(); err != nil {
		return err
	}
	w.From, w.To = w.From.UTC(), w.To.UTC()
	parts := max(1, (len(w.Records)+MaxDecisionsPerEntry-1)/MaxDecisionsPerEntry)
	events := make([]Event, 0, parts)
	for i := range parts {
		part := w
		part.Records = w.Records[i*MaxDecisionsPerEntry : min(len(w.Records), (i+1)*MaxDecisionsPerEntry)]
		part.Part, part.Parts = i+1, parts
		if i > 0 {
			part.Folded = 0 // counted once, with the first part
		}
		events = append(events, Event{Type: EventDecisionsRecorded, Actor: s.identity, At: w.To, Body: mustJSON(part)})
	}
	if s.seq != nil {
		if err := s.seq.AppendEvents(ctx, events); err != nil {
			return fmt.Errorf("record decisions of %s %s: %w", w.Point, w.Instance, err)
		}
		return nil
	}
	return s.audited(ctx, "record decisions of "+w.Point+" "+w.Instance, func() ([]Event, error) { return events, nil },
		func(a AuditAppend) error { return s.cat.AppendAudit(ctx, a) })
}

func (w DecisionWindow) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: decision window: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if w.Point == "" || len(w.Point) > 64 || len(w.Instance) > 256 {
		return bad("needs a point of 1 to 64 bytes and an instance of at most 256")
	}
	if w.To.Before(w.From) {
		return bad("ends (%s) before it starts (%s)", w.To.Format(time.RFC3339), w.From.Format(time.RFC3339))
	}
	for i, r := range w.Records {
		switch {
		case !slices.Contains(DecisionOutcomes, r.Outcome):
			return bad("record %d: outcome %q is not one of %v", i, r.Outcome, DecisionOutcomes)
		case r.Count == 0:
			return bad("record %d: a count of 0", i)
		case r.Digest != "" && !r.Digest.Valid(), r.Approvals != "" && !r.Approvals.Valid():
			return bad("record %d: a malformed digest", i)
		case r.Method == "" || len(r.Server) > 256 || len(r.Tool) > 1024:
			return bad("record %d: needs a method, a server of at most 256 bytes and a tool of at most 1024", i)
		}
	}
	return nil
}

// DecisionEntry is one decisions_recorded entry as read back from the audit log.
type DecisionEntry struct {
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	DecisionWindow
}

// ParseDecisions reads the decisions_recorded entries among recs (others are skipped).
func ParseDecisions(recs []AuditRecord) ([]DecisionEntry, error) {
	var out []DecisionEntry
	for _, r := range recs {
		if r.Type != EventDecisionsRecorded {
			continue
		}
		var body struct {
			Event DecisionWindow `json:"event"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return nil, fmt.Errorf("audit entry %d (%s): %w", r.Seq, r.Type, err)
		}
		out = append(out, DecisionEntry{Seq: r.Seq, At: r.At, DecisionWindow: body.Event})
	}
	slices.SortStableFunc(out, func(a, b DecisionEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
