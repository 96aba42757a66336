package checkpoint

import (
	"context"
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Log is the part of the catalog the writer reads (warrant.Catalog has it).
type Log interface {
	AuditHead(ctx context.Context) (warrant.AuditHead, error)
	AuditRecords(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error)
}

// ErrRewritten is wrapped when the log no longer agrees with a checkpoint or its entries do
// not verify: the writer signs nothing and the alarm is the error.
var ErrRewritten = errors.New("the audit log does not verify against its last checkpoint")

// ErrUntrusted is wrapped when the newest checkpoint in the bucket is not one the log key
// signed (it does not parse, holds another entry than its name says, or its signature does
// not verify): someone other than the checkpoint function wrote the bucket. The writer builds
// nothing on it; like ErrRewritten, it means the log can no longer be vouched for, not that a
// service is down.
var ErrUntrusted = errors.New("the last checkpoint is not genuine")

// Writer signs the audit head into a bucket.
type Writer struct {
	// Log is the catalog. Required.
	Log Log
	// Signer is the log key (KMS on AWS). Required.
	Signer signer.Signer
	// Blobs is the checkpoint bucket. Required.
	Blobs blob.Store
	// Keys are extra trusted log keys (rotated-out ones) for entries and older
	// checkpoints; the signer's own key is always trusted.
	Keys map[string]crypto.PublicKey
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// PageSize is how many records one AuditRecords call reads. Default 500.
	PageSize int
	// MaxRecords bounds the entries one run verifies since the last checkpoint (more is an
	// error: run it more often, or raise it). Default 1,000,000.
	MaxRecords int
	// Logger receives one line per run. Default: discard.
	Logger *slog.Logger
	// Notes is the checkpoint key (Ed25519; KMS ECC_NIST_EDWARDS25519 on AWS). When set,
	// each run also writes the C2SP checkpoint note of the audit tree,
	// checkpoints/<size>.note, after checking the tree extends the newest note already
	// there. Default nil: only the JSON head is written.
	Notes MessageSigner
	// Origin names the log in its notes (the first line; the key name). Required with
	// Notes.
	Origin string
	// Tiles, when set with Notes, publishes the tree as c2sp.org/tlog-tiles after each
	// run's note (internal/tiles.Writer): the hash tiles and entry bundles the log gained
	// since the last publication, then the note as the tiled log's checkpoint. A run whose
	// note exists already catches the tiles up to it. Default nil: no tiles.
	Tiles TilePublisher
}

// TilePublisher publishes the audit tree as a static tiled log (internal/tiles).
type TilePublisher interface {
	// PublishTiles writes the tiles and entry bundles of the tree the signed checkpoint
	// note describes, reading the entries it needs from log, then the note as the log's
	// checkpoint. It verifies the note, and that the tiles it writes hash to its root.
	PublishTiles(ctx context.Context, log Log, note []byte) (TilesResult, error)
}

// TilesResult says what one publication of tiles did.
type TilesResult struct {
	// Size is the tree size published (the checkpoint's), Previous the one published
	// before (0 for none).
	Size     int64 `json:"size"`
	Previous int64 `json:"previous"`
	// Tiles and Bundles count the hash tiles and entry bundles written (full and partial);
	// Checkpoint is true when the checkpoint file was written.
	Tiles      int  `json:"tiles"`
	Bundles    int  `json:"bundles"`
	Checkpoint bool `json:"checkpoint"`
	// Read is how many entries were read from the log.
	Read int `json:"read"`
}

// Result says what one run did.
type Result struct {
	// Head is the audit head read.
	Head warrant.AuditHead `json:"head"`
	// Previous is the last checkpoint found (Seq 0 for none).
	Previous int64 `json:"previous"`
	// Written is true when a new checkpoint was stored under Key.
	Written bool   `json:"written"`
	Key     string `json:"key,omitempty"`
	// Verified is how many entries were checked since the previous checkpoint.
	Verified int `json:"verified"`
	// Note is the key of the checkpoint note written, "" when none was.
	Note string `json:"note,omitempty"`
	// Tiles says what publishing the tiles did (nil without Writer.Tiles).
	Tiles *TilesResult `json:"tiles,omitempty"`
}

// Run reads the head; if it is past the last checkpoint, checks every entry since that
// checkpoint (contiguous, linked, hashes, log signatures) and writes a signed checkpoint of
// the head with put-if-absent. An empty log or an unchanged head writes nothing.
func (w *Writer) Run(ctx context.Context) (Result, error) {
	if w.Log == nil || w.Signer == nil || w.Blobs == nil {
		return Result{}, errors.New("checkpoint: Writer.Log, Signer and Blobs are required")
	}
	now, page, max := w.Now, w.PageSize, w.MaxRecords
	if now == nil {
		now = time.Now
	}
	if page <= 0 {
		page = 500
	}
	if max <= 0 {
		max = 1_000_000
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	keys := map[string]crypto.PublicKey{w.Signer.KeyID(): w.Signer.Public()}
	for id, k := range w.Keys {
		keys[id] = k
	}
	head, err := w.Log.AuditHead(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("checkpoint: read audit head: %w", err)
	}
	res := Result{Head: head}
	last, err := w.latest(ctx, keys)
	if err != nil {
		return res, err
	}
	res.Previous = last.Seq
	switch {
	case head.Seq == 0 && last.Seq == 0:
		return res, nil
	case head.Seq < last.Seq:
		return res, fmt.Errorf("checkpoint: %w: the log ends at entry %d, before checkpoint %d", ErrRewritten, head.Seq, last.Seq)
	case head.Seq == last.Seq:
		if head.Hash != last.Hash {
			return res, fmt.Errorf("checkpoint: %w: the head %d has hash %s, checkpoint %d says %s", ErrRewritten, head.Seq, head.Hash, last.Seq, last.Hash)
		}
		return res, w.finish(ctx, head, max, page, &res)
	}
	// Entries last.Seq (to re-check its hash) .. head.Seq.
	prev := warrant.Genesis()
	after := last.Seq
	if last.Seq > 0 {
		after = last.Seq - 1
	}
	for after < head.Seq {
		if res.Verified > max {
			return res, fmt.Errorf("checkpoint: more than %d entries since checkpoint %d; run more often or raise MaxRecords", max, last.Seq)
		}
		recs, err := w.Log.AuditRecords(ctx, after, page)
		if err != nil {
			return res, fmt.Errorf("checkpoint: read audit records after %d: %w", after, err)
		}
		if len(recs) == 0 {
			return res, fmt.Errorf("checkpoint: %w: no entry after %d, but the head is %d", ErrRewritten, after, head.Seq)
		}
		for _, r := range recs {
			if r.Seq > head.Seq {
				break
			}
			if r.Seq == last.Seq && last.Seq > 0 {
				if r.Hash != last.Hash {
					return res, fmt.Errorf("checkpoint: %w: entry %d has hash %s, checkpoint %d says %s", ErrRewritten, r.Seq, r.Hash, last.Seq, last.Hash)
				}
				prev = last.Head()
				after = r.Seq
				continue
			}
			if err := checkRecord(prev, r, keys); err != nil {
				return res, fmt.Errorf("checkpoint: %w: %v", ErrRewritten, err)
			}
			prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
			after = r.Seq
			res.Verified++
		}
	}
	if prev != head {
		return res, fmt.Errorf("checkpoint: %w: entry %d has hash %s, the head says %s", ErrRewritten, prev.Seq, prev.Hash, head.Hash)
	}
	cp, err := Sign(ctx, w.Signer, head, now())
	if err != nil {
		return res, err
	}
	b, err := cp.Marshal()
	if err != nil {
		return res, err
	}
	res.Key = Key(head.Seq)
	if err := w.Blobs.PutIfAbsent(ctx, res.Key, b); err != nil {
		if !errors.Is(err, blob.ErrConflict) {
			return res, fmt.Errorf("checkpoint: write %s: %w", res.Key, err)
		}
		// A concurrent run checkpointed the same entry a moment earlier: fine if it agrees.
		other, gerr := w.Blobs.Get(ctx, res.Key)
		if gerr != nil {
			return res, fmt.Errorf("checkpoint: %s exists and cannot be read: %w", res.Key, gerr)
		}
		oc, perr := Parse(other)
		if perr == nil {
			perr = oc.Verify(keys)
		}
		if perr != nil || oc.Head() != head {
			return res, fmt.Errorf("checkpoint: %w: %s exists and disagrees with the head (%v)", ErrRewritten, res.Key, perr)
		}
		log.InfoContext(ctx, "checkpoint already written", slog.Int64("seq", head.Seq))
		return res, w.finish(ctx, head, max, page, &res)
	}
	res.Written = true
	log.InfoContext(ctx, "checkpoint written", slog.Int64("seq", head.Seq), slog.String("hash", head.Hash), slog.Int("verified", res.Verified), slog.String("key", res.Key))
	return res, w.finish(ctx, head, max, page, &res)
}

// finish writes the note of head, then publishes the tiles of its tree.
func (w *Writer) finish(ctx context.Context, head warrant.AuditHead, max, page int, res *Result) error {
	if err := w.writeNote(ctx, head, max, page, res); err != nil {
		return err
	}
	if w.Tiles == nil || w.Notes == nil || head.Seq == 0 {
		return nil
	}
	key := NoteKey(head.Seq)
	b, err := w.Blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("checkpoint: read %s to publish its tiles: %w", key, err)
	}
	tr, err := w.Tiles.PublishTiles(ctx, w.Log, b)
	res.Tiles = &tr
	if err != nil {
		return err
	}
	if tr.Checkpoint && w.Logger != nil {
		w.Logger.InfoContext(ctx, "tiles published", slog.Int64("size", tr.Size), slog.Int64("previous", tr.Previous),
			slog.Int("tiles", tr.Tiles), slog.Int("bundles", tr.Bundles), slog.Int("read", tr.Read))
	}
	return nil
}

// writeNote writes the C2SP checkpoint note of the tree of head.Seq entries, unless it
// exists. The tree is rebuilt from every entry (at most max: the chain since the last
// checkpoint was verified above, and an entry body is a leaf as stored), and must extend
// the newest note in the bucket: a log key holder's rewrite is never given a note.
func (w *Writer) writeNote(ctx context.Context, head warrant.AuditHead, max, page int, res *Result) error {
	if w.Notes == nil || head.Seq == 0 {
		return nil
	}
	key := NoteKey(head.Seq)
	if _, err := w.Blobs.Get(ctx, key); err == nil {
		return nil
	} else if !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("checkpoint: read %s: %w", key, err)
	}
	if head.Seq > int64(max) {
		return fmt.Errorf("checkpoint: the log has %d entries, more than %d to build its tree from; raise MaxRecords", head.Seq, max)
	}
	vkey, err := VerifierKey(w.Origin, w.Notes.Public())
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	t := &audit.Tree{}
	prev := warrant.Genesis()
	for t.Size() < head.Seq {
		recs, err := w.Log.AuditRecords(ctx, t.Size(), page)
		if err != nil {
			return fmt.Errorf("checkpoint: read audit records after %d: %w", t.Size(), err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("checkpoint: %w: no entry after %d, but the head is %d", ErrRewritten, t.Size(), head.Seq)
		}
		for _, r := range recs {
			if r.Seq > head.Seq {
				break
			}
			if r.Seq != prev.Seq+1 || r.PrevHash != prev.Hash {
				return fmt.Errorf("checkpoint: %w: entry %d does not follow entry %d", ErrRewritten, r.Seq, prev.Seq)
			}
			if h, err := audit.Hash(r.PrevHash, r.Body); err != nil || h != r.Hash {
				return fmt.Errorf("checkpoint: %w: entry %d: its hash does not match its body", ErrRewritten, r.Seq)
			}
			if err := t.Append(r.Body); err != nil {
				return err
			}
			prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
		}
	}
	if prev != head {
		return fmt.Errorf("checkpoint: %w: entry %d has hash %s, the head says %s", ErrRewritten, prev.Seq, prev.Hash, head.Hash)
	}
	notes, err := LoadNotes(ctx, Store{Blobs: w.Blobs, Name: "bucket"}, vkey, nil)
	if err != nil {
		return fmt.Errorf("checkpoint: %w: %w", ErrUntrusted, err)
	}
	if len(notes) > 0 {
		if p := CheckTree(t, notes[len(notes)-1:]); len(p) > 0 {
			return fmt.Errorf("checkpoint: %w: %s", ErrRewritten, p[0].Reason)
		}
	}
	root, err := t.Root(head.Seq)
	if err != nil {
		return err
	}
	b, err := SignNote(ctx, w.Notes, w.Origin, head.Seq, root)
	if err != nil {
		return err
	}
	if err := w.Blobs.PutIfAbsent(ctx, key, b); err != nil && !errors.Is(err, blob.ErrConflict) {
		return fmt.Errorf("checkpoint: write %s: %w", key, err)
	}
	res.Note = key
	return nil
}

// latest returns the newest genuine checkpoint (Seq 0 when there is none). Files that do
// not parse or verify are an alarm, not something to skip silently.
func (w *Writer) latest(ctx context.Context, keys map[string]crypto.PublicKey) (Checkpoint, error) {
	names, err := w.Blobs.List(ctx, Prefix)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: list %s: %w", Prefix, err)
	}
	var seqs []int64
	byseq := map[int64]string{}
	for _, n := range names {
		if s, ok := SeqOf(n); ok {
			seqs = append(seqs, s)
			byseq[s] = n
		}
	}
	if len(seqs) == 0 {
		return Checkpoint{Hash: warrant.GenesisHash}, nil
	}
	s := slices.Max(seqs)
	b, err := w.Blobs.Get(ctx, byseq[s])
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: read %s: %w", byseq[s], err)
	}
	c, err := Parse(b)
	if err == nil && c.Seq != s {
		err = fmt.Errorf("%w: %s holds checkpoint %d", ErrFormat, byseq[s], c.Seq)
	}
	if err == nil {
		err = c.Verify(keys)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w: %s: %w", ErrUntrusted, byseq[s], err)
	}
	return c, nil
}

// checkRecord checks one record against the one before it: the independent core of
// audit.Verify, for a window of the log.
func checkRecord(prev warrant.AuditHead, r warrant.AuditRecord, keys map[string]crypto.PublicKey) error {
	if r.Seq != prev.Seq+1 || r.PrevHash != prev.Hash {
		return fmt.Errorf("entry %d does not follow entry %d (%s)", r.Seq, prev.Seq, short(prev.Hash))
	}
	h, err := audit.Hash(r.PrevHash, r.Body)
	if err != nil || h != r.Hash {
		return fmt.Errorf("entry %d: its hash does not match its body", r.Seq)
	}
	pub, ok := keys[r.KeyID]
	if !ok {
		return fmt.Errorf("entry %d is signed by key %s, which is not a trusted log key", r.Seq, r.KeyID)
	}
	raw, _ := hex.DecodeString(r.Hash)
	if err := signer.Verify(pub, raw, r.Signature); err != nil {
		return fmt.Errorf("entry %d: log signature: %v", r.Seq, err)
	}
	return nil
}
