package tiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Writer publishes checkpoints of the audit tree, with their tiles and entry bundles, to a
// Store. It is safe to run again after any failure (every write is idempotent), and two
// writers racing publish the same bytes; the checkpoint file only moves forward.
type Writer struct {
	// Store is where the log is published. Required.
	Store Store
	// VerifierKey is the checkpoint verifier key (origin+hash+base64): the note published
	// and the checkpoint already in the store must verify under it. Required.
	VerifierKey string
	// PageSize is how many entries one AuditRecords call reads. Default 500.
	PageSize int
	// MaxEntries bounds the entries one publication reads, which is the entries since the
	// last full bundle before the published checkpoint (more is an error: publish more
	// often, or raise it). Default 1,000,000.
	MaxEntries int
	// Rebuild ignores the checkpoint already published: every tile and bundle of the tree
	// is computed from the log and checked against the store (one that exists with other
	// bytes is an error), and the checkpoint is written unless a larger one is there.
	// Default false: only what the log gained since the published checkpoint.
	Rebuild bool
}

var _ checkpoint.TilePublisher = (*Writer)(nil)

// Result is what one publication did.
type Result = checkpoint.TilesResult

// Published returns the checkpoint the store holds, verified under the writer's verifier
// key; nil when there is none. One that does not verify is an error wrapping
// checkpoint.ErrUntrusted: someone else wrote the store.
func (w *Writer) Published(ctx context.Context) (*checkpoint.Note, error) {
	b, err := w.Store.Get(ctx, CheckpointName, MaxCheckpointBytes)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tiles: read the published checkpoint: %w", err)
	}
	n, err := checkpoint.OpenNote(b, w.VerifierKey, nil)
	if err != nil {
		return nil, fmt.Errorf("tiles: %w: the checkpoint in %s: %w", checkpoint.ErrUntrusted, storeName(w.Store), err)
	}
	return n, nil
}

// PublishTiles implements checkpoint.TilePublisher: it publishes the tree of the signed
// checkpoint note, reading its entries from log. In order: it reads the published
// checkpoint (size M) and reads from the log the entries from the last full bundle before
// M up to the note's size N, checking their chain, that none is too large for a bundle,
// that those before M are the leaves the published tiles hold, and that the tree they make
// with the published tiles has the note's root; only then it writes the tiles
// tlog.NewTiles(8, M, N) names, reads the entries again to write their bundles, and
// writes the note as the checkpoint. A note no larger than the one published writes
// nothing (but cosignatures it adds to an equal one), after checking the published tiles
// agree with it.
func (w *Writer) PublishTiles(ctx context.Context, log checkpoint.Log, note []byte) (Result, error) {
	if w.Store == nil || w.VerifierKey == "" || log == nil {
		return Result{}, errors.New("tiles: Writer.Store and VerifierKey, and a log, are required")
	}
	page, maxEntries := w.PageSize, w.MaxEntries
	if page <= 0 {
		page = 500
	}
	if maxEntries <= 0 {
		maxEntries = 1_000_000
	}
	n, err := checkpoint.OpenNote(note, w.VerifierKey, nil)
	if err != nil {
		return Result{}, fmt.Errorf("tiles: the checkpoint to publish: %w", err)
	}
	res := Result{Size: n.Size}
	cur, err := w.Published(ctx)
	if err != nil {
		return res, err
	}
	tr := &tileReader{ctx: ctx, store: w.Store, cache: map[tlog.Tile][]byte{}}
	var old tlog.Tree
	if cur != nil {
		res.Previous = cur.Size
		if cur.Size >= n.Size {
			if err := tilesAgree(cur, n, tr); err != nil {
				return res, err
			}
			if cur.Size > n.Size && !w.Rebuild {
				return res, nil // a larger checkpoint is published: nothing to add
			}
			if !w.Rebuild {
				return res, w.mergeCosignatures(ctx, cur, note, &res)
			}
		}
		if !w.Rebuild {
			old = tlog.Tree{N: cur.Size, Hash: cur.Root}
		}
	}
	m, size := old.N, n.Size
	start := m / Width * Width // the first entry of the bundle that was partial at m
	if size-start > int64(maxEntries) {
		return res, fmt.Errorf("tiles: publishing size %d after %d reads %d entries, more than %d; publish more often or raise MaxEntries", size, m, size-start, maxEntries)
	}
	h := &hashes{base: tlog.StoredHashCount(m)}
	var oldLeaves []tlog.Hash
	if m > 0 {
		h.old = tlog.TileHashReader(old, tr)
		if start < m {
			idx := make([]int64, m-start)
			for i := range idx {
				idx[i] = tlog.StoredHashIndex(0, start+int64(i))
			}
			if oldLeaves, err = h.old.ReadHashes(idx); err != nil {
				return res, tileError(m, err)
			}
		}
	}

	// Pass 1: every leaf hash, checked; nothing is written before the root agrees.
	leaves := make([]tlog.Hash, 0, size-start)
	err = w.each(ctx, log, start, size, page, func(r warrant.AuditRecord) error {
		i := r.Seq - 1
		if len(r.Body) > MaxEntryBytes {
			return fmt.Errorf("tiles: audit entry %d (%s): %w: its body is %d bytes and an entry bundle holds at most %d (c2sp.org/tlog-tiles: a 2-byte length); nothing from entry %d on can be published as tiles, which stay at size %d",
				r.Seq, r.Type, ErrEntryTooLarge, len(r.Body), MaxEntryBytes, r.Seq, m)
		}
		leaf := audit.LeafHash(r.Body)
		leaves = append(leaves, leaf)
		res.Read++
		if i < m {
			if leaf != oldLeaves[i-start] {
				return fmt.Errorf("tiles: %w: audit entry %d is not the entry the tiles published for size %d hold", checkpoint.ErrRewritten, r.Seq, m)
			}
			return nil
		}
		hs, err := tlog.StoredHashesForRecordHash(i, leaf, h)
		if err != nil {
			return tileError(m, err)
		}
		h.mem = append(h.mem, hs...)
		return nil
	})
	if err != nil {
		return res, err
	}
	root, err := tlog.TreeHash(size, h)
	if err != nil {
		return res, tileError(m, err)
	}
	if root != n.Root {
		what := fmt.Sprintf("the first %d entries of the log", size)
		if m > 0 {
			what = fmt.Sprintf("the tiles published for size %d with entries %d to %d of the log", m, m+1, size)
		}
		return res, fmt.Errorf("tiles: %w: %s hash to root %s, but the checkpoint of size %d says %s", checkpoint.ErrRewritten, what, root, size, n.Root)
	}

	// The hash tiles, from the hashes just checked.
	for _, t := range tlog.NewTiles(Height, m, size) {
		data, err := tlog.ReadTileData(t, h)
		if err != nil {
			return res, tileError(m, err)
		}
		if err := w.put(ctx, Path(t), data); err != nil {
			return res, err
		}
		res.Tiles++
	}

	// Pass 2: the entry bundles, each entry checked against its leaf hash again.
	var bundle []byte
	count := 0
	flush := func(at int64) error {
		t := EntryTile(tlog.Tile{H: Height, L: 0, N: at / Width, W: count})
		if err := w.put(ctx, Path(t), bundle); err != nil {
			return err
		}
		res.Bundles++
		bundle, count = nil, 0
		return nil
	}
	err = w.each(ctx, log, start, size, page, func(r warrant.AuditRecord) error {
		i := r.Seq - 1
		if audit.LeafHash(r.Body) != leaves[i-start] {
			return fmt.Errorf("tiles: %w: audit entry %d changed while its tiles were written", checkpoint.ErrRewritten, r.Seq)
		}
		var err error
		if bundle, err = AppendEntry(bundle, r.Body); err != nil {
			return fmt.Errorf("tiles: audit entry %d: %w", r.Seq, err)
		}
		if count++; count == Width {
			return flush(i)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if count > 0 {
		if err := flush(size - 1); err != nil {
			return res, err
		}
	}

	// The checkpoint last, so that a reader never finds one whose tiles are missing; and
	// never over a larger one another writer published meanwhile.
	if now, err := w.Published(ctx); err != nil {
		return res, err
	} else if now != nil && now.Size > size {
		return res, nil
	} else if now != nil && now.Size == size {
		return res, w.mergeCosignatures(ctx, now, note, &res)
	}
	if err := w.Store.Put(ctx, CheckpointName, note, Checkpoint); err != nil {
		return res, fmt.Errorf("tiles: write the checkpoint: %w", err)
	}
	res.Checkpoint = true
	return res, nil
}

// tilesAgree checks that the published tiles of the larger (or equal) checkpoint cur
// give n's root at n's size: the two checkpoints are of one tree.
func tilesAgree(cur, n *checkpoint.Note, tr *tileReader) error {
	if cur.Size == n.Size {
		if cur.Root != n.Root {
			return fmt.Errorf("tiles: %w: the published checkpoint of size %d has root %s, the one to publish %s", checkpoint.ErrRewritten, n.Size, cur.Root, n.Root)
		}
		return nil
	}
	if n.Size == 0 {
		return nil
	}
	root, err := tlog.TreeHash(n.Size, tlog.TileHashReader(tlog.Tree{N: cur.Size, Hash: cur.Root}, tr))
	if err != nil {
		return tileError(cur.Size, err)
	}
	if root != n.Root {
		return fmt.Errorf("tiles: %w: the tiles published for size %d give root %s at size %d, but the checkpoint to publish says %s", checkpoint.ErrRewritten, cur.Size, root, n.Size, n.Root)
	}
	return nil
}

// mergeCosignatures replaces the published checkpoint cur with itself plus the signature
// lines of note (of the same tree) that it lacks, if any.
func (w *Writer) mergeCosignatures(ctx context.Context, cur *checkpoint.Note, note []byte, res *Result) error {
	merged := checkpoint.WithCosignatures(cur.Bytes, note)
	if bytes.Equal(merged, cur.Bytes) {
		return nil
	}
	if err := w.Store.Put(ctx, CheckpointName, merged, Checkpoint); err != nil {
		return fmt.Errorf("tiles: write the checkpoint: %w", err)
	}
	res.Checkpoint = true
	return nil
}

func (w *Writer) put(ctx context.Context, name string, data []byte) error {
	err := w.Store.Put(ctx, name, data, KindOf(name))
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("tiles: %w: %s is published with other content than the log gives it (the log's entries differ from when it was written, or someone else wrote %s): %w",
			checkpoint.ErrRewritten, name, storeName(w.Store), err)
	}
	if err != nil {
		return fmt.Errorf("tiles: write %s: %w", name, err)
	}
	return nil
}

// each calls f with the log's entries start+1 .. size (leaf indexes start .. size-1), in
// order, checking they are contiguous, linked and hash as their bodies.
func (w *Writer) each(ctx context.Context, log checkpoint.Log, start, size int64, page int, f func(warrant.AuditRecord) error) error {
	after := start
	var prev string
	for after < size {
		recs, err := log.AuditRecords(ctx, after, page)
		if err != nil {
			return fmt.Errorf("tiles: read audit records after %d: %w", after, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("tiles: %w: no audit entry after %d, but the checkpoint has %d", checkpoint.ErrRewritten, after, size)
		}
		for _, r := range recs {
			if r.Seq > size {
				break
			}
			if r.Seq != after+1 || prev != "" && r.PrevHash != prev {
				return fmt.Errorf("tiles: %w: entry %d does not follow entry %d", checkpoint.ErrRewritten, r.Seq, after)
			}
			if h, err := audit.Hash(r.PrevHash, r.Body); err != nil || h != r.Hash {
				return fmt.Errorf("tiles: %w: entry %d: its hash does not match its body", checkpoint.ErrRewritten, r.Seq)
			}
			if err := f(r); err != nil {
				return err
			}
			after, prev = r.Seq, r.Hash
		}
	}
	return nil
}

// errRead marks a tile the store could not give (as opposed to one that does not verify).
var errRead = errors.New("cannot read tile")

// tileError wraps an error from reading the tiles published for size m: the store's
// errors as they are, a tile that does not verify against the checkpoint as
// checkpoint.ErrUntrusted (someone else wrote the tiles).
func tileError(m int64, err error) error {
	if errors.Is(err, errRead) {
		return fmt.Errorf("tiles: the tiles published for size %d: %w", m, err)
	}
	return fmt.Errorf("tiles: %w: the tiles published for size %d do not verify against its checkpoint: %v", checkpoint.ErrUntrusted, m, err)
}

// tileReader reads published tiles for tlog.TileHashReader, which authenticates them
// against a checkpoint on every read; the cache only saves fetches.
type tileReader struct {
	ctx   context.Context
	store Store
	cache map[tlog.Tile][]byte
}

func (r *tileReader) Height() int { return Height }

func (r *tileReader) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		if b, ok := r.cache[t]; ok {
			out[i] = b
			continue
		}
		want := t.W * tlog.HashSize
		b, err := r.store.Get(r.ctx, Path(t), int64(want))
		if errors.Is(err, ErrNotFound) && t.W < Width {
			// A partial tile may be gone once the full one exists (tlog-tiles).
			full := t
			full.W = Width
			if fb, ferr := r.store.Get(r.ctx, Path(full), Width*tlog.HashSize); ferr == nil && len(fb) == Width*tlog.HashSize {
				b, err = fb[:want], nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", errRead, Path(t), err)
		}
		if len(b) != want {
			return nil, fmt.Errorf("tile %s is %d bytes, not %d", Path(t), len(b), want)
		}
		r.cache[t] = b
		out[i] = b
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// hashes is the tree's stored hashes: those of the published tree (indexes below base)
// through the tiles, the new ones in memory.
type hashes struct {
	base int64
	old  tlog.HashReader // nil when nothing was published
	mem  []tlog.Hash
}

func (h *hashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var oldIdx []int64
	var oldAt []int
	for i, x := range indexes {
		switch {
		case x < h.base:
			oldIdx, oldAt = append(oldIdx, x), append(oldAt, i)
		case x-h.base < int64(len(h.mem)):
			out[i] = h.mem[x-h.base]
		default:
			return nil, fmt.Errorf("tiles: no stored hash %d", x)
		}
	}
	if len(oldIdx) > 0 {
		if h.old == nil {
			return nil, fmt.Errorf("tiles: no stored hash %d", oldIdx[0])
		}
		hs, err := h.old.ReadHashes(oldIdx)
		if err != nil {
			return nil, err
		}
		for j, at := range oldAt {
			out[at] = hs[j]
		}
	}
	return out, nil
}
