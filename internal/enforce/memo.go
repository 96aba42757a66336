package enforce

import (
	"bytes"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// listingMemo remembers whole tools/list decisions by the exact result bytes, the servers
// they were decided for, each server's snapshot generation and each server's listing
// state version. A repeat listing then costs one hash of the bytes and one compare.
//
// Why a hit is exactly the decision the full path would make: which tools are kept
// depends only on the bytes (the digests are a pure function of them) and on the
// snapshots' evidence (equal generation means equal evidence). The full path's side
// effects — the last-listed digest per tool and the once-per-definition observations —
// are a no-op when repeated on a server whose state has not changed since this entry
// applied them, which the version proves. Only the metrics are counted again.
type listingMemo struct {
	seed     maphash.Seed
	mu       sync.RWMutex
	entries  []*memoEntry
	next     int // clock hand: the entry replaced next when full
	bytes    int
	maxBytes int
	tally    *tally
}

// maxMemoEntries bounds the entries (each is also bounded by bytes): listings differ per
// set of targets and per caller filtering (mcpAuthorization), but not by many.
const maxMemoEntries = 16

type memoEntry struct {
	hash     uint64
	result   []byte // a private copy of the listing's bytes
	srvs     []*server
	gens     []uint64
	versions []uint64
	d        Decision
	drops    [len(observationKinds)]uint32
	// shape tallies every decision this entry makes, for the decision records.
	shape *listShape
}

func newListingMemo(maxBytes int, t *tally) *listingMemo {
	if maxBytes <= 0 {
		return nil
	}
	return &listingMemo{seed: maphash.MakeSeed(), maxBytes: maxBytes, tally: t}
}

// get returns the memoized decision for result decided for srvs with snaps, if every
// server's snapshot generation and state version are still the ones the entry recorded,
// and counts it on the entry's shape (under the read lock, so that an entry evicted under
// the write lock is counted no more: see listShape).
func (m *listingMemo) get(h uint64, result []byte, srvs []*server, snaps []*snapshot) (*memoEntry, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.entries {
		if e.hash != h || len(e.result) != len(result) || len(e.srvs) != len(srvs) {
			continue
		}
		same := true
		for i, s := range srvs {
			if e.srvs[i] != s || e.gens[i] != snaps[i].gen || e.versions[i] != s.version.Load() {
				same = false
				break
			}
		}
		if same && bytes.Equal(e.result, result) {
			if e.shape != nil {
				e.shape.n.Add(1)
			}
			return e, true
		}
	}
	return nil, false
}

// put remembers a decision (pass or mutated only) and reports whether it did: it then
// holds shape, registered with the tally and counted once for this decision. versions
// are the servers' state versions right after the decision applied its side effects.
func (m *listingMemo) put(h uint64, result []byte, srvs []*server, snaps []*snapshot, versions []uint64, d Decision, drops [len(observationKinds)]uint32, shape *listShape) bool {
	size := len(result) + len(d.Mutated)
	if size > m.maxBytes/4 {
		return false
	}
	e := &memoEntry{hash: h, result: bytes.Clone(result), srvs: append([]*server(nil), srvs...),
		gens: make([]uint64, len(snaps)), versions: versions, d: d, drops: drops, shape: shape}
	for i, s := range snaps {
		e.gens[i] = s.gen
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.entries) > 0 && (len(m.entries) >= maxMemoEntries || m.bytes+size > m.maxBytes) {
		m.next %= len(m.entries)
		old := m.entries[m.next]
		m.bytes -= len(old.result) + len(old.d.Mutated)
		m.entries = append(m.entries[:m.next], m.entries[m.next+1:]...)
		if old.shape != nil {
			old.shape.evicted.Store(true)
		}
	}
	if shape != nil {
		shape.n.Add(1)
		m.tally.register(shape)
	}
	m.entries = append(m.entries, e)
	m.bytes += size
	m.next++
	return true
}

// snapshotGen numbers snapshot contents: a refresh that reads the same evidence keeps
// its generation, so memoized decisions survive it.
var snapshotGen atomic.Uint64
