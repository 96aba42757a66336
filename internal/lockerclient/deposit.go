package lockerclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// DepositBlock is one block of a deposit, already encoded: these exact bytes are sent and
// hashed.
type DepositBlock struct {
	Payload     []byte
	ContentType string
}

// DepositRequest is a whole handoff: the envelope (block 0) and the artifacts.
type DepositRequest struct {
	// Blocks are the blocks in order; Blocks[0] is the locker.handoff.v1 envelope.
	Blocks []DepositBlock
	// TTLSeconds is the pad's write window.
	TTLSeconds int
	// PaymentTxHash, when set, is sent as X-Payment-Proof with the create.
	PaymentTxHash string
	// Progress, when set, is called after each acknowledged step (the create, each append,
	// the seal) with the steps done, the steps in all (len(Blocks)+2) and what was done
	// ("created the pad", "appended block 2 of 4", "sealed"). It never sees a secret.
	Progress func(done, total int, message string)
}

// Deposited is a deposit whose every acknowledgment and seal matched the local chain.
type Deposited struct {
	// PadID is the pad created.
	PadID string `json:"pad_id"`
	// ReadTicket is the pad's first (read_once) ticket: a secret for the reader.
	ReadTicket string `json:"read_ticket"`
	// HeadHash is the head this client computed from the bytes it sent.
	HeadHash string `json:"head_hash"`
	// HeadSource is always "locally_computed".
	HeadSource string `json:"head_source"`
	// ServerHeadHash is the head the daemon's seal response asserted (equal to HeadHash).
	ServerHeadHash string `json:"server_head_hash"`
	// Status is the seal response's state ("sealed").
	Status string `json:"status"`
}

// LogValue names the pad only: the ticket is a secret.
func (d Deposited) LogValue() slog.Value { return slog.StringValue("pad " + d.PadID) }

// Capabilities are a pad's secrets as returned by create.
type Capabilities struct {
	PadID      string `json:"pad_id"`
	WriteKey   string `json:"write_key"`
	ReadTicket string `json:"read_ticket"`
}

// LogValue and String never show the secrets; JSON encoding (for the caller only) does.
func (c Capabilities) LogValue() slog.Value {
	return slog.StringValue("capabilities of pad " + c.PadID + " (redacted)")
}

func (c Capabilities) String() string   { return "capabilities of pad " + c.PadID + " (redacted)" }
func (c Capabilities) GoString() string { return c.String() }

// Deposit statuses and recovery values of Partial.
const (
	StatusUnknown = "unknown" // a dispatched create failed; the pad may or may not exist
	StatusPartial = "partial" // a pad exists and the sequence stopped part-way

	RecoveryCapabilitiesReturned    = "capabilities_returned"
	RecoveryCapabilitiesNotReceived = "capabilities_not_received"
)

// Causes of a failed deposit.
const (
	CauseCreationOutcomeUnknown         = "creation_outcome_unknown"
	CauseCreationCapabilitiesUnreadable = "creation_capabilities_unreadable"
	CauseAppendOutcomeUnknown           = "append_outcome_unknown"
	CauseAppendAcknowledgmentMismatch   = "append_acknowledgment_mismatch"
	CauseSealOutcomeUnknown             = "seal_outcome_unknown"
	CauseSealStateUnexpected            = "seal_state_unexpected"
	CauseSealHeadMismatch               = "seal_head_mismatch"
)

// Partial is the structured account of a failed deposit.
type Partial struct {
	Status              string        `json:"status"`
	Cause               string        `json:"cause"`
	Detail              string        `json:"detail"`
	ClassificationBasis string        `json:"classification_basis"`
	Acknowledged        []string      `json:"acknowledged"`
	Uncertain           []string      `json:"uncertain"`
	Recovery            string        `json:"recovery"`
	Capabilities        *Capabilities `json:"capabilities"`
	AutomaticRecovery   bool          `json:"automatic_recovery"`
	Note                string        `json:"note"`
	Continuation        string        `json:"continuation"`
	UncertainNote       string        `json:"uncertain_note,omitempty"`
	CapabilitiesNote    string        `json:"capabilities_note"`
}

// DepositIntegrity names the heads of a deposit that failed verification.
type DepositIntegrity struct {
	Reference              string  `json:"reference"`
	ExpectedHead           string  `json:"expected_head"`
	AcknowledgedPrefixHead string  `json:"acknowledged_prefix_head"`
	AcknowledgedPrefixNote string  `json:"acknowledged_prefix_note"`
	ServerHeadHash         *string `json:"server_head_hash"`
	Checked                string  `json:"checked"`
	Suffix                 string  `json:"suffix"`
}

// DepositError is a deposit that did not complete. It may carry capabilities (in
// Partial.Capabilities): return it to the caller only; never log it or its JSON. Its Error
// text and LogValue carry no secret.
type DepositError struct {
	// Daemon is the daemon or transport error of the step that failed, when one did; it is
	// the result's error object. Otherwise Kind names it: "verification_failed" (an
	// acknowledgment or the seal disagreed with the local chain) or "deposit_failed".
	Daemon *DaemonError
	Kind   string
	Cause  string
	Detail string
	// PadID is the pad created, nil when creation did not yield one.
	PadID     *string
	Partial   Partial
	Integrity *DepositIntegrity
}

func (e *DepositError) Error() string { return "deposit failed (" + e.Cause + "): " + e.Detail }

// LogValue shows the cause and the pad only.
func (e *DepositError) LogValue() slog.Value {
	pad := ""
	if e.PadID != nil {
		pad = *e.PadID
	}
	return slog.GroupValue(slog.String("cause", e.Cause), slog.String("pad_id", pad))
}

// ErrPreflight marks a deposit refused locally, before any request was sent: nothing exists.
var ErrPreflight = errors.New("deposit refused before anything was sent")

// Texts of Partial.
const (
	depositAckNote = "An acknowledgment means the daemon answered for that step. It does not prove the bytes " +
		"are durably stored, still available, or readable."
	depositContinuation = "Nothing was retried, replayed, compensated or deleted, and nothing will be continued " +
		"automatically. Inspect the pad yourself before acting on it."
	depositUncertainNote = "The steps under 'uncertain' may have committed: their outcome was not established. " +
		"Do not repeat them blindly."
	depositNoCapabilities = "No capabilities were received for this attempt, so nothing can be recovered through " +
		"this API: the pad, if it exists, cannot be read, written, sealed or removed by anyone."
	depositCapabilitiesSensitive = "This result carries the pad's capabilities. Treat it like a creation result: it " +
		"is a secret and must not be logged, pasted into a report or kept as evidence."
	depositVerificationProhibition = "Do not continue, retry, replay or compensate after a verification failure: the " +
		"acknowledged steps are not confirmed to hold the bytes that were sent."
	depositReference  = "the intended complete deposit, computed by this client from the bytes it sent"
	depositPrefixNote = "the head of the acknowledged prefix: neither the intended complete deposit nor the " +
		"daemon's head"
	depositChecked = "every append acknowledgment and the seal response"
)

func dispatchedBasis(e *DaemonError) string {
	if e.Status == 0 {
		return "a transport failure after the request was sent: it may have reached the daemon and committed"
	}
	return "an HTTP " + strconv.Itoa(e.Status) + " response after the request was sent: a status code shows neither " +
		"that the daemon (rather than an intermediary) produced it nor that the operation did not commit"
}

// preflight refuses, before anything is sent, what the contract's daemon would refuse after
// creating the pad (which would orphan it): an invalid envelope, an empty block, a block or
// pad over the byte limits, too many blocks, a TTL out of range.
func preflight(req DepositRequest) error {
	if len(req.Blocks) == 0 {
		return fmt.Errorf("%w: a deposit needs an envelope", ErrPreflight)
	}
	if len(req.Blocks) > locker.MaxMaxBlocks {
		return fmt.Errorf("%w: %d blocks exceed the %d-block limit of a pad", ErrPreflight, len(req.Blocks), locker.MaxMaxBlocks)
	}
	if req.TTLSeconds < 1 || req.TTLSeconds > locker.MaxTTLSeconds {
		return fmt.Errorf("%w: ttl_seconds must be from 1 to %d", ErrPreflight, locker.MaxTTLSeconds)
	}
	total := 0
	for i, b := range req.Blocks {
		switch {
		case len(b.Payload) == 0:
			return fmt.Errorf("%w: block %d is empty; the daemon refuses empty blocks", ErrPreflight, i)
		case len(b.Payload) > locker.MaxBlockBytes:
			return fmt.Errorf("%w: block %d is %d bytes, over the %d-byte block limit", ErrPreflight, i, len(b.Payload), locker.MaxBlockBytes)
		}
		total += len(b.Payload)
	}
	if total > locker.MaxPadBytes {
		return fmt.Errorf("%w: the blocks total %d bytes, over the %d-byte pad limit", ErrPreflight, total, locker.MaxPadBytes)
	}
	if reason := locker.EnvelopeError(req.Blocks[0].Payload); reason != "" {
		return fmt.Errorf("%w: the envelope is not a valid %s envelope: %s", ErrPreflight, locker.EnvelopeSchema, reason)
	}
	return nil
}

// Deposit creates a pad, appends every block, seals it, and checks every acknowledgment
// (seq and curr_hash) and the seal (state and head) against the chain it computes from the
// bytes it sends. It is a sequence of requests, not a transaction. It returns an error
// wrapping ErrPreflight when nothing was sent, or a *DepositError describing exactly what
// was and was not acknowledged; it never retries.
func (c *Client) Deposit(ctx context.Context, req DepositRequest) (*Deposited, error) {
	if err := preflight(req); err != nil {
		return nil, err
	}
	expected := make([]string, len(req.Blocks))
	var hw locker.Walker
	for i, b := range req.Blocks {
		expected[i] = string(hw.Next(b.Payload))
	}
	head := expected[len(expected)-1]

	var acknowledged []string
	appended := 0
	fail := func(e *DepositError, uncertain []string, caps *Capabilities, basis string) *DepositError {
		p := &e.Partial
		p.Cause, p.Detail, p.ClassificationBasis = e.Cause, e.Detail, basis
		p.Acknowledged = append([]string{}, acknowledged...)
		p.Uncertain = uncertain
		p.Capabilities = caps
		p.Note = depositAckNote
		p.Continuation = depositContinuation
		if e.Integrity != nil {
			p.Continuation = depositVerificationProhibition + " " + depositContinuation
		}
		if len(uncertain) > 0 {
			p.UncertainNote = depositUncertainNote
		}
		if caps == nil {
			p.Status, p.Recovery, p.CapabilitiesNote = StatusUnknown, RecoveryCapabilitiesNotReceived, depositNoCapabilities
		} else {
			p.Status, p.Recovery, p.CapabilitiesNote = StatusPartial, RecoveryCapabilitiesReturned, depositCapabilitiesSensitive
			e.PadID = ptr(caps.PadID)
		}
		return e
	}
	integrity := func(suffix string, server *string) *DepositIntegrity {
		prefix := locker.GenesisHash
		if appended > 0 {
			prefix = expected[appended-1]
		}
		return &DepositIntegrity{Reference: depositReference, ExpectedHead: head, AcknowledgedPrefixHead: prefix,
			AcknowledgedPrefixNote: depositPrefixNote, ServerHeadHash: server, Checked: depositChecked, Suffix: suffix}
	}

	// 1. create
	raw, err := c.Create(ctx, CreateRequest{TTLSeconds: req.TTLSeconds, MaxBlocks: max(2, len(req.Blocks)), PaymentTxHash: req.PaymentTxHash})
	if err != nil {
		de := asDaemon(err)
		return nil, fail(&DepositError{Daemon: de, Cause: CauseCreationOutcomeUnknown,
			Detail: "the create request did not complete in a way that shows whether the pad was created, so it may exist; " +
				"no capabilities were received, so it cannot be recovered through this API"},
			[]string{"create"}, nil, dispatchedBasis(de))
	}
	caps, padID, ok := parseCreated(raw)
	if !ok {
		e := &DepositError{Kind: "deposit_failed", Cause: CauseCreationCapabilitiesUnreadable,
			Detail: "the create response did not carry usable capabilities; the pad may exist and cannot be recovered through this API"}
		if padID != "" {
			e.PadID = ptr(padID)
		}
		return nil, fail(e, []string{"create"}, nil, "the daemon answered the create, but its answer did not hold a pad_id, write_key and read_ticket")
	}
	acknowledged = append(acknowledged, "create")
	total := len(req.Blocks) + 2
	progress := func(done int, msg string) {
		if req.Progress != nil {
			req.Progress(done, total, msg)
		}
	}
	progress(1, "created the pad")

	// 2. append every block, checking each acknowledgment against the local chain
	for i, b := range req.Blocks {
		step := "append " + strconv.Itoa(i)
		ack, err := c.appendAck(ctx, caps, b)
		if err != nil {
			de := asDaemon(err)
			return nil, fail(&DepositError{Daemon: de, Cause: CauseAppendOutcomeUnknown,
				Detail: "the request for " + step + " failed without showing that it had no effect: it may have been written; do not repeat it blindly"},
				[]string{step}, &caps, dispatchedBasis(de))
		}
		if !ack.seqOK || ack.seq != int64(i) {
			return nil, fail(&DepositError{Kind: "verification_failed", Cause: CauseAppendAcknowledgmentMismatch, Integrity: integrity("seq", nil),
				Detail: step + " was acknowledged at sequence " + ack.seqShown + " rather than at the position it was sent for"},
				[]string{step + " (acknowledged at sequence " + ack.seqShown + ")"}, &caps,
				"the daemon's acknowledgment names another position than the one this client sent")
		}
		if ack.currHash != expected[i] {
			return nil, fail(&DepositError{Kind: "verification_failed", Cause: CauseAppendAcknowledgmentMismatch, Integrity: integrity("acknowledgment", nil),
				Detail: step + " was acknowledged with a hash that does not match the bytes this client sent"},
				[]string{step}, &caps, "the daemon's acknowledged curr_hash differs from the chain this client computed from the bytes it sent")
		}
		acknowledged = append(acknowledged, step)
		appended++
		progress(2+i, "appended block "+strconv.Itoa(i)+" ("+strconv.Itoa(i+1)+" of "+strconv.Itoa(len(req.Blocks))+")")
	}

	// 3. seal, checking state and head
	sraw, err := c.Seal(ctx, caps.PadID, caps.WriteKey)
	if err != nil {
		de := asDaemon(err)
		return nil, fail(&DepositError{Daemon: de, Cause: CauseSealOutcomeUnknown,
			Detail: "the seal request failed without showing that it had no effect: the pad may already be sealed; do not infer that it is still open"},
			[]string{"seal"}, &caps, dispatchedBasis(de))
	}
	state, serverHead := parseSealed(sraw)
	if state == nil || *state != string(locker.StateSealed) {
		shown := "none"
		if state != nil {
			shown = strconv.Quote(capText(*state))
		}
		return nil, fail(&DepositError{Kind: "verification_failed", Cause: CauseSealStateUnexpected, Integrity: integrity("state", serverHead),
			Detail: "the seal response does not say the pad is sealed (state " + shown + ")"},
			[]string{"seal"}, &caps, "the daemon answered the seal without reporting the sealed state")
	}
	if serverHead == nil || *serverHead != head {
		return nil, fail(&DepositError{Kind: "verification_failed", Cause: CauseSealHeadMismatch, Integrity: integrity("head", serverHead),
			Detail: "the sealed head does not match the chain this client computed from the bytes it sent"},
			[]string{"seal"}, &caps, "the daemon's sealed head_hash differs from the head this client computed")
	}
	progress(total, "sealed; every acknowledgment matched the local chain")
	return &Deposited{PadID: caps.PadID, ReadTicket: caps.ReadTicket, HeadHash: head, HeadSource: "locally_computed",
		ServerHeadHash: *serverHead, Status: *state}, nil
}

func asDaemon(err error) *DaemonError {
	var de *DaemonError
	if errors.As(err, &de) {
		return de
	}
	return &DaemonError{Detail: "request failed"}
}

// parseCreated reads a create response; padID is set whenever pad_id is a string.
func parseCreated(raw []byte) (caps Capabilities, padID string, ok bool) {
	s := newScanner(raw)
	var have uint8
	err := members(&s, raw, func(k []byte) error {
		var dst *string
		var bit uint8
		switch string(k) {
		case "pad_id":
			dst, bit = &caps.PadID, 1
		case "write_key":
			dst, bit = &caps.WriteKey, 2
		case "read_ticket":
			dst, bit = &caps.ReadTicket, 4
		default:
			_, err := s.Skip()
			return err
		}
		v, isStr, err := stringValue(&s, raw)
		if isStr && v != "" {
			*dst = v
			have |= bit
		}
		return err
	})
	if have&1 != 0 {
		padID = caps.PadID
	}
	return caps, padID, err == nil && have == 7
}

type ack struct {
	seq      int64
	seqOK    bool
	seqShown string
	currHash string
}

func (c *Client) appendAck(ctx context.Context, caps Capabilities, b DepositBlock) (ack, error) {
	raw, err := c.Append(ctx, caps.PadID, caps.WriteKey, b.ContentType, b.Payload)
	if err != nil {
		return ack{}, err
	}
	a := ack{seqShown: "none"}
	s := newScanner(raw)
	_ = members(&s, raw, func(k []byte) error {
		switch string(k) {
		case "seq":
			iv, err := integer(&s, raw)
			a.seq, a.seqOK, a.seqShown = iv.n, iv.isInt, capText(string(iv.raw))
			return err
		case "curr_hash":
			v, _, err := stringValue(&s, raw)
			a.currHash = v
			return err
		}
		_, err := s.Skip()
		return err
	})
	return a, nil
}

func parseSealed(raw []byte) (state, head *string) {
	s := newScanner(raw)
	_ = members(&s, raw, func(k []byte) error {
		switch string(k) {
		case "state", "head_hash":
			v, ok, err := stringValue(&s, raw)
			if ok {
				if string(k) == "state" {
					state = ptr(v)
				} else {
					head = ptr(v)
				}
			}
			return err
		}
		_, err := s.Skip()
		return err
	})
	return state, head
}
