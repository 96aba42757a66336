package tiles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/storetest"
	"github.com/agentgate-dev/agentgate/internal/tiles/tilestest"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var t0 = time.Date(2026, 10, 12, 9, 30, 0, 0, time.UTC)

const origin = "example.com/tiles-test"

// memLog is an audit log in memory, chained and signed by the audit package.
type memLog struct {
	recs  []warrant.AuditRecord
	reads int
}

func (l *memLog) AuditHead(context.Context) (warrant.AuditHead, error) {
	if len(l.recs) == 0 {
		return warrant.Genesis(), nil
	}
	r := l.recs[len(l.recs)-1]
	return warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}, nil
}

func (l *memLog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	var out []warrant.AuditRecord
	for _, r := range l.recs {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	l.reads += len(out)
	return out, nil
}

// add appends n entries; every tenth is an approval.
func (l *memLog) add(t *testing.T, key *keysigner.Signer, n int, pad int) {
	t.Helper()
	head, _ := l.AuditHead(t.Context())
	var evs []warrant.Event
	for i := range n {
		seq := len(l.recs) + i + 1
		typ := "crawl_observed"
		if seq%10 == 0 {
			typ = "approved"
		}
		evs = append(evs, warrant.Event{Type: typ, Actor: "alice@example.com", At: t0.Add(time.Duration(seq) * time.Second),
			Body: json.RawMessage(fmt.Sprintf(`{"server":"weather","tool":"get_forecast","n":%d,"pad":%q}`, seq, strings.Repeat("x", pad)))})
	}
	recs, err := (&audit.Chainer{Signer: key}).Chain(t.Context(), head, evs)
	if err != nil {
		t.Fatal(err)
	}
	l.recs = append(l.recs, recs...)
}

// note signs the checkpoint of the log's first size entries, its root from audit.Tree.
func (l *memLog) note(t *testing.T, cp *keysigner.Signer, size int) []byte {
	t.Helper()
	tr := &audit.Tree{}
	for _, r := range l.recs[:size] {
		if err := tr.Append(r.Body); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Root(int64(size))
	if err != nil {
		t.Fatal(err)
	}
	b, err := checkpoint.SignNote(t.Context(), cp, origin, int64(size), root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keys(t *testing.T) (logKey, cpKey *keysigner.Signer, vkey string) {
	t.Helper()
	dir := t.TempDir()
	logKey, err := keysigner.Create(filepath.Join(dir, "log.key"), keysigner.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	cpKey, err = keysigner.Create(filepath.Join(dir, "cp.key"), keysigner.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err = checkpoint.VerifierKey(origin, cpKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	return logKey, cpKey, vkey
}

// recording is a Store that records every Put.
type recording struct {
	tiles.Store
	mu   sync.Mutex
	puts []string
}

func (r *recording) Put(ctx context.Context, name string, data []byte, kind tiles.Kind) error {
	r.mu.Lock()
	r.puts = append(r.puts, name)
	r.mu.Unlock()
	return r.Store.Put(ctx, name, data, kind)
}

func (r *recording) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.puts
	r.puts = nil
	sort.Strings(out)
	return out
}

// files lists the regular files under dir, slash-separated.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		tile tlog.Tile
		path string
	}{
		{tlog.Tile{H: 8, L: 0, N: 0, W: 256}, "tile/0/000"},
		{tlog.Tile{H: 8, L: 0, N: 1, W: 44}, "tile/0/001.p/44"},
		{tlog.Tile{H: 8, L: 4, N: 1234067, W: 256}, "tile/4/x001/x234/067"}, // tlog-tiles' own example
		{tlog.Tile{H: 8, L: 2, N: 1000, W: 1}, "tile/2/x001/000.p/1"},
		{tlog.Tile{H: 8, L: -1, N: 1234067, W: 256}, "tile/entries/x001/x234/067"},
		{tlog.Tile{H: 8, L: -1, N: 2, W: 88}, "tile/entries/002.p/88"},
	} {
		if got := tiles.Path(tc.tile); got != tc.path {
			t.Errorf("Path(%+v) = %q, want %q", tc.tile, got, tc.path)
		}
		if got, err := tiles.ParsePath(tc.path); err != nil || got != tc.tile {
			t.Errorf("ParsePath(%q) = %+v, %v", tc.path, got, err)
		}
		wantKind := tiles.Full
		if tc.tile.W < 256 {
			wantKind = tiles.Partial
		}
		if k := tiles.KindOf(tc.path); k != wantKind {
			t.Errorf("KindOf(%q) = %v", tc.path, k)
		}
	}
	for _, bad := range []string{"tile/0/1", "tile/0/0000", "tile/8/0/000", "tile/0/000.p/256", "tile/0/000.p/0", "tile/0/000.p/07",
		"tile/data/000", "tile/64/000", "tile/-1/000", "tile/0/x000/001", "tiles/0/000", "tile/0/../000", "checkpoint/x"} {
		if _, err := tiles.ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
		if tiles.ValidName(bad) {
			t.Errorf("ValidName(%q)", bad)
		}
	}
	if !tiles.ValidName("checkpoint") || tiles.KindOf("checkpoint") != tiles.Checkpoint {
		t.Error("checkpoint is not a valid name of kind Checkpoint")
	}
}

func TestBundle(t *testing.T) {
	var b []byte
	var err error
	want := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{'z'}, tiles.MaxEntryBytes)}
	for _, e := range want {
		if b, err = tiles.AppendEntry(b, e); err != nil {
			t.Fatal(err)
		}
	}
	if b[0] != 0 || b[1] != 1 || b[2] != 'a' || b[3] != 0 || b[4] != 0 || b[5] != 0xff || b[6] != 0xff {
		t.Errorf("bundle starts % x, want big-endian uint16 lengths", b[:7])
	}
	got, err := tiles.ParseBundle(b)
	if err != nil || len(got) != 3 || !bytes.Equal(got[2], want[2]) {
		t.Errorf("ParseBundle: %d entries, %v", len(got), err)
	}
	if _, err := tiles.AppendEntry(nil, make([]byte, tiles.MaxEntryBytes+1)); !errors.Is(err, tiles.ErrEntryTooLarge) {
		t.Errorf("an entry of 65,536 bytes: %v, want ErrEntryTooLarge", err)
	}
	if _, err := tiles.ParseBundle(b[:len(b)-1]); err == nil {
		t.Error("a truncated bundle parsed")
	}
}

// TestPublishGrowsAcrossATileBoundary: a log of 300 entries is published as one full
// level-0 tile and bundle, a partial tile and bundle of 44 and a partial level-1 tile of
// 1; grown to 600, exactly the tiles the tree gained are written (the full tile 0/000 and
// bundle 000 are not touched, 0/001 becomes full, 0/002.p/88 and 1/000.p/2 are new, and
// the partial files of 300 stay for readers of that checkpoint); only the entries after
// the last full bundle are read. An independent client, served the directory over loopback
// HTTP, verifies both checkpoints, rebuilds their roots from the tiles and proves an
// approval entry; the leaf hashes are audit.Tree's and the bundles hold the entry bodies.
func TestPublishGrowsAcrossATileBoundary(t *testing.T) {
	ctx := t.Context()
	logKey, cpKey, vkey := keys(t)
	log := &memLog{}
	log.add(t, logKey, 300, 0)
	dir := t.TempDir()
	store := &recording{Store: tiles.Dir(dir)}
	w := &tiles.Writer{Store: store, VerifierKey: vkey, PageSize: 64}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	res, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 300))
	if err != nil {
		t.Fatal(err)
	}
	want300 := []string{"checkpoint", "tile/0/000", "tile/0/001.p/44", "tile/1/000.p/1", "tile/entries/000", "tile/entries/001.p/44"}
	if got := store.take(); !slices.Equal(got, want300) {
		t.Errorf("publishing 300 wrote %v, want %v", got, want300)
	}
	if res != (tiles.Result{Size: 300, Tiles: 3, Bundles: 2, Checkpoint: true, Read: 300}) {
		t.Errorf("result %+v", res)
	}
	check(t, srv.URL+"/", vkey, log, 300)

	log.add(t, logKey, 300, 0)
	log.reads = 0
	if res, err = w.PublishTiles(ctx, log, log.note(t, cpKey, 600)); err != nil {
		t.Fatal(err)
	}
	want600 := []string{"checkpoint", "tile/0/001", "tile/0/002.p/88", "tile/1/000.p/2", "tile/entries/001", "tile/entries/002.p/88"}
	if got := store.take(); !slices.Equal(got, want600) {
		t.Errorf("growing to 600 wrote %v, want %v", got, want600)
	}
	if res.Previous != 300 || res.Read != 600-256 || log.reads != 2*(600-256) {
		t.Errorf("growing to 600: %+v, %d records read; want entries 257..600 read twice (hashes, then bundles)", res, log.reads)
	}
	if got, want := files(t, dir), []string{"checkpoint", "tile/0/000", "tile/0/001", "tile/0/001.p/44", "tile/0/002.p/88", "tile/1/000.p/1", "tile/1/000.p/2",
		"tile/entries/000", "tile/entries/001", "tile/entries/001.p/44", "tile/entries/002.p/88"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	check(t, srv.URL+"/", vkey, log, 600)

	// Again: nothing to write. An older checkpoint: nothing, and no error.
	for _, size := range []int{600, 300} {
		if res, err := w.PublishTiles(ctx, log, log.note(t, cpKey, size)); err != nil || res.Checkpoint || res.Tiles+res.Bundles > 0 {
			t.Errorf("publishing %d again: %+v, %v", size, res, err)
		}
		if got := store.take(); len(got) > 0 {
			t.Errorf("publishing %d again wrote %v", size, got)
		}
	}
	// A rebuild from the log finds every file as it should be.
	rb := *w
	rb.Rebuild = true
	if res, err := rb.PublishTiles(ctx, log, log.note(t, cpKey, 600)); err != nil || res.Checkpoint || res.Tiles != 4 || res.Bundles != 3 {
		t.Errorf("rebuild: %+v, %v", res, err)
	}
	// The partial tile of 300 served for that checkpoint's readers is the prefix of the
	// full one.
	p, _ := os.ReadFile(filepath.Join(dir, "tile/0/001.p/44"))
	f, _ := os.ReadFile(filepath.Join(dir, "tile/0/001"))
	if len(p) != 44*32 || !bytes.Equal(p, f[:44*32]) {
		t.Error("tile/0/001.p/44 is not the first 44 hashes of tile/0/001")
	}
}

// check reads the log served at prefix as an independent client would and compares it
// with the log and with audit.Tree.
func check(t *testing.T, prefix, vkey string, log *memLog, size int) {
	t.Helper()
	l := tilestest.Open(t, tilestest.Prefix(prefix), vkey)
	if l.Size != int64(size) {
		t.Fatalf("served checkpoint size %d, want %d", l.Size, size)
	}
	tr := &audit.Tree{}
	for _, r := range log.recs[:size] {
		_ = tr.Append(r.Body)
	}
	if root, _ := tr.Root(int64(size)); root != l.Root {
		t.Errorf("served root %s, audit.Tree's %s", l.Root, root)
	}
	entries := l.Entries(t)
	for i, e := range entries {
		if !bytes.Equal(e, log.recs[i].Body) {
			t.Fatalf("bundled entry %d is not audit entry %d's body", i, i+1)
		}
		if audit.LeafHash(e) != tlog.RecordHash(e) {
			t.Fatal("audit.LeafHash is not the RFC 6962 leaf hash")
		}
	}
	i := tilestest.Find(entries, `"type":"approved"`)
	if i < 0 {
		t.Fatal("no approval among the entries")
	}
	l.Prove(t, i, entries[i])
	last := int64(size - 1)
	l.Prove(t, last, entries[last])
}

// TestOversizedEntryRefused: an entry longer than 65,535 bytes cannot be bundled; the
// writer says which entry, its size and the bound, and publishes nothing for that
// checkpoint: the published one stays.
func TestOversizedEntryRefused(t *testing.T) {
	ctx := t.Context()
	logKey, cpKey, vkey := keys(t)
	log := &memLog{}
	log.add(t, logKey, 5, 0)
	dir := t.TempDir()
	store := &recording{Store: tiles.Dir(dir)}
	w := &tiles.Writer{Store: store, VerifierKey: vkey}
	if _, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 5)); err != nil {
		t.Fatal(err)
	}
	store.take()
	before, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	log.add(t, logKey, 1, 70000)
	log.add(t, logKey, 1, 0)
	_, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 7))
	if !errors.Is(err, tiles.ErrEntryTooLarge) || !strings.Contains(err.Error(), "audit entry 6 ") || !strings.Contains(err.Error(), "65535") ||
		!strings.Contains(err.Error(), "stay at size 5") {
		t.Fatalf("publishing past a 70 KB entry: %v", err)
	}
	if got := store.take(); len(got) > 0 {
		t.Errorf("the refused publication wrote %v", got)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(before, after) {
		t.Error("the checkpoint changed")
	}
}

// TestPublishRefusesWhatDoesNotAgree: a log rewritten after the published checkpoint, a
// note of a rewritten log, a tile someone altered and a checkpoint signed by another key
// are each refused with the error the checkpoint function alarms on, writing nothing.
func TestPublishRefusesWhatDoesNotAgree(t *testing.T) {
	ctx := t.Context()
	logKey, cpKey, vkey := keys(t)
	log := &memLog{}
	log.add(t, logKey, 270, 0)
	dir := t.TempDir()
	store := &recording{Store: tiles.Dir(dir)}
	w := &tiles.Writer{Store: store, VerifierKey: vkey}
	if _, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 270)); err != nil {
		t.Fatal(err)
	}
	store.take()

	// Entries 1..260 rewritten and re-signed, then grown: its note is refused, since
	// the published tiles for 270 do not hold entry 257..260 as it now has them.
	forged := &memLog{}
	forged.add(t, logKey, 256, 0)
	forged.add(t, logKey, 50, 3)
	if _, err := w.PublishTiles(ctx, forged, forged.note(t, cpKey, 300)); !errors.Is(err, checkpoint.ErrRewritten) {
		t.Errorf("a rewritten log: %v, want ErrRewritten", err)
	}
	// A note whose root is not the log's.
	log.add(t, logKey, 30, 0)
	if _, err := w.PublishTiles(ctx, log, forged.note(t, cpKey, 300)); !errors.Is(err, checkpoint.ErrRewritten) || !strings.Contains(err.Error(), "hash to root") {
		t.Errorf("a note of another log: %v, want ErrRewritten", err)
	}
	if got := store.take(); len(got) > 0 {
		t.Errorf("refused publications wrote %v", got)
	}
	// An altered partial tile of the published checkpoint.
	p := filepath.Join(dir, "tile", "0", "001.p", "14")
	orig, _ := os.ReadFile(p)
	bad := bytes.Clone(orig)
	bad[0] ^= 1
	_ = os.WriteFile(p, bad, 0o644)
	if _, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 300)); !errors.Is(err, checkpoint.ErrUntrusted) {
		t.Errorf("an altered tile: %v, want ErrUntrusted", err)
	}
	_ = os.WriteFile(p, orig, 0o644)
	// A checkpoint signed by another key.
	_, _, other := keys(t)
	w2 := *w
	w2.VerifierKey = other
	if _, err := w2.PublishTiles(ctx, log, log.note(t, cpKey, 300)); err == nil || !strings.Contains(err.Error(), "to publish") {
		t.Errorf("a note not signed by the checkpoint key: %v", err)
	}
	if got := store.take(); len(got) > 0 {
		t.Errorf("refused publications wrote %v", got)
	}
	// Restored, it publishes.
	if _, err := w.PublishTiles(ctx, log, log.note(t, cpKey, 300)); err != nil {
		t.Errorf("after the tile was restored: %v", err)
	}
	// A full tile with other bytes is never replaced.
	if err := tiles.Dir(dir).Put(ctx, "tile/0/000", make([]byte, 8192), tiles.Full); !errors.Is(err, tiles.ErrExists) {
		t.Errorf("rewriting a full tile: %v, want ErrExists", err)
	}
}

// TestCheckpointWriterPublishesTiles: checkpoint.Writer with Tiles set publishes each
// run's note as the tiled log's checkpoint, and a run whose note exists catches the tiles
// up (a deployment that turns tiles on later).
func TestCheckpointWriterPublishesTiles(t *testing.T) {
	ctx := t.Context()
	logKey, cpKey, vkey := keys(t)
	log := &memLog{}
	log.add(t, logKey, 40, 0)
	bucket := &blob.Mem{}
	cw := &checkpoint.Writer{Log: log, Signer: logKey, Blobs: bucket, Notes: cpKey, Origin: origin, Now: func() time.Time { return t0 }}
	if res, err := cw.Run(ctx); err != nil || res.Tiles != nil {
		t.Fatalf("without tiles: %+v, %v", res, err)
	}
	dir := t.TempDir()
	cw.Tiles = &tiles.Writer{Store: tiles.Dir(dir), VerifierKey: vkey}
	res, err := cw.Run(ctx)
	if err != nil || res.Tiles == nil || !res.Tiles.Checkpoint || res.Tiles.Size != 40 {
		t.Fatalf("tiles turned on: %+v, %v", res, err)
	}
	log.add(t, logKey, 260, 0)
	if res, err = cw.Run(ctx); err != nil || res.Tiles.Size != 300 || res.Tiles.Previous != 40 {
		t.Fatalf("grown: %+v %+v, %v", res, res.Tiles, err)
	}
	note, _ := bucket.Get(ctx, checkpoint.NoteKey(300))
	if served, _ := os.ReadFile(filepath.Join(dir, "checkpoint")); !bytes.Equal(served, note) {
		t.Error("the published checkpoint is not checkpoints/300.note")
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	check(t, srv.URL+"/", vkey, log, 300)
}

func TestDirConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) tiles.Store { return tiles.Dir(t.TempDir()) })
}
