package audit

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// The audit log as an RFC 6962 Merkle tree.
//
// Leaf i (zero-based) of the tree is the canonical body of entry i+1, the same bytes the
// chain hashes: leaf hash = SHA-256(0x00 || body) (tlog.RecordHash), interior nodes
// SHA-256(0x01 || left || right). The tree of size N therefore commits to exactly the
// bodies the chain of head N commits to; the chain (entry_hash = SHA-256(prev || body),
// each signed by the log key) stays for compatibility and for the per-entry signatures,
// and the tree adds what the chain cannot give: a root that standard tools check,
// inclusion proofs of one entry and consistency proofs between two sizes, both
// logarithmic.

// LeafHash returns the tree's leaf hash of an entry body.
func LeafHash(body []byte) tlog.Hash { return tlog.RecordHash(body) }

// Tree holds every stored hash of the tree (2N of them for N leaves) in memory: what a
// verifier that reads the whole log builds as it goes, and what proofs are made from. It
// is not safe for concurrent use.
type Tree struct {
	hashes []tlog.Hash // tlog's stored-hash order
	n      int64
}

// ReadHashes implements tlog.HashReader.
func (t *Tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.hashes)) {
			return nil, fmt.Errorf("tree: no stored hash %d (the tree has %d leaves)", x, t.n)
		}
		out[i] = t.hashes[x]
	}
	return out, nil
}

// Append adds the next entry's body as a leaf.
func (t *Tree) Append(body []byte) error {
	hs, err := tlog.StoredHashes(t.n, body, t)
	if err != nil {
		return fmt.Errorf("tree: append leaf %d: %w", t.n, err)
	}
	t.hashes = append(t.hashes, hs...)
	t.n++
	return nil
}

// Size is the number of leaves.
func (t *Tree) Size() int64 { return t.n }

// ErrSize is wrapped when a size or index is outside the tree.
var ErrSize = errors.New("outside the tree")

// Root returns the root hash of the tree's first n leaves (n ≤ Size()).
func (t *Tree) Root(n int64) (tlog.Hash, error) {
	if n < 0 || n > t.n {
		return tlog.Hash{}, fmt.Errorf("tree size %d: %w of %d leaves", n, ErrSize, t.n)
	}
	return tlog.TreeHash(n, t)
}

// InclusionProof proves leaf index (zero-based: entry index+1) in the tree of size n.
func (t *Tree) InclusionProof(index, n int64) (tlog.RecordProof, error) {
	if n < 1 || n > t.n || index < 0 || index >= n {
		return nil, fmt.Errorf("leaf %d in tree size %d: %w of %d leaves", index, n, ErrSize, t.n)
	}
	return tlog.ProveRecord(n, index, t)
}

// ConsistencyProof proves the tree of size old is a prefix of the tree of size n.
func (t *Tree) ConsistencyProof(old, n int64) (tlog.TreeProof, error) {
	if old < 1 || old > n || n > t.n {
		return nil, fmt.Errorf("consistency %d → %d: %w of %d leaves", old, n, ErrSize, t.n)
	}
	return tlog.ProveTree(n, old, t)
}
