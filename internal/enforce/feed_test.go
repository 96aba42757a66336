package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// logCatalog is a catalog with an audit log for the change feed: each server's tools,
// the entries appended, and a count of the reads.
type logCatalog struct {
	warrant.Catalog
	mu      sync.Mutex
	tools   map[string][]warrant.ToolRecord
	log     []warrant.AuditRecord
	reads   map[string]int // server → ServerTools calls
	heads   int
	failOn  map[string]bool // ServerTools of these fails
	headErr error
}

func newLogCatalog(servers ...string) *logCatalog {
	c := &logCatalog{tools: map[string][]warrant.ToolRecord{}, reads: map[string]int{}, failOn: map[string]bool{}}
	for _, s := range servers {
		c.tools[s] = nil
	}
	return c
}

func (c *logCatalog) head() warrant.AuditHead {
	if len(c.log) == 0 {
		return warrant.Genesis()
	}
	r := c.log[len(c.log)-1]
	return warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
}

// append adds an entry of type typ whose body names server ("" for none).
func (c *logCatalog) append(typ, server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.head()
	// The body as the audit package writes it: the event under "event".
	event := map[string]string{}
	if server != "" {
		event["server"] = server
	}
	body, _ := json.Marshal(map[string]any{"type": typ, "seq": h.Seq + 1, "event": event})
	c.log = append(c.log, warrant.AuditRecord{Seq: h.Seq + 1, Type: typ, PrevHash: h.Hash, Hash: fmt.Sprintf("%064x", h.Seq+1), Body: body})
}

// approve sets server's tool t approved as digest d, and logs it.
func (c *logCatalog) approve(server, tool string, d warrant.Digest) {
	c.mu.Lock()
	c.tools[server] = []warrant.ToolRecord{{Server: server, Tool: tool, LastCrawl: 1, ServerLastCrawl: 1, Current: d, Approved: d}}
	c.mu.Unlock()
	c.append(string(warrant.DecisionApproved), server)
}

func (c *logCatalog) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, h := c.reads, c.heads
	c.reads, c.heads = map[string]int{}, 0
	return r, h
}

func (c *logCatalog) ServerTools(_ context.Context, server string) ([]warrant.ToolRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[server]++
	recs, ok := c.tools[server]
	if !ok {
		return nil, warrant.ErrNotFound
	}
	if c.failOn[server] {
		return nil, warrant.ErrUnavailable
	}
	return slices.Clone(recs), nil
}

func (c *logCatalog) AuditHead(context.Context) (warrant.AuditHead, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heads++
	if c.headErr != nil {
		return warrant.AuditHead{}, c.headErr
	}
	return c.head(), nil
}

func (c *logCatalog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []warrant.AuditRecord
	for _, r := range c.log {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// TestChangeFeed: with CatalogFeedSource, a refresh reads only the servers the audit log
// names since the last round, and every server when it cannot tell; the servers it does
// not read stay fresh; a server whose read failed is read again; a change always reaches
// the decisions within one round.
func TestChangeFeed(t *testing.T) {
	a := warrant.Digest("sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	b := warrant.Digest("sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	servers := []string{"s0", "s1", "s2", "s3"}
	cat := newLogCatalog(servers...)
	for _, s := range servers {
		cat.approve(s, "t", a)
	}
	clock := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	p, err := New(Config{Servers: servers, Source: CatalogFeedSource{CatalogSource{Catalog: cat}}, Refresh: 5 * time.Second, Staleness: 10 * time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p.Start(ctx)
	defer p.Close(context.Background())
	// call is the cause a tools/call of t would be denied with by the evidence alone
	// (causeNone: served): stale evidence, or t drifted from its approval.
	call := func(server string) Cause {
		snap, cause := p.cache.get(server)
		if cause != causeNone {
			return cause
		}
		if ev := snap.tools["t"]; ev.crawled != ev.approved {
			return CauseDrifted
		}
		return causeNone
	}
	all := map[string]int{"s0": 1, "s1": 1, "s2": 1, "s3": 1}
	round := func(name string, want map[string]int) {
		t.Helper()
		cat.take()
		p.Refresh(ctx)
		got, heads := cat.take()
		if heads != 1 || !maps.Equal(got, want) {
			t.Errorf("%s: %d head reads, servers read %v; want 1 and %v", name, heads, got, want)
		}
	}
	if got, _ := cat.take(); !maps.Equal(got, all) {
		t.Fatalf("first load read %v, want every server once", got)
	}

	advance(8 * time.Second)
	round("nothing changed", map[string]int{})
	advance(8 * time.Second) // 16 s after the first read: fresh only because the round confirmed it
	if c := call("s1"); c != causeNone {
		t.Fatalf("a server the feed confirmed unchanged: cause %v, want none", c)
	}

	cat.append(warrant.EventDecisionsRecorded, "")
	cat.append(warrant.EventPolicyAdded, "")
	round("only decision records and a policy", map[string]int{})

	// A rug pull approved away: the revocation reaches the decisions in one round.
	cat.mu.Lock()
	cat.tools["s2"] = []warrant.ToolRecord{{Server: "s2", Tool: "t", LastCrawl: 1, ServerLastCrawl: 1, Current: b, Approved: a}}
	cat.mu.Unlock()
	cat.append(warrant.EventCrawlObserved, "s2")
	round("one server crawled", map[string]int{"s2": 1})
	if c := call("s2"); c != CauseDrifted {
		t.Errorf("after s2 drifted: cause %v, want %v", c, CauseDrifted)
	}
	if c := call("s0"); c != causeNone {
		t.Errorf("s0 untouched: cause %v", c)
	}

	cat.append("trust_changed", "")
	cat.append("something_new", "")
	round("an entry naming no server, of a type the feed does not know", all)

	// A failed read stays due until it succeeds, whatever the feed says.
	cat.mu.Lock()
	cat.failOn["s3"] = true
	cat.mu.Unlock()
	cat.append(string(warrant.DecisionRolledBack), "s3")
	round("s3 changed, its read fails", map[string]int{"s3": 1})
	round("s3 again, though the log did not move", map[string]int{"s3": 1})
	cat.mu.Lock()
	delete(cat.failOn, "s3")
	cat.mu.Unlock()
	round("s3 read at last", map[string]int{"s3": 1})
	round("then nothing", map[string]int{})

	// A log that was replaced (the entries after the cursor do not chain from it).
	cat.mu.Lock()
	cat.log[len(cat.log)-1].Hash = fmt.Sprintf("%064x", 999)
	cat.mu.Unlock()
	round("head hash changed at the same seq", all)
	cat.mu.Lock()
	cat.log = cat.log[:len(cat.log)-2]
	cat.mu.Unlock()
	round("head moved back", all)

	// Too many entries: every server, not the entries.
	for range FeedMaxEntries + 1 {
		cat.append(string(warrant.DecisionApproved), "s0")
	}
	round("more than FeedMaxEntries", all)

	// The feed cannot be read: every server is read; if none can be, decisions go stale.
	cat.mu.Lock()
	cat.headErr = errors.New("throttled")
	cat.mu.Unlock()
	round("feed unreadable", all)
	cat.mu.Lock()
	for _, s := range servers {
		cat.failOn[s] = true
	}
	cat.mu.Unlock()
	advance(11 * time.Second)
	p.Refresh(ctx)
	if c := call("s0"); c != CauseStale {
		t.Errorf("feed and catalog unreadable past the staleness bound: cause %v, want %v", c, CauseStale)
	}
}
