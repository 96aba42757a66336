// Package tilestest is an independent c2sp.org/tlog-tiles client for tests: it reads a
// tiled log over HTTP with net/http and golang.org/x/mod/sumdb alone — none of
// toolwarrant's tree, tile or checkpoint code — as a monitor or a mirror would. It opens
// the checkpoint with sumdb/note under the log's verifier key, rebuilds the root from the
// hash tiles through tlog.TileHashReader, and proves entries from the entry bundles with
// tlog.ProveRecord and tlog.CheckRecord.
package tilestest

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Client fetches the files of one tiled log.
type Client struct {
	// URL returns the URL of a file of the log (a name such as "checkpoint" or
	// "tile/0/000"): the log's prefix and the name, or a presigned S3 URL. Required.
	URL func(name string) (string, error)
	// HTTP is the client. Default http.DefaultClient.
	HTTP *http.Client

	mu      sync.Mutex
	headers map[string]http.Header
}

// Prefix returns a Client of the log served at prefix (an http:// URL ending in "/").
func Prefix(prefix string) *Client {
	return &Client{URL: func(name string) (string, error) { return prefix + name, nil }}
}

// Fetch GETs one file and returns its body; any status but 200 is an error.
func (c *Client) Fetch(name string) ([]byte, error) {
	u, err := c.URL(name)
	if err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", name, resp.Status, b)
	}
	c.mu.Lock()
	if c.headers == nil {
		c.headers = map[string]http.Header{}
	}
	c.headers[name] = resp.Header.Clone()
	c.mu.Unlock()
	return b, nil
}

// Header returns the response headers of the last fetch of name (nil if never fetched).
func (c *Client) Header(name string) http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.headers[name]
}

// path is a tile's tlog-tiles path: sumdb's tile/8/L/N[.p/W] without the height, and
// its data level named entries.
func path(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	if strings.HasPrefix(p, "data/") {
		return "tile/entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

// tileReader is a tlog.TileReader over HTTP.
type tileReader struct{ c *Client }

func (r tileReader) Height() int { return 8 }

func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.c.Fetch(path(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (r tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// Log is a tiled log whose checkpoint verified and whose tiles give its root.
type Log struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	// Note is the checkpoint as served.
	Note   []byte
	c      *Client
	hashes tlog.HashReader
}

// Open fetches and verifies the checkpoint under vkey and rebuilds its root from the
// hash tiles; the test fails if either does not hold.
func Open(t testing.TB, c *Client, vkey string) *Log {
	t.Helper()
	b, err := c.Fetch("checkpoint")
	if err != nil {
		t.Fatalf("tilestest: %v", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("tilestest: verifier key: %v", err)
	}
	n, err := note.Open(b, note.VerifierList(v))
	if err != nil {
		t.Fatalf("tilestest: the checkpoint does not verify under %s: %v\n%s", vkey, err, b)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] != v.Name() {
		t.Fatalf("tilestest: checkpoint text %q is not origin, size, root", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatalf("tilestest: checkpoint size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		t.Fatalf("tilestest: checkpoint root %q", lines[2])
	}
	l := &Log{Origin: lines[0], Size: size, Note: b, c: c}
	copy(l.Root[:], raw)
	l.hashes = tlog.TileHashReader(tlog.Tree{N: size, Hash: l.Root}, tileReader{c})
	root, err := tlog.TreeHash(size, l.hashes)
	if err != nil {
		t.Fatalf("tilestest: the tree hash from the tiles: %v", err)
	}
	if root != l.Root {
		t.Fatalf("tilestest: the tiles hash to %s, the checkpoint says %s", root, l.Root)
	}
	return l
}

// Bundle fetches entry bundle n (full, or of width w when w < 256) and splits it.
func (l *Log) Bundle(t testing.TB, n int64, w int) [][]byte {
	t.Helper()
	b, err := l.c.Fetch(path(tlog.Tile{H: 8, L: -1, N: n, W: w}))
	if err != nil {
		t.Fatalf("tilestest: %v", err)
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
			t.Fatalf("tilestest: bundle %d is truncated", n)
		}
		k := int(binary.BigEndian.Uint16(b))
		out = append(out, b[2:2+k])
		b = b[2+k:]
	}
	if len(out) != w {
		t.Fatalf("tilestest: bundle %d holds %d entries, want %d", n, len(out), w)
	}
	return out
}

// Entries fetches every entry bundle of the tree and checks each entry's RFC 6962 leaf
// hash against the level-0 tiles (authenticated by the root): entry i is leaf i.
func (l *Log) Entries(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for n := int64(0); n*256 < l.Size; n++ {
		out = append(out, l.Bundle(t, n, int(min(256, l.Size-n*256)))...)
	}
	idx := make([]int64, len(out))
	for i := range out {
		idx[i] = tlog.StoredHashIndex(0, int64(i))
	}
	hs, err := l.hashes.ReadHashes(idx)
	if err != nil {
		t.Fatalf("tilestest: leaf hashes: %v", err)
	}
	for i, e := range out {
		if tlog.RecordHash(e) != hs[i] {
			t.Fatalf("tilestest: entry %d of the bundles does not hash to leaf %d of the tiles", i, i)
		}
	}
	return out
}

// Prove proves entry index (its bytes from the bundles) in the checkpoint's tree with
// tlog.ProveRecord over the tiles and checks the proof with tlog.CheckRecord.
func (l *Log) Prove(t testing.TB, index int64, entry []byte) tlog.RecordProof {
	t.Helper()
	p, err := tlog.ProveRecord(l.Size, index, l.hashes)
	if err != nil {
		t.Fatalf("tilestest: prove entry %d: %v", index, err)
	}
	if err := tlog.CheckRecord(p, l.Size, l.Root, index, tlog.RecordHash(entry)); err != nil {
		t.Fatalf("tilestest: entry %d's inclusion proof does not check: %v", index, err)
	}
	return p
}

// Find returns the index of the first entry whose bytes contain sub, -1 if none.
func Find(entries [][]byte, sub string) int64 {
	for i, e := range entries {
		if strings.Contains(string(e), sub) {
			return int64(i)
		}
	}
	return -1
}
