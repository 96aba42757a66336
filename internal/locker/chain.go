package locker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
)

// GenesisHash is block 0's prev_hash and an empty pad's head: 64 ASCII zeros.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// NextHash returns the curr_hash of a block with the given prev_hash and payload:
// lowercase hex of sha256(prev || payload), where prev is the 64-character hex text.
func NextHash(prev string, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(payload)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// IsHash reports whether s is a 64-character lowercase hex digest.
func IsHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ChainHead computes the head of a chain of payloads from genesis, as a writer does before it
// hands a reference to a reader.
func ChainHead(payloads [][]byte) string {
	var w Walker
	for _, p := range payloads {
		w.Next(p)
	}
	return w.Head()
}

// Walker recomputes a chain block by block without allocating per block: readers use it to
// verify what a daemon served, writers to compute the reference head of what they send. The
// zero value starts at genesis.
type Walker struct {
	h       hash.Hash // reused; payloads are streamed into it, never copied
	sum     [sha256.Size]byte
	head    [64]byte // hex of the current head
	started bool
	n       int
}

// Next extends the chain with payload and returns the new head as hex bytes, valid until the
// next call.
func (w *Walker) Next(payload []byte) []byte {
	w.Begin()
	w.h.Write(payload)
	return w.End()
}

// Begin starts the next block when its payload arrives in pieces: Write each piece,
// then End. Begin, Write… and End compute exactly what Next computes.
func (w *Walker) Begin() {
	if !w.started {
		w.h = sha256.New()
		copy(w.head[:], GenesisHash)
		w.started = true
	}
	w.h.Reset()
	w.h.Write(w.head[:])
}

// Write hashes the next piece of the payload begun with Begin.
func (w *Walker) Write(p []byte) (int, error) { return w.h.Write(p) }

// End finishes the block begun with Begin and returns the new head as hex bytes, valid
// until the next call.
func (w *Walker) End() []byte {
	hex.Encode(w.head[:], w.h.Sum(w.sum[:0]))
	w.n++
	return w.head[:]
}

// Head returns the current head (genesis before any block).
func (w *Walker) Head() string {
	if !w.started {
		return GenesisHash
	}
	return string(w.head[:])
}

// Len returns how many blocks the walker has consumed.
func (w *Walker) Len() int { return w.n }

// Audit checks a pad's stored blocks against its stored metadata, as seal does before it
// freezes a pad and check-integrity does for every pad: contiguous 0-based seq, prev linkage
// from genesis, every curr_hash recomputed from its payload, the stored head equal to the last
// curr_hash (genesis if empty), and the stored byte and block counts equal to the sums. It
// returns one line per problem, nil when the pad is consistent. It never repairs anything:
// a repaired chain would destroy the evidence that an acknowledged write went missing.
func Audit(p Pad, blocks []Block) []string {
	var problems []string
	prev := GenesisHash
	total := 0
	for i, b := range blocks {
		if b.Seq != i {
			problems = append(problems, fmt.Sprintf("block at position %d has seq %d", i, b.Seq))
		}
		if b.PrevHash != prev {
			problems = append(problems, fmt.Sprintf("block %d prev_hash does not link to its predecessor", b.Seq))
		}
		if got := NextHash(b.PrevHash, b.Payload); got != b.CurrHash {
			problems = append(problems, fmt.Sprintf("block %d curr_hash does not match its payload", b.Seq))
		}
		prev = b.CurrHash
		total += len(b.Payload)
	}
	if p.HeadHash != prev {
		problems = append(problems, "stored head does not match the last block")
	}
	if p.TotalBytes != total {
		problems = append(problems, fmt.Sprintf("stored byte count %d != %d bytes of payload", p.TotalBytes, total))
	}
	if p.BlockCount != len(blocks) {
		problems = append(problems, fmt.Sprintf("stored block count %d != %d blocks", p.BlockCount, len(blocks)))
	}
	return problems
}

// auditDetail renders an audit's problems the way the seal refusal reports them.
func auditDetail(problems []string) string {
	return fmt.Sprintf("refusing to seal: the stored chain is not consistent (%d problem(s): %s)",
		len(problems), strings.Join(problems, "; "))
}
