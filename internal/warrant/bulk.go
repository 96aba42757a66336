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

// MaxBulk is the most tools one bulk approval names. A bulk approval is one write: on
// DynamoDB one TransactWriteItems of three items per tool (the approval, the decision,
// the audit entry) and the head, within the 100 items one transaction holds. More
// pending tools are approved by several statements, each over the head the last left.
const MaxBulk = 25

// BulkItem is one tool of a bulk approval and the exact digest approved.
type BulkItem struct {
	Tool   string `json:"tool"`
	Digest Digest `json:"digest"`
}

// BulkRequest asks for one bulk approval: the exact digests of first-sight tools of one
// server, as shown to the decider over ReadHead.
type BulkRequest struct {
	Server string
	// Items are the tools and digests approved, each tool once, at most MaxBulk.
	Items []BulkItem
	// Note is recorded with each approval.
	Note string
	// ReadHead is the audit head the list was read at. Nil: the head now. The approvals
	// are recorded only if it is still the head (ErrStale otherwise).
	ReadHead *AuditHead
}

// BulkClaim is what a [BulkAttester] attests: the approval of exactly Items of Server,
// by Decider, over Head.
type BulkClaim struct {
	Server  string
	Items   []BulkItem
	Decider string
	Head    AuditHead
	At      time.Time
}

// BulkAttester is an [Attester] that can also attest one statement over a list of
// approvals (trust.SSHAttester).
type BulkAttester interface {
	Attester
	AttestBulk(ctx context.Context, c BulkClaim) (statement, signature []byte, err error)
}

// BulkResult is what [Service.ApproveAllAs] recorded.
type BulkResult struct {
	// Decisions are the approvals recorded, in Items' order, Actor the decider.
	Decisions []Decision
	// AuditHead is the head after them: the last approval's entry.
	AuditHead AuditHead
}

// ErrNotBulk is a tool a bulk approval may not name: one with an approved digest (a
// change is reviewed on its own), one with findings or suspicious text, one not pending.
var ErrNotBulk = fmt.Errorf("%w: not a routine first-sight tool", ErrInvalid)

// ApproveAllAs records one bulk approval: every item approved by one statement att
// signs, naming the server, the exact list and the head read, in one write chained from
// that head, so nothing outside the list is approved and a list read before the log
// moved is refused whole (ErrStale). Each item must be a first-sight tool: no approved
// digest, its digest the one pending ([Service.BulkCandidates] says which are), and it
// passes [Service.CheckDecision] as an approval would (separation of duties, suspicious
// text). One item that does not is a refusal of all, naming it; nothing is recorded.
func (s *Service) ApproveAllAs(ctx context.Context, req BulkRequest, att BulkAttester) (BulkResult, error) {
	if att == nil {
		return BulkResult{}, errors.New("approve all: no attester")
	}
	if err := ValidateServerName(req.Server); err != nil {
		return BulkResult{}, err
	}
	switch n := len(req.Items); {
	case n == 0:
		return BulkResult{}, fmt.Errorf("%w: a bulk approval names at least one tool", ErrInvalid)
	case n > MaxBulk:
		return BulkResult{}, fmt.Errorf("%w: a bulk approval names at most %d tools, not %d", ErrInvalid, MaxBulk, n)
	}
	seen := make(map[string]bool, len(req.Items))
	for _, it := range req.Items {
		if !ValidToolName(it.Tool) || !it.Digest.Valid() {
			return BulkResult{}, fmt.Errorf("%w: bulk item %q %q: give a tool name and its exact digest", ErrInvalid, it.Tool, it.Digest)
		}
		if seen[it.Tool] {
			return BulkResult{}, fmt.Errorf("%w: tool %q is named twice", ErrInvalid, it.Tool)
		}
		seen[it.Tool] = true
	}
	head := req.ReadHead
	if head == nil {
		h, err := s.cat.AuditHead(ctx)
		if err != nil {
			return BulkResult{}, err
		}
		head = &h
	}
	who, err := att.Decider(ctx, *head)
	if err != nil {
		return BulkResult{}, err
	}
	if who == "" {
		return BulkResult{}, fmt.Errorf("%w: the attester named no decider", ErrForbidden)
	}
	// The list must be what BulkCandidates offers now: routine first-sight tools at their
	// pending digests, screened by the findings rules.
	_, offered, held, err := s.BulkCandidates(ctx, req.Server)
	if err != nil {
		return BulkResult{}, err
	}
	for _, it := range req.Items {
		if slices.Contains(offered, it) {
			continue
		}
		why := "its pending digest is not " + it.Digest.Short()
		for _, h := range held {
			if h.Row.Tool == it.Tool {
				why = h.Reason
			}
		}
		return BulkResult{}, fmt.Errorf("server %q tool %q: %s; review it on its own ('toolwarrant diff %s %s'): %w", req.Server, it.Tool, why, req.Server, it.Tool, ErrNotBulk)
	}
	at := s.clock()
	ds := make([]Decision, len(req.Items))
	for i, it := range req.Items {
		chk, err := s.CheckDecision(ctx, req.Server, it.Tool, it.Digest, DecisionApproved, false, who, att.Same)
		if err != nil {
			return BulkResult{}, fmt.Errorf("tool %q: %w", it.Tool, err)
		}
		if chk.Approved != "" {
			return BulkResult{}, fmt.Errorf("server %q tool %q has an approved digest (%s): a change is reviewed on its own ('toolwarrant diff %s %s'): %w",
				req.Server, it.Tool, chk.Approved.Short(), req.Server, it.Tool, ErrNotBulk)
		}
		ds[i] = Decision{Server: req.Server, Tool: it.Tool, Digest: it.Digest, Kind: DecisionApproved, Actor: who, At: at, Note: req.Note, ReadHead: head}
	}
	stmt, sig, err := att.AttestBulk(ctx, BulkClaim{Server: req.Server, Items: slices.Clone(req.Items), Decider: who, Head: *head, At: at})
	if err != nil {
		return BulkResult{}, err
	}
	var after *AuditHead
	err = s.auditedFrom(ctx, "record bulk approval", 1, head, func() ([]Event, error) {
		if !json.Valid(stmt) {
			return nil, fmt.Errorf("%w: the bulk approval's statement is not JSON", ErrInvalid)
		}
		events := make([]Event, len(ds))
		for i, d := range ds {
			events[i] = Event{Type: string(DecisionApproved), Actor: who, At: at, Body: mustJSON(map[string]any{
				"server": d.Server, "tool": d.Tool, "digest": d.Digest, "expect": d.Expect, "acceptedSuspicious": false, "note": d.Note,
				"statement": json.RawMessage(stmt), "signature": string(sig), "item": i, "items": len(ds)})}
		}
		return events, nil
	}, func(a AuditAppend) error {
		if err := s.cat.DecideAll(ctx, ds, a); err != nil {
			return err
		}
		if n := len(a.Records); n > 0 {
			after = &AuditHead{Seq: a.Records[n-1].Seq, Hash: a.Records[n-1].Hash}
		}
		return nil
	})
	if errors.Is(err, ErrConflict) {
		return BulkResult{}, staleError{err}
	}
	if err != nil {
		return BulkResult{}, err
	}
	for i := range ds {
		ds[i].Statement, ds[i].Signature = stmt, sig
	}
	res := BulkResult{Decisions: ds, AuditHead: *head}
	if after != nil {
		res.AuditHead = *after
	}
	return res, nil
}

// BulkCandidates reads the audit head, then the server's pending tools, and splits them
// into what a bulk approval may name (Items: first-sight tools graded new-tool and
// nothing else, no suspicious text, observed by a crawl, by tool) and what is held for
// review one tool at a time (Held, with the reason). ErrNotFound for an unknown server.
func (s *Service) BulkCandidates(ctx context.Context, server string) (head AuditHead, items []BulkItem, held []HeldTool, err error) {
	if _, err := s.cat.Server(ctx, server); err != nil {
		return head, nil, nil, err
	}
	if head, err = s.cat.AuditHead(ctx); err != nil {
		return head, nil, nil, err
	}
	rows, err := s.List(ctx, true)
	if err != nil {
		return head, nil, nil, err
	}
	all, err := s.cat.ServerTools(ctx, server)
	if err != nil {
		return head, nil, nil, err
	}
	siblings := make([]string, 0, len(all))
	for _, t := range all {
		siblings = append(siblings, t.Tool)
	}
	for _, r := range rows {
		if r.Server != server {
			continue
		}
		why := heldBecause(r)
		if why == "" {
			if why, err = s.screened(ctx, r, siblings); err != nil {
				return head, nil, nil, err
			}
		}
		if why != "" {
			held = append(held, HeldTool{Row: r, Reason: why})
			continue
		}
		items = append(items, BulkItem{Tool: r.Tool, Digest: r.Current})
	}
	return head, items, held, nil
}

// screened runs the first-sight findings rules over the row's current version: the
// reason it is held ("" when they find nothing).
func (s *Service) screened(ctx context.Context, r ToolRow, siblings []string) (string, error) {
	if s.screen == nil {
		return "no first-sight findings screen is configured, so nothing is approved in bulk", nil
	}
	v, err := s.cat.Version(ctx, r.Server, r.Tool, r.Current)
	if err != nil {
		return "", err
	}
	rules, serr := s.screen(v.Canonical, siblings)
	if serr != nil {
		// Undecidable: held, not approved, and the reason says why.
		return "the findings rules could not read it: " + serr.Error(), nil //nolint:nilerr // a held tool, not a failed listing
	}
	if len(rules) > 0 {
		return "findings: " + strings.Join(rules, ", "), nil
	}
	return "", nil
}

// HeldTool is a pending tool a bulk approval leaves for review one at a time.
type HeldTool struct {
	Row    ToolRow
	Reason string
}

// heldBecause says why a pending row is not a routine first-sight tool ("" when it is).
func heldBecause(r ToolRow) string {
	switch {
	case r.Approved != "":
		return "a change to an approved tool (graded " + r.Grade.String() + ")"
	case r.Current == "" || r.Source != SourceCrawl:
		return "no crawled version to approve (seen only by the gateway, or refused)"
	case len(r.Flags) > 0 || r.Inspection.Suspicious():
		return "suspicious text: " + strings.Join(r.Flags, ", ")
	case !slices.Equal(r.Rules, []Rule{RuleNewTool}):
		var extra []string
		for _, ru := range r.Rules {
			if ru != RuleNewTool {
				extra = append(extra, string(ru))
			}
		}
		return "findings: " + strings.Join(extra, ", ")
	}
	return ""
}
