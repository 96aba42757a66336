// Command tilesverify reads a toolwarrant log published as c2sp.org/tlog-tiles with
// golang.org/x/mod alone: tilesverify URL VKEY SEQ checks the checkpoint's signature,
// rebuilds its root from the tiles, and proves and prints audit entry SEQ.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var prefix = strings.TrimSuffix(os.Args[1], "/") + "/"

func get(name string) []byte {
	resp, err := http.Get(prefix + name)
	check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	check(err)
	if resp.StatusCode != 200 {
		check(fmt.Errorf("GET %s: %s", name, resp.Status))
	}
	return b
}

// path maps sumdb's tile/8/L/N and tile/8/data/N to tlog-tiles' tile/L/N and tile/entries/N.
func path(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	if rest, ok := strings.CutPrefix(p, "data/"); ok {
		return "tile/entries/" + rest
	}
	return "tile/" + p
}

type tiles struct{}

func (tiles) Height() int { return 8 }
func (tiles) ReadTiles(ts []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(ts))
	for i, t := range ts {
		out[i] = get(path(t))
	}
	return out, nil
}
func (tiles) SaveTiles([]tlog.Tile, [][]byte) {}

func main() {
	v, err := note.NewVerifier(os.Args[2])
	check(err)
	n, err := note.Open(get("checkpoint"), note.VerifierList(v))
	check(err)
	tree, err := tlog.ParseTree([]byte("go.sum database tree\n" + strings.SplitN(n.Text, "\n", 2)[1]))
	check(err)
	hashes := tlog.TileHashReader(tree, tiles{}) // every hash it returns is checked against the root
	seq, err := strconv.ParseInt(os.Args[3], 10, 64)
	check(err)
	if seq < 1 || seq > tree.N {
		check(fmt.Errorf("entry %d is not in the tree of size %d", seq, tree.N))
	}
	i := seq - 1
	w := min(256, tree.N-i/256*256)
	bundle := get(path(tlog.Tile{H: 8, L: -1, N: i / 256, W: int(w)}))
	var entry []byte
	for k := int64(0); k <= i%256; k++ { // uint16 big-endian length, then the entry
		l := int(binary.BigEndian.Uint16(bundle))
		entry, bundle = bundle[2:2+l], bundle[2+l:]
	}
	proof, err := tlog.ProveRecord(tree.N, i, hashes)
	check(err)
	check(tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(entry)))
	fmt.Printf("entry %d of %s (tree size %d):\n%s\n", seq, v.Name(), tree.N, entry)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tilesverify:", err)
		os.Exit(1)
	}
}
