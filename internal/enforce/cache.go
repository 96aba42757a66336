package enforce

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// evidence is ToolEvidence compiled for the hot path.
type evidence struct {
	approved, crawled       digest
	hasApproved, hasCrawled bool
}

// snapshot is one server's compiled evidence and when it was read.
type snapshot struct {
	tools map[string]evidence
	at    time.Time
	// gen is the same for snapshots with equal tools (see snapshotGen).
	gen uint64
	// approvals names the approved set the snapshot holds (approvalSet): the revision
	// decision records are made under.
	approvals digest
}

// cacheEntry holds the newest snapshot of one server; readers never take a lock.
type cacheEntry struct {
	snap     atomic.Pointer[snapshot]
	failures atomic.Uint64
	lastErr  atomic.Pointer[string]
}

// cache keeps every served server's evidence in memory and refreshes it from the Source.
// The set of servers is fixed at construction, so the map itself is never written after
// New and needs no lock.
type cache struct {
	src         Source
	entries     map[string]*cacheEntry
	staleness   time.Duration
	loadTimeout time.Duration
	now         func() time.Time
	log         *slog.Logger
	// refreshed, when set, is called after every refresh round (tests wait on it).
	refreshed func()

	// feed is src's ChangeFeed, if it has one (nil: every round reads every server).
	// refreshMu serializes rounds (cursor and dirty belong to them): dirty holds the
	// servers whose last read failed, which are read again whatever the feed says.
	feed      ChangeFeed
	refreshMu sync.Mutex
	cursor    string
	dirty     map[string]bool
}

func newCache(src Source, servers []string, staleness, loadTimeout time.Duration, now func() time.Time, log *slog.Logger) *cache {
	c := &cache{src: src, entries: make(map[string]*cacheEntry, len(servers)), staleness: staleness, loadTimeout: loadTimeout, now: now, log: log}
	for _, s := range servers {
		c.entries[s] = &cacheEntry{}
	}
	c.feed, _ = src.(ChangeFeed)
	return c
}

// get returns the server's snapshot if it is fresh, else a denial cause.
func (c *cache) get(server string) (*snapshot, Cause) {
	e, ok := c.entries[server]
	if !ok {
		return nil, CauseServer
	}
	s := e.snap.Load()
	if s == nil || c.now().Sub(s.at) > c.staleness {
		return nil, CauseStale
	}
	return s, causeNone
}

// age returns how old the server's snapshot is (-1 before the first load).
func (c *cache) age(server string) time.Duration {
	e, ok := c.entries[server]
	if !ok {
		return -1
	}
	s := e.snap.Load()
	if s == nil {
		return -1
	}
	return c.now().Sub(s.at)
}

// fresh reports whether every server has a fresh snapshot (the health status).
func (c *cache) fresh() bool {
	for s := range c.entries {
		if _, cause := c.get(s); cause != causeNone {
			return false
		}
	}
	return true
}

// refresh loads every server once, concurrently, each bounded by loadTimeout. A failed
// load keeps the previous snapshot (decisions go on until it is stale). With a change
// feed, it loads only the servers the feed names, those never loaded and those whose last
// load failed; the others' snapshots are confirmed as of the moment before the feed was
// read. A feed that cannot be read makes the round load every server.
func (c *cache) refresh(ctx context.Context) {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	confirmed := c.now()
	ch, err := Changes{All: true}, error(nil)
	if c.feed != nil {
		ch, err = c.readFeed(ctx)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = map[string]bool{}
	)
	for name, e := range c.entries {
		prev := e.snap.Load()
		if err == nil && !ch.All && !ch.Servers[name] && !c.dirty[name] && prev != nil {
			if prev.at.Before(confirmed) {
				next := *prev
				next.at = confirmed
				e.snap.Store(&next)
			}
			continue
		}
		wg.Go(func() {
			if !c.load(ctx, name, e) {
				mu.Lock()
				failed[name] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err == nil {
		c.cursor = ch.Cursor
	}
	// What failed is read again next round, whatever the feed says then.
	c.dirty = failed
	if c.refreshed != nil {
		c.refreshed()
	}
}

// readFeed asks the feed for the changes since the last round, bounded by loadTimeout.
func (c *cache) readFeed(ctx context.Context) (Changes, error) {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	ch, err := c.feed.Changes(ctx, c.cursor)
	if err != nil {
		c.log.WarnContext(ctx, "enforce: cannot read the change feed; reading every server", slog.String("error", err.Error()))
	}
	return ch, err
}

// load reads one server's snapshot and reports whether it did.
func (c *cache) load(ctx context.Context, server string, e *cacheEntry) bool {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	started := c.now()
	s, err := c.src.Snapshot(ctx, server)
	if err == nil && s.Server != server {
		err = errors.New("source returned the snapshot of server " + s.Server)
	}
	if err != nil {
		e.failures.Add(1)
		msg := err.Error()
		if prev := e.lastErr.Swap(&msg); prev == nil || *prev != msg {
			c.log.WarnContext(ctx, "enforce: cannot refresh approvals", slog.String("server", server), slog.String("error", msg))
		}
		return false
	}
	if prev := e.lastErr.Swap(nil); prev != nil {
		c.log.InfoContext(ctx, "enforce: approvals readable again", slog.String("server", server))
	}
	at := started
	if !s.ReadAt.IsZero() && s.ReadAt.Before(at) {
		at = s.ReadAt
	}
	next := compile(ctx, c.log, server, s, at)
	if prev := e.snap.Load(); prev != nil && maps.Equal(prev.tools, next.tools) {
		next.gen = prev.gen
	} else {
		next.gen = snapshotGen.Add(1)
	}
	e.snap.Store(next)
	return true
}

// compile parses the snapshot's digests. A malformed approved digest is no approval (and
// logged): the tool is denied rather than guessed at.
func compile(ctx context.Context, log *slog.Logger, server string, s Snapshot, at time.Time) *snapshot {
	out := &snapshot{tools: make(map[string]evidence, len(s.Tools)), at: at}
	for name, t := range s.Tools {
		var ev evidence
		if t.Approved != "" {
			if ev.approved, ev.hasApproved = parseDigest(t.Approved); !ev.hasApproved {
				log.WarnContext(ctx, "enforce: ignoring a malformed approved digest", slog.String("server", server), slog.String("tool", name))
			}
		}
		if t.Crawled != "" {
			ev.crawled, ev.hasCrawled = parseDigest(t.Crawled)
		}
		out.tools[name] = ev
	}
	out.approvals = approvalSet(out.tools)
	return out
}

// approvalSet names an approved set by its content: SHA-256 over the sorted lines
// "tool SP digest LF" of every tool with an approved digest. Every enforcement point that
// reads the same approvals computes the same name, so decision records from different
// replicas and transports can be compared ("under which approvals").
func approvalSet(tools map[string]evidence) digest {
	names := make([]string, 0, len(tools))
	for name, ev := range tools {
		if ev.hasApproved {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	var line []byte
	for _, name := range names {
		line = append(append(line[:0], name...), ' ')
		line = appendDigest(line, tools[name].approved)
		h.Write(append(line, '\n'))
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// run refreshes on every tick until ctx ends.
func (c *cache) run(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			c.refresh(ctx)
		}
	}
}
