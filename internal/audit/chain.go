package audit

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Body returns the canonical body of an entry.
func Body(seq int64, typ, actor string, at time.Time, event json.RawMessage) ([]byte, error) {
	if len(event) == 0 {
		event = json.RawMessage(`{}`)
	}
	b, err := json.Marshal(struct {
		Seq   int64           `json:"seq"`
		Type  string          `json:"type"`
		Actor string          `json:"actor"`
		At    string          `json:"at"`
		Event json.RawMessage `json:"event"`
	}{seq, typ, actor, at.UTC().Format(time.RFC3339Nano), event})
	if err != nil {
		return nil, fmt.Errorf("audit body %d: %w", seq, err)
	}
	c, err := canon.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("audit body %d: %w", seq, err)
	}
	return c, nil
}

// Hash returns SHA-256(prev || body) in hex, prev being a hex entry hash.
func Hash(prevHex string, body []byte) (string, error) {
	prev, err := hex.DecodeString(prevHex)
	if err != nil || len(prev) != sha256.Size {
		return "", fmt.Errorf("previous hash %q is not 64 hex digits", prevHex)
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Chainer is the warrant.Auditor that chains and signs records with the log key.
type Chainer struct {
	Signer signer.Signer
}

var _ warrant.Auditor = (*Chainer)(nil)

// signAtOnce bounds the signing requests Chain has in flight (a sequenced batch chains
// up to a few dozen entries; KMS answers each in milliseconds).
const signAtOnce = 8

// Chain implements warrant.Auditor: the hashes in order (each needs the one before), then
// the signatures, at most signAtOnce at a time.
func (c *Chainer) Chain(ctx context.Context, head warrant.AuditHead, events []warrant.Event) ([]warrant.AuditRecord, error) {
	if c == nil || c.Signer == nil {
		return nil, errors.New("audit: no log key")
	}
	out := make([]warrant.AuditRecord, 0, len(events))
	prev := head
	for _, e := range events {
		seq := prev.Seq + 1
		body, err := Body(seq, e.Type, e.Actor, e.At, e.Body)
		if err != nil {
			return nil, err
		}
		h, err := Hash(prev.Hash, body)
		if err != nil {
			return nil, err
		}
		out = append(out, warrant.AuditRecord{Seq: seq, Type: e.Type, Actor: e.Actor, At: e.At.UTC(), PrevHash: prev.Hash, Hash: h,
			Body: body, KeyID: c.Signer.KeyID()})
		prev = warrant.AuditHead{Seq: seq, Hash: h}
	}
	errs := make([]error, len(out))
	sem := make(chan struct{}, signAtOnce)
	var wg sync.WaitGroup
	for i := range out {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			raw, _ := hex.DecodeString(out[i].Hash)
			sig, err := c.Signer.Sign(ctx, raw)
			if err != nil {
				errs[i] = fmt.Errorf("sign audit entry %d: %w", out[i].Seq, err)
				return
			}
			out[i].Signature = sig
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first: an outage fails every entry alike
		}
	}
	return out, nil
}

// Problem is one thing wrong with the log, at one entry.
type Problem struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

func (p Problem) String() string { return fmt.Sprintf("entry %d: %s", p.Seq, p.Reason) }

// Options say what Verify checks beyond the chain itself.
type Options struct {
	// Keys are the trusted log keys by key ID. An entry signed by any other key is a
	// problem. Required.
	Keys map[string]crypto.PublicKey
	// Head, when set, is a head the operator kept outside the database: the log must
	// contain an entry with its sequence number and hash.
	Head *warrant.AuditHead
	// TrustRoot, when set, is the hash of the entry that initialised the trust list
	// (the first trust_changed entry): the log must have it.
	TrustRoot string
	// Check is called for every entry whose hash and log signature are good, in order,
	// for checks of the entry's meaning (human signatures against the trust list). Its
	// problems are added to the report.
	Check func(r warrant.AuditRecord, event json.RawMessage) []string
}

// Report is the result of Verify.
type Report struct {
	Entries  int               `json:"entries"`
	Head     warrant.AuditHead `json:"head"`
	Problems []Problem         `json:"problems"`
	// Tree and Checkpoints, when set, are the log's tree and the checkpoint notes it was
	// checked against (the caller fills them; Verify does not).
	Tree        *TreeHead       `json:"tree,omitempty"`
	Checkpoints []CheckpointRef `json:"checkpoints,omitempty"`
}

// TreeHead is a tree size and its root hash (base64, as in a checkpoint).
type TreeHead struct {
	Size int64  `json:"size"`
	Root string `json:"root"`
}

// CheckpointRef names a checkpoint a log was checked against.
type CheckpointRef struct {
	Origin    string   `json:"origin"`
	Size      int64    `json:"size"`
	Where     string   `json:"where"`
	Witnesses []string `json:"witnesses"`
}

// OK reports whether no problem was found.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Verifier checks records one at a time, in order, so that a long log is verified without
// holding it in memory.
type Verifier struct {
	opts      Options
	prev      warrant.AuditHead
	rep       Report
	sawHead   bool
	sawRoot   bool
	firstRoot string
}

// NewVerifier starts a verification.
func NewVerifier(opts Options) *Verifier {
	return &Verifier{opts: opts, prev: warrant.Genesis(), rep: Report{Head: warrant.Genesis(), Problems: []Problem{}}}
}

func (v *Verifier) problem(seq int64, format string, a ...any) {
	v.rep.Problems = append(v.rep.Problems, Problem{Seq: seq, Reason: fmt.Sprintf(format, a...)})
}

// Add checks the next record.
func (v *Verifier) Add(r warrant.AuditRecord) {
	v.rep.Entries++
	want := v.prev.Seq + 1
	if r.Seq != want {
		v.problem(r.Seq, "out of sequence: expected entry %d (an entry was deleted, inserted or moved)", want)
	}
	if r.PrevHash != v.prev.Hash {
		v.problem(r.Seq, "prev_hash %s does not match entry %d's hash %s", r.PrevHash, v.prev.Seq, v.prev.Hash)
	}
	var parsed struct {
		Seq   int64           `json:"seq"`
		Type  string          `json:"type"`
		Actor string          `json:"actor"`
		At    string          `json:"at"`
		Event json.RawMessage `json:"event"`
	}
	d := json.NewDecoder(bytes.NewReader(r.Body))
	d.DisallowUnknownFields()
	if c, err := canon.Transform(r.Body); err != nil || !bytes.Equal(c, r.Body) {
		v.problem(r.Seq, "body is not canonical JSON")
	} else if err := d.Decode(&parsed); err != nil {
		v.problem(r.Seq, "body is not an audit entry: %v", err)
	} else {
		at, err := time.Parse(time.RFC3339Nano, parsed.At)
		if parsed.Seq != r.Seq || parsed.Type != r.Type || parsed.Actor != r.Actor || err != nil || !at.Equal(r.At) {
			v.problem(r.Seq, "the stored seq, type, actor or time differ from the signed body")
		}
	}
	hashOK := false
	if h, err := Hash(r.PrevHash, r.Body); err != nil {
		v.problem(r.Seq, "%v", err)
	} else if h != r.Hash {
		v.problem(r.Seq, "hash %s does not match its body (recomputed %s): the entry was altered", r.Hash, h)
	} else {
		hashOK = true
	}
	if pub, ok := v.opts.Keys[r.KeyID]; !ok {
		v.problem(r.Seq, "signed by key %s, which is not a trusted log key", r.KeyID)
	} else if raw, err := hex.DecodeString(r.Hash); err != nil || signer.Verify(pub, raw, r.Signature) != nil {
		v.problem(r.Seq, "log signature does not verify under key %s", r.KeyID)
	} else if hashOK && v.opts.Check != nil {
		for _, p := range v.opts.Check(r, parsed.Event) {
			v.problem(r.Seq, "%s", p)
		}
	}
	if h := v.opts.Head; h != nil && r.Seq == h.Seq {
		v.sawHead = true
		if r.Hash != h.Hash {
			v.problem(r.Seq, "hash %s differs from the head you kept (%s): the history up to here was rewritten", r.Hash, h.Hash)
		}
	}
	if r.Type == "trust_changed" && v.firstRoot == "" {
		v.firstRoot = r.Hash
		if v.opts.TrustRoot != "" {
			v.sawRoot = true
			if r.Hash != v.opts.TrustRoot {
				v.problem(r.Seq, "the trust list was initialised by entry %s, not by the trust root you kept (%s): the history was rewritten", r.Hash, v.opts.TrustRoot)
			}
		}
	}
	v.prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	v.rep.Head = v.prev
}

// Finish returns the report.
func (v *Verifier) Finish() Report {
	if h := v.opts.Head; h != nil && !v.sawHead {
		v.problem(v.prev.Seq, "the log ends at entry %d, before the head you kept (entry %d): entries were removed", v.prev.Seq, h.Seq)
	}
	if v.opts.TrustRoot != "" && !v.sawRoot {
		v.problem(v.prev.Seq, "no entry initialises the trust list, but you kept trust root %s", v.opts.TrustRoot)
	}
	return v.rep
}

// TrustRoot returns the hash of the first trust_changed entry seen, "" if none.
func (v *Verifier) TrustRoot() string { return v.firstRoot }

// Verify checks records (in order) and returns the report.
func Verify(records []warrant.AuditRecord, opts Options) Report {
	v := NewVerifier(opts)
	for _, r := range records {
		v.Add(r)
	}
	return v.Finish()
}
