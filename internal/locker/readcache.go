package locker

import "sync"

// DefaultReadCacheEntries bounds the read decisions a Service remembers (about 0.5 KB each).
const DefaultReadCacheEntries = 16384

// readCache remembers what the store answered for reads whose answer can never change: a
// sealed pad's record with a ticket of that pad that is read_unlimited, or read_once with its
// lease started. Pads and tickets are never deleted (both stores refuse it), a sealed pad's
// record is final (append, seal and lazy expiry change open pads only) and a lease's start
// is written once, so a remembered pair is what every later store read would return. A
// read that finds its pair here still applies every check to it: the ticket's pad in
// constant time and the lease window against the current time. Only a ticket that already
// read is remembered, by its hash (the key the store looks it up by), so a wrong ticket
// always goes to the store. Bounded by entries; emptied when full (the next read of each
// pad costs its store read again).
type readCache struct {
	mu  sync.RWMutex
	m   map[readKey]readEntry
	max int
}

type readKey struct{ padID, ticketHash string }

type readEntry struct {
	pad    Pad
	ticket Ticket
}

func newReadCache(entries int) *readCache {
	if entries < 0 {
		return nil
	}
	if entries == 0 {
		entries = DefaultReadCacheEntries
	}
	return &readCache{m: map[readKey]readEntry{}, max: entries}
}

// final reports whether the store's answer for p and t can never change.
func final(p Pad, t Ticket) bool {
	return p.ID != DemoPadID && p.State == StateSealed && t.PadID == p.ID &&
		(t.Type == TicketReadUnlimited || t.Type == TicketReadOnce && t.LeaseStartedAt != 0)
}

func (c *readCache) get(padID, ticketHash string) (readEntry, bool) {
	if c == nil {
		return readEntry{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[readKey{padID, ticketHash}]
	return e, ok
}

// put remembers p and t when their answer is final.
func (c *readCache) put(p Pad, t Ticket) {
	if c == nil || !final(p, t) {
		return
	}
	k := readKey{p.ID, t.Hash}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = readEntry{p, t}
}
