package locker_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// countingStore counts the store reads a read decision makes.
type countingStore struct {
	*sqlitestore.Store
	mu    sync.Mutex
	reads int
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

func (c *countingStore) add() {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
}

func (c *countingStore) PadAndTicket(ctx context.Context, padID, ticketHash string) (locker.Pad, *locker.Ticket, error) {
	c.add()
	return c.Store.PadAndTicket(ctx, padID, ticketHash)
}

func (c *countingStore) Pad(ctx context.Context, padID string) (locker.Pad, error) {
	c.add()
	return c.Store.Pad(ctx, padID)
}

func (c *countingStore) Ticket(ctx context.Context, hash string) (locker.Ticket, error) {
	c.add()
	return c.Store.Ticket(ctx, hash)
}

// TestReadCacheRemembersOnlyFinalAnswers: a read of a sealed pad with a ticket that already
// read it (read_unlimited, or read_once with its lease started) is decided without a store
// read, and still gets every check: the lease window, the ticket's pad. Everything else goes
// to the store every time: an open pad, the read that opens a lease, a wrong ticket, the
// demo pad, and every read when the cache is off.
func TestReadCacheRemembersOnlyFinalAnswers(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	newSvc := func(t *testing.T, entries int) (*locker.Service, *countingStore) {
		st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "l.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cs := &countingStore{Store: st}
		svc, err := locker.New(locker.Config{Store: cs, Now: func() time.Time { return now }, ReadCacheEntries: entries})
		if err != nil {
			t.Fatal(err)
		}
		return svc, cs
	}
	ctx := t.Context()
	pad := func(t *testing.T, svc *locker.Service, seal bool) locker.Created {
		c, err := svc.Create(ctx, locker.DefaultCreateRequest(), nil)
		if err != nil {
			t.Fatal(err)
		}
		env := `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
		if _, err := svc.Append(ctx, c.PadID, c.WriteKey, true, "application/json", []byte(env)); err != nil {
			t.Fatal(err)
		}
		if seal {
			if _, err := svc.Seal(ctx, c.PadID, c.WriteKey, true); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	// storeReads reads the pad once and returns how many store reads the decision made.
	storeReads := func(t *testing.T, svc *locker.Service, cs *countingStore, padID, ticket string, want locker.Kind) int {
		t.Helper()
		before := cs.count()
		s, err := svc.ReadBlocks(ctx, padID, ticket, 0, 0, false)
		var le *locker.Error
		switch {
		case want == 0 && (err != nil || len(s.Blocks) == 0):
			t.Fatalf("read: %v (%d blocks)", err, len(s.Blocks))
		case want != 0 && (!errors.As(err, &le) || le.Kind != want):
			t.Fatalf("read: %v, want kind %d", err, want)
		}
		return cs.count() - before
	}

	t.Run("sealed", func(t *testing.T) {
		svc, cs := newSvc(t, 0)
		c := pad(t, svc, true)
		once := c.ReadTicket
		m, err := svc.MintTicket(ctx, c.PadID, c.WriteKey, true, locker.TicketReadUnlimited)
		if err != nil {
			t.Fatal(err)
		}
		if n := storeReads(t, svc, cs, c.PadID, m.Ticket, 0); n == 0 {
			t.Fatal("the first read with a ticket made no store read")
		}
		for range 3 {
			if n := storeReads(t, svc, cs, c.PadID, m.Ticket, 0); n != 0 {
				t.Fatalf("a repeat read_unlimited read of a sealed pad made %d store reads", n)
			}
		}
		// read_once: the read that opens the lease and the first read that sees it open go
		// to the store; then it is remembered.
		for i, want := range []bool{true, true, false, false} {
			if n := storeReads(t, svc, cs, c.PadID, once, 0); (n != 0) != want {
				t.Fatalf("read_once read %d: %d store reads", i, n)
			}
		}
		// The lease is still enforced on a remembered ticket, without a store read.
		now = now.Add(time.Duration(locker.DefaultLeaseSeconds+1) * time.Second)
		if n := storeReads(t, svc, cs, c.PadID, once, locker.KindForbidden); n != 0 {
			t.Fatalf("the lease check made %d store reads", n)
		}
		if n := storeReads(t, svc, cs, c.PadID, m.Ticket, 0); n != 0 {
			t.Fatalf("read_unlimited after the lease window: %d store reads", n)
		}
		// A ticket of another pad, even one remembered for its own pad, is refused.
		other := pad(t, svc, true)
		if n := storeReads(t, svc, cs, other.PadID, m.Ticket, locker.KindUnauthorized); n == 0 {
			t.Fatal("another pad's ticket was decided without the store")
		}
		// A wrong ticket always goes to the store and is refused.
		for range 2 {
			if n := storeReads(t, svc, cs, c.PadID, "not-a-ticket", locker.KindUnauthorized); n == 0 {
				t.Fatal("a wrong ticket was decided without the store")
			}
		}
	})
	t.Run("open", func(t *testing.T) {
		svc, cs := newSvc(t, 0)
		c := pad(t, svc, false)
		m, err := svc.MintTicket(ctx, c.PadID, c.WriteKey, true, locker.TicketReadUnlimited)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if n := storeReads(t, svc, cs, c.PadID, m.Ticket, 0); n == 0 {
				t.Fatalf("read %d of an open pad made no store read", i)
			}
		}
	})
	t.Run("demo", func(t *testing.T) {
		svc, cs := newSvc(t, 0)
		if err := svc.SeedDemo(ctx); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if n := storeReads(t, svc, cs, locker.DemoPadID, "", 0); n == 0 {
				t.Fatal("a demo pad read made no store read")
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		svc, cs := newSvc(t, -1)
		c := pad(t, svc, true)
		m, err := svc.MintTicket(ctx, c.PadID, c.WriteKey, true, locker.TicketReadUnlimited)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if n := storeReads(t, svc, cs, c.PadID, m.Ticket, 0); n == 0 {
				t.Fatal("a read with the cache off made no store read")
			}
		}
	})
	// Readers of remembered and new tickets at once, the cache filling and emptying
	// (run under -race in CI): every read is still allowed and served.
	t.Run("concurrent", func(t *testing.T) {
		svc, _ := newSvc(t, 3)
		c := pad(t, svc, true)
		var tickets []string
		for range 5 {
			m, err := svc.MintTicket(ctx, c.PadID, c.WriteKey, true, locker.TicketReadUnlimited)
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, m.Ticket)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				for i := range 40 {
					s, err := svc.ReadBlocks(ctx, c.PadID, tickets[(g+i)%len(tickets)], 0, 0, false)
					if err == nil && len(s.Blocks) != 1 {
						err = errors.New("a read returned no block")
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		svc, cs := newSvc(t, 2)
		c := pad(t, svc, true)
		// readNew mints n tickets and reads the pad once with each (remembering it).
		readNew := func(n int) (tickets []string) {
			for range n {
				m, err := svc.MintTicket(ctx, c.PadID, c.WriteKey, true, locker.TicketReadUnlimited)
				if err != nil {
					t.Fatal(err)
				}
				tickets = append(tickets, m.Ticket)
				storeReads(t, svc, cs, c.PadID, m.Ticket, 0)
			}
			return tickets
		}
		tickets := readNew(2)
		// A full cache keeps serving what it holds: remembered reads do not empty it.
		for range 3 {
			for i, tk := range tickets {
				if n := storeReads(t, svc, cs, c.PadID, tk, 0); n != 0 {
					t.Fatalf("ticket %d in a full cache: %d store reads", i, n)
				}
			}
		}
		tickets = readNew(3)
		// Two entries fit; the third emptied the cache and is the one remembered.
		if n := storeReads(t, svc, cs, c.PadID, tickets[2], 0); n != 0 {
			t.Fatalf("the latest ticket: %d store reads", n)
		}
		if n := storeReads(t, svc, cs, c.PadID, tickets[0], 0); n == 0 {
			t.Fatal("a ticket dropped when the cache filled was decided without the store")
		}
	})
}
