package approvalproof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/tiles"
)

// Errors. Every error of [Read] and [VerifyBundle] wraps one of them.
var (
	// ErrUnreadable: the log, the bundle or a file of them could not be read (missing,
	// unreachable, over a bound, not a regular file).
	ErrUnreadable = errors.New("cannot read")
	// ErrUntrusted: what was read does not verify — a checkpoint not signed by the
	// policy's log key or short of its witness quorum, entries that do not hash to the
	// checkpoint's root, a bundle whose proof or entry does not check.
	ErrUntrusted = errors.New("not verified")
)

// Decision types: the audit entry types that decide a tool's approved digest.
const (
	TypeApproved   = "approved"
	TypeRejected   = "rejected"
	TypeRolledBack = "rolled_back"
)

// DefaultMaxLogBytes bounds what [Read] reads of one log's entry bundles by default.
const DefaultMaxLogBytes int64 = 1 << 30

// Options tune [Read].
type Options struct {
	// MaxLogBytes bounds the bytes of entry bundles read, all together. Default
	// DefaultMaxLogBytes.
	MaxLogBytes int64
}

// Checkpoint is a checkpoint that verified under a policy.
type Checkpoint struct {
	// Origin, Size and Root are the checkpoint's.
	Origin string
	Size   int64
	Root   tlog.Hash
	// Note is the note as published: its text and signature lines, cosignatures included.
	Note []byte
	// Cosigned names (the policy's names) the witnesses whose cosignatures verified.
	Cosigned []string
}

// Decision is one decision entry of the log.
type Decision struct {
	// Index is the entry's leaf index in the tree (zero-based; its audit seq is Index+1).
	Index int64
	// Type is TypeApproved, TypeRejected or TypeRolledBack.
	Type string
	// Server, Tool and Digest are what the entry decided.
	Server, Tool, Digest string
	// Actor and At are who decided and when, as the entry says (RFC 3339).
	Actor, At string
	// Entry is the entry's leaf bytes: its canonical audit body.
	Entry []byte
}

// Log is a tiled log read and verified by [Read]: its checkpoint and every decision
// entry up to it.
type Log struct {
	Checkpoint Checkpoint
	// Decisions are the decision entries, in log order.
	Decisions []Decision
	// Entries is the number of entries read (the checkpoint's size).
	Entries int64

	tree *audit.Tree
}

// entryBody is the audit body of an entry (internal/audit.Body), as far as a decision
// needs it. The event may carry more members (a bulk approval's statement): only server,
// tool and digest are read.
type entryBody struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	Actor string          `json:"actor"`
	At    string          `json:"at"`
	Event json.RawMessage `json:"event"`
}

type decisionEvent struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Digest string `json:"digest"`
}

// decisionOf parses entry (leaf index i) as a decision; ok is false for other entries.
// A decision entry that does not parse, or an entry numbered other than i+1, is an error.
func decisionOf(i int64, entry []byte) (Decision, bool, error) {
	var b entryBody
	if err := json.Unmarshal(entry, &b); err != nil {
		return Decision{}, false, fmt.Errorf("entry %d is not an audit entry: %v", i+1, err)
	}
	if b.Seq != i+1 {
		return Decision{}, false, fmt.Errorf("leaf %d is audit entry %d, not %d", i, b.Seq, i+1)
	}
	switch b.Type {
	case TypeApproved, TypeRejected, TypeRolledBack:
	default:
		return Decision{}, false, nil
	}
	var ev decisionEvent
	if err := json.Unmarshal(b.Event, &ev); err != nil || ev.Server == "" || ev.Tool == "" || !validDigest(ev.Digest) {
		return Decision{}, false, fmt.Errorf("entry %d (%s) does not name a server, a tool and a sha256: digest", i+1, b.Type)
	}
	return Decision{Index: i, Type: b.Type, Server: ev.Server, Tool: ev.Tool, Digest: ev.Digest, Actor: b.Actor, At: b.At, Entry: entry}, true, nil
}

// validDigest reports whether d is "sha256:" and 64 lower-case hex digits.
func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// OpenCheckpoint verifies a checkpoint note under p, as `toolwarrant audit verify
// --policy` does: signed by the policy's log key (the only one, else the one whose origin
// the note names) and cosigned by the policy's quorum of witnesses. Errors wrap
// ErrUntrusted.
func OpenCheckpoint(noteBytes []byte, p *checkpoint.Policy) (Checkpoint, error) {
	if p == nil || len(p.Logs) == 0 {
		return Checkpoint{}, fmt.Errorf("%w: the policy names no log key", ErrUntrusted)
	}
	origin, _, _ := strings.Cut(string(noteBytes), "\n")
	l := p.Logs[0]
	if len(p.Logs) > 1 {
		var ok bool
		if l, ok = p.Log(origin); !ok {
			return Checkpoint{}, fmt.Errorf("%w: the checkpoint is of the log %q, which is none of the policy's %d logs", ErrUntrusted, printable(origin), len(p.Logs))
		}
	}
	n, err := checkpoint.OpenNote(noteBytes, l.VKey, p.WitnessVerifiers())
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: the checkpoint of %q is not signed by the policy's log key %s (%v): check that the policy's log line is this log's key, as 'toolwarrant audit key --checkpoint' prints it",
			ErrUntrusted, printable(origin), l.Origin, err)
	}
	if err := p.Check(n); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint %d of %s is %v: publish a checkpoint the policy's witnesses cosigned", ErrUntrusted, n.Size, n.Origin, err)
	}
	return Checkpoint{Origin: n.Origin, Size: n.Size, Root: n.Root, Note: n.Bytes, Cosigned: p.Cosigned(n)}, nil
}

// printable bounds and escapes a string from the log for a message.
func printable(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// Read reads the tiled log of src and verifies it under p: the checkpoint (OpenCheckpoint),
// then every entry bundle up to its size, whose entries must be the leaves of its root.
// Errors wrap ErrUnreadable or ErrUntrusted.
func Read(ctx context.Context, src Source, p *checkpoint.Policy, opt Options) (*Log, error) {
	if opt.MaxLogBytes <= 0 {
		opt.MaxLogBytes = DefaultMaxLogBytes
	}
	nb, err := src.Get(ctx, tiles.CheckpointName, tiles.MaxCheckpointBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: its checkpoint: %w", ErrUnreadable, err)
	}
	cp, err := OpenCheckpoint(nb, p)
	if err != nil {
		return nil, err
	}
	l := &Log{Checkpoint: cp, tree: &audit.Tree{}}
	var read int64
	var malformed error // the first decision entry that does not parse: told only once the tree verifies
	for n := int64(0); n*tiles.Width < cp.Size; n++ {
		w := int(min(tiles.Width, cp.Size-n*tiles.Width))
		entries, size, err := readBundle(ctx, src, n, w)
		if err != nil {
			return nil, err
		}
		if read += size; read > opt.MaxLogBytes {
			return nil, fmt.Errorf("%w: its entry bundles are more than %d bytes (the bound on what is read of one log)", ErrUnreadable, opt.MaxLogBytes)
		}
		for j, e := range entries {
			i := n*tiles.Width + int64(j)
			if err := l.tree.Append(e); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
			}
			if malformed != nil {
				continue
			}
			d, ok, err := decisionOf(i, e)
			switch {
			case err != nil:
				malformed = err
			case ok:
				l.Decisions = append(l.Decisions, d)
			}
		}
	}
	l.Entries = l.tree.Size()
	root, err := l.tree.Root(cp.Size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if root != cp.Root {
		return nil, fmt.Errorf("%w: the entry bundles do not hash to the root of checkpoint %d of %s: the tiles were altered or are not this log's; do not trust them (republish with 'toolwarrant tlog tiles --rebuild')",
			ErrUntrusted, cp.Size, cp.Origin)
	}
	if malformed != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntrusted, malformed)
	}
	return l, nil
}

// readBundle reads entry bundle n of width w (a partial one, or the first w entries of the
// full one when the partial is gone, as tlog-tiles allows) and returns its entries and
// its size in bytes.
func readBundle(ctx context.Context, src Source, n int64, w int) ([][]byte, int64, error) {
	t := tlog.Tile{H: tiles.Height, L: -1, N: n, W: w}
	name := tiles.Path(t)
	b, err := src.Get(ctx, name, tiles.MaxTileBytes)
	if errors.Is(err, tiles.ErrNotFound) && w < tiles.Width {
		full := t
		full.W = tiles.Width
		if fb, ferr := src.Get(ctx, tiles.Path(full), tiles.MaxTileBytes); ferr == nil {
			b, err = fb, nil
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: entry bundle %s: %w", ErrUnreadable, name, err)
	}
	entries, err := tiles.ParseBundle(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: entry bundle %s: %v", ErrUntrusted, name, err)
	}
	if len(entries) != w && (len(entries) != tiles.Width || w == tiles.Width) {
		return nil, 0, fmt.Errorf("%w: entry bundle %s holds %d entries, not %d", ErrUntrusted, name, len(entries), w)
	}
	return entries[:w], int64(len(b)), nil
}
