package checkpoint

import (
	"context"
	"crypto"
	"fmt"
	"iter"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Checker checks a log, record by record in order, against checkpoints.
type Checker struct {
	cps  []Checkpoint // sorted by Seq
	next int
	last warrant.AuditHead
}

// NewChecker returns a Checker for checkpoints sorted by Seq (as Load returns them).
func NewChecker(cps []Checkpoint) *Checker { return &Checker{cps: cps, last: warrant.Genesis()} }

// Add checks one record and returns the problems found at it: the record of a
// checkpointed entry must have the checkpoint's hash.
func (c *Checker) Add(r warrant.AuditRecord) []audit.Problem {
	var p []audit.Problem
	for c.next < len(c.cps) && c.cps[c.next].Seq <= r.Seq {
		cp := c.cps[c.next]
		c.next++
		if cp.Seq == r.Seq && cp.Hash != r.Hash {
			p = append(p, audit.Problem{Seq: r.Seq, Reason: fmt.Sprintf("hash %s differs from checkpoint %d signed at %s (%s): the history up to here was rewritten",
				short(r.Hash), cp.Seq, cp.At.Format("2006-01-02T15:04:05Z"), short(cp.Hash))})
		} else if cp.Seq < r.Seq {
			p = append(p, audit.Problem{Seq: cp.Seq, Reason: fmt.Sprintf("checkpoint %d names an entry the log does not have: entries were removed or renumbered", cp.Seq)})
		}
	}
	c.last = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	return p
}

// Finish returns the problems left at the end of the log: checkpoints beyond its last
// entry mean entries were removed.
func (c *Checker) Finish() []audit.Problem {
	var p []audit.Problem
	for ; c.next < len(c.cps); c.next++ {
		cp := c.cps[c.next]
		p = append(p, audit.Problem{Seq: c.last.Seq, Reason: fmt.Sprintf("the log ends at entry %d, before checkpoint %d signed at %s: entries were removed",
			c.last.Seq, cp.Seq, cp.At.Format("2006-01-02T15:04:05Z"))})
	}
	return p
}

// Verify is `audit verify --checkpoints SRC`: it loads and verifies every checkpoint of
// src under opts.Keys, then verifies records (in order) with audit.Verify's checks and
// against every checkpoint. An error means the checkpoints could not be read or one of
// them is not genuine; problems with the log are in the report.
func Verify(ctx context.Context, records iter.Seq2[warrant.AuditRecord, error], src Source, opts audit.Options) (audit.Report, int, error) {
	cps, err := Load(ctx, src, opts.Keys)
	if err != nil {
		return audit.Report{}, 0, err
	}
	v := audit.NewVerifier(opts)
	ck := NewChecker(cps)
	var extra []audit.Problem
	for r, err := range records {
		if err != nil {
			return audit.Report{}, len(cps), err
		}
		v.Add(r)
		extra = append(extra, ck.Add(r)...)
	}
	rep := v.Finish()
	rep.Problems = append(rep.Problems, extra...)
	rep.Problems = append(rep.Problems, ck.Finish()...)
	return rep, len(cps), nil
}

// Keys is a convenience for callers holding one public key.
func Keys(keyID string, pub crypto.PublicKey) map[string]crypto.PublicKey {
	return map[string]crypto.PublicKey{keyID: pub}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
