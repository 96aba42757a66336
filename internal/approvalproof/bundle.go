package approvalproof

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// The approvals bundle (agentgate.approvals.json), committed beside agentgate.lock:
//
//	{
//	  "type": "agentgate-approvals/v1",
//	  "checkpoint": "<origin>\n<size>\n<root>\n\n— <origin> …\n— <witness> …\n",
//	  "approvals": [
//	    {"server": "wx", "tool": "get_forecast", "digest": "sha256:…", "index": 4,
//	     "entry": "<base64 of the entry's leaf bytes>", "proof": ["<base64 hash>", …]}
//	  ]
//	}
//
// checkpoint is the log's checkpoint note as published (its signature and cosignature
// lines included); each approval is the leaf index and bytes of the entry (type approved
// or rolled_back) that made digest the tool's approved digest, and the RFC 6962 inclusion
// proof of that leaf in the checkpoint's tree (tlog.RecordProof, hashes in base64).
// Approvals are sorted by server, tool and digest.

// BundleType is the bundle's "type".
const BundleType = "agentgate-approvals/v1"

// MaxBundleBytes bounds a bundle file read.
const MaxBundleBytes = 64 << 20

// Bundle is an approvals bundle.
type Bundle struct {
	Type       string     `json:"type"`
	Checkpoint string     `json:"checkpoint"`
	Approvals  []Approval `json:"approvals"`
}

// Approval is one locked digest's approval in a bundle.
type Approval struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Digest string `json:"digest"`
	// Index is the entry's leaf index (its audit seq is Index+1).
	Index int64 `json:"index"`
	// Entry is the entry's leaf bytes (base64 in JSON).
	Entry []byte `json:"entry"`
	// Proof is the inclusion proof of the leaf in the checkpoint's tree.
	Proof []string `json:"proof"`
}

// ErrNotApproved is returned by [Log.Bundle] when a result is not approved.
var ErrNotApproved = errors.New("not every locked digest is approved")

// Bundle returns the bundle proving results (from l.Check), which must all be approved
// (ErrNotApproved otherwise).
func (l *Log) Bundle(results []Result) (*Bundle, error) {
	b := &Bundle{Type: BundleType, Checkpoint: string(l.Checkpoint.Note), Approvals: []Approval{}}
	for _, r := range results {
		if r.Failed() || r.decision == nil {
			return nil, fmt.Errorf("%w: server %q tool %q %s is %s", ErrNotApproved, r.Server, r.Tool, r.Digest, r.Status)
		}
		d := r.decision
		p, err := l.tree.InclusionProof(d.Index, l.Checkpoint.Size)
		if err != nil {
			return nil, fmt.Errorf("prove entry %d: %w", d.Index+1, err)
		}
		a := Approval{Server: r.Server, Tool: r.Tool, Digest: r.Digest, Index: d.Index, Entry: d.Entry, Proof: make([]string, len(p))}
		for i, h := range p {
			a.Proof[i] = h.String()
		}
		b.Approvals = append(b.Approvals, a)
	}
	return b, nil
}

// Marshal returns the bundle as written to the file: indented JSON and a newline.
func (b *Bundle) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseBundle parses a bundle file: one JSON object of BundleType, no unknown members.
// Errors wrap ErrUntrusted.
func ParseBundle(data []byte) (*Bundle, error) {
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("%w: the bundle is larger than %d bytes", ErrUntrusted, MaxBundleBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: not an approvals bundle: %v", ErrUntrusted, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: not an approvals bundle: more after its JSON object", ErrUntrusted)
	}
	if b.Type != BundleType {
		return nil, fmt.Errorf("%w: not an approvals bundle: type %q, want %q", ErrUntrusted, printable(b.Type), BundleType)
	}
	return &b, nil
}

// Verified is a bundle whose checkpoint and every approval verified.
type Verified struct {
	Checkpoint Checkpoint
	// Approvals are the bundle's approvals, each proven.
	Approvals []Approval

	decisions map[digestKey]Decision
}

// VerifyBundle parses a bundle and verifies it offline under p: its checkpoint
// (OpenCheckpoint: the log key and the witness quorum), and for every approval the
// inclusion proof of its entry in the checkpoint's tree, and that the entry is an approved
// or rolled_back decision of exactly its server, tool and digest. Errors wrap ErrUntrusted.
func VerifyBundle(data []byte, p *checkpoint.Policy) (*Verified, error) {
	b, err := ParseBundle(data)
	if err != nil {
		return nil, err
	}
	cp, err := OpenCheckpoint([]byte(b.Checkpoint), p)
	if err != nil {
		return nil, err
	}
	v := &Verified{Checkpoint: cp, Approvals: b.Approvals, decisions: map[digestKey]Decision{}}
	for i, a := range b.Approvals {
		what := fmt.Sprintf("approval %d (server %q tool %q %s)", i+1, printable(a.Server), printable(a.Tool), printable(a.Digest))
		if a.Index < 0 || a.Index >= cp.Size {
			return nil, fmt.Errorf("%w: %s: entry index %d is outside checkpoint %d", ErrUntrusted, what, a.Index, cp.Size)
		}
		proof := make(tlog.RecordProof, len(a.Proof))
		for j, s := range a.Proof {
			h, err := tlog.ParseHash(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: proof hash %d is not a base64 SHA-256", ErrUntrusted, what, j+1)
			}
			proof[j] = h
		}
		if err := tlog.CheckRecord(proof, cp.Size, cp.Root, a.Index, tlog.RecordHash(a.Entry)); err != nil {
			return nil, fmt.Errorf("%w: %s: its entry is not proven in checkpoint %d of %s (%v): the bundle was altered; rewrite it with 'agentgate lock --approvals LOG'",
				ErrUntrusted, what, cp.Size, cp.Origin, err)
		}
		d, ok, err := decisionOf(a.Index, a.Entry)
		if err != nil || !ok || (d.Type != TypeApproved && d.Type != TypeRolledBack) {
			return nil, fmt.Errorf("%w: %s: entry %d is not an approval", ErrUntrusted, what, a.Index+1)
		}
		if d.Server != a.Server || d.Tool != a.Tool || d.Digest != a.Digest {
			return nil, fmt.Errorf("%w: %s: entry %d approves server %q tool %q %s, not what the bundle says", ErrUntrusted, what, a.Index+1, printable(d.Server), printable(d.Tool), d.Digest)
		}
		k := digestKey{d.Server, d.Tool, d.Digest}
		if _, dup := v.decisions[k]; dup {
			return nil, fmt.Errorf("%w: %s is in the bundle twice", ErrUntrusted, what)
		}
		v.decisions[k] = d
	}
	return v, nil
}

// Check grades every want against the bundle: approved when the bundle proves an approval
// of exactly that digest and no later approval in the bundle of another digest of the same
// tool; missing when it holds none. What the log holds beyond the bundle (a rejection, a
// newer approval) is not known offline.
func (v *Verified) Check(wants []Want) []Result {
	latest := map[toolKey]Decision{}
	for _, d := range v.decisions {
		k := toolKey{d.Server, d.Tool}
		if cur, ok := latest[k]; !ok || d.Index > cur.Index {
			latest[k] = d
		}
	}
	var out []Result
	for _, w := range sortedWants(wants) {
		r := Result{Server: w.Server, Tool: w.Tool, Digest: w.Digest, Profiles: w.Profiles}
		d, ok := v.decisions[digestKey{w.Server, w.Tool, w.Digest}]
		switch {
		case !ok:
			r.Status, r.Rule = StatusMissing, RuleApprovalMissing
			r.Reason = "the bundle proves no approval of this digest (approve it, then rewrite the bundle with 'agentgate lock --approvals LOG')"
		case latest[toolKey{w.Server, w.Tool}].Index != d.Index:
			later := latest[toolKey{w.Server, w.Tool}]
			r.Status, r.Rule = StatusRevoked, RuleApprovalRevoked
			r.Approval, r.Revocation, r.Approved = entryOf(&d), entryOf(&later), later.Digest
			r.Reason = fmt.Sprintf("approved at entry %d, then superseded at entry %d by %s (both in the bundle)", d.Index+1, later.Index+1, later.Digest)
		default:
			dd := d
			r.Status, r.decision, r.Approval = StatusApproved, &dd, entryOf(&dd)
			r.Reason = fmt.Sprintf("approved by %s at entry %d (%s), proven in checkpoint %d", printable(d.Actor), d.Index+1, d.Type, v.Checkpoint.Size)
		}
		if r.Failed() {
			r.Review, r.Approve = ReviewCommands(w.Server, w.Tool, w.Digest)
		}
		out = append(out, r)
	}
	return out
}
