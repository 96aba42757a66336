package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// Group commit. The store has one writer connection, and with synchronous=FULL every
// COMMIT is an fsync: a transaction per write caps throughput at the disk's fsync rate
// however many pads are written. So writes are queued to one committer goroutine, which
// runs every write waiting when it starts a transaction in that one transaction — each
// inside its own SAVEPOINT, so a write whose condition fails or that errs is rolled back
// alone and its caller gets its own error — and commits them with one fsync. A write is
// acknowledged (its caller's write returns nil) only after that COMMIT returned: durable.
// If the COMMIT fails, every write of the batch gets the error and none is acknowledged.
//
// Writes run in arrival order, one after another inside the transaction, so two writes of
// one pad see each other exactly as they would in separate transactions: per-pad order and
// every check-and-set condition hold. A lone write needs no savepoint.
//
// The committer also remembers whether the store refuses writes (refusing): a write or a
// COMMIT that fails with a code that means the file cannot take writes (refusesWrites: the
// disk or a size limit is full, the file or its file system turned read-only, I/O errors)
// sets it; a batch that commits with no such failure clears it. Health reports it, and
// while it is set Health asks for a probe write (probe) so that a store whose space came
// back says so without waiting for a client's write.

// maxBatch bounds the writes one transaction takes (and so one COMMIT's latency).
const maxBatch = 128

// job is one queued write.
type job struct {
	ctx  context.Context
	op   string
	fn   func(context.Context, *sql.Tx) error
	done chan error
	// alone runs the job in a transaction of its own (the write probe: its pages must
	// never make another write's COMMIT fail).
	alone bool
}

// committer owns the writer connection.
type committer struct {
	db    *sql.DB
	queue chan *job
	stop  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	closed bool

	// commits counts the transactions committed (a test sees writes share them).
	commits atomic.Int64

	// refused is set when the last batch had a write or COMMIT refused by the file
	// (refusesWrites), cleared when a batch commits without one.
	refused atomic.Bool
	// probing is held while a probe write is queued or running; lastProbe (guarded by it)
	// rate-limits probes to one per probeEvery.
	probing    sync.Mutex
	lastProbe  time.Time
	probeEvery time.Duration
}

// Write probe timing: at most one probe per probeEvery while the store refuses writes,
// and Health waits at most probeWait for its answer (the probe then finishes on its own
// and the next Health call sees its outcome).
const (
	defaultProbeEvery = time.Second
	probeWait         = 2 * time.Second
)

func newCommitter(db *sql.DB) *committer {
	c := &committer{db: db, queue: make(chan *job, maxBatch), stop: make(chan struct{}), probeEvery: defaultProbeEvery}
	c.wg.Add(1)
	go c.run()
	return c
}

var errClosed = errors.New("sqlitestore: store closed")

// submit queues fn and waits for its outcome: nil only once its transaction committed.
func (c *committer) submit(ctx context.Context, op string, fn func(context.Context, *sql.Tx) error) error {
	return c.enqueue(&job{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)})
}

// enqueue queues j and waits for its outcome.
func (c *committer) enqueue(j *job) error {
	ctx, op := j.ctx, j.op
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", op, errClosed)
	}
	// Sending under the lock: close cannot close the queue between the check and the send.
	select {
	case c.queue <- j:
		c.mu.Unlock()
	case <-ctx.Done():
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	// Once queued the job is always answered, so its outcome is never lost: wait for it
	// even if ctx ends (the committer skips a job whose ctx ended before its turn).
	return <-j.done
}

// close stops accepting writes, lets the committer finish what is queued, and waits.
func (c *committer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.queue)
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *committer) run() {
	defer c.wg.Done()
	batch := make([]*job, 0, maxBatch)
	for j := range c.queue {
		batch = append(batch[:0], j)
	drain:
		for len(batch) < maxBatch && !j.alone {
			select {
			case next, ok := <-c.queue:
				if !ok {
					break drain
				}
				if next.alone {
					// Commit what came before it, then the lone job in its own batch.
					c.commit(batch)
					batch = append(batch[:0], next)
					break drain
				}
				batch = append(batch, next)
			default:
				break drain
			}
		}
		c.commit(batch)
	}
}

// commit runs one batch in one transaction and answers every job.
func (c *committer) commit(batch []*job) {
	errs := make([]error, len(batch))
	live := 0
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("%s: %w", j.op, err)
			continue
		}
		live++
	}
	if live == 0 {
		answer(batch, errs)
		return
	}
	// The transaction's own context is not any caller's: one caller going away must not
	// roll back the others' writes.
	tx, err := c.db.BeginTx(context.Background(), nil)
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = wrap(batch[i].op+": begin", err)
			}
		}
		c.note(refusesWrites(err), false)
		answer(batch, errs)
		return
	}
	single := live == 1
	committed := 0
	refused := false
	for i, j := range batch {
		if errs[i] != nil {
			continue
		}
		if err := runJob(tx, j, single); err != nil {
			errs[i] = err
			refused = refused || refusesWrites(err)
			if single {
				break
			}
			continue
		}
		committed++
	}
	if committed == 0 {
		_ = tx.Rollback()
		c.note(refused, false)
		answer(batch, errs)
		return
	}
	err = tx.Commit()
	if err == nil {
		c.commits.Add(1)
	}
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = wrap(batch[i].op+": commit", err)
			}
		}
	}
	c.note(refused || refusesWrites(err), err == nil)
	answer(batch, errs)
}

// note records a batch's outcome for Health: refused (a write or the COMMIT was refused
// by the file) sets the refusing state; a batch that committed without any refusal clears
// it; anything else (conflicts, cancelled callers) leaves it as it was. It runs before the
// callers are answered, so a caller that saw its write refused sees Health say so.
func (c *committer) note(refused, committed bool) {
	switch {
	case refused:
		c.refused.Store(true)
	case committed:
		c.refused.Store(false)
	}
}

// refusing reports whether the last batch that decided it was refused by the file.
func (c *committer) refusing() bool { return c.refused.Load() }

// probe runs one write probe (probeWrite, in a transaction of its own, serialized with every
// other write) if none is running and the last one is at least probeEvery old, and waits
// for it at most probeWait or until ctx ends. Its outcome updates the refusing state like
// any write's.
func (c *committer) probe(ctx context.Context) {
	if !c.probing.TryLock() {
		return // a probe is under way: report the state as it is
	}
	now := time.Now()
	if now.Sub(c.lastProbe) < c.probeEvery {
		c.probing.Unlock()
		return
	}
	c.lastProbe = now
	done := make(chan struct{})
	go func() {
		defer c.probing.Unlock()
		defer close(done)
		// Not the caller's cancellation: a queued job is always run and answered.
		_ = c.enqueue(&job{ctx: context.WithoutCancel(ctx), op: "write probe", fn: probeWrite, done: make(chan error, 1), alone: true})
	}()
	wait := time.NewTimer(probeWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
	case <-ctx.Done():
	}
}

// probeSize is the probe's payload: as large as the largest block an append stores, so a
// probe that fits means such an append fits too.
const probeSize = locker.MaxBlockBytes

// probeWrite is the write probe: it stores a row as large as the largest block and deletes
// it again in the same transaction, which commits. Committing writes the pages to the
// write-ahead log, as a real append does (a rolled-back probe would only touch the page
// cache and could not meet a full disk). It changes no row; the file keeps the pages it
// had to grow by on its free list, where the next write reuses them.
func probeWrite(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('write_probe', hex(zeroblob(?)))`, probeSize/2); err != nil {
		return wrap("write probe: insert", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = 'write_probe'`); err != nil {
		return wrap("write probe: delete", err)
	}
	return nil
}

// runJob runs one write; in a batch, inside a savepoint that its failure rolls back.
func runJob(tx *sql.Tx, j *job, single bool) (err error) {
	if !single {
		if _, err := tx.ExecContext(context.Background(), `SAVEPOINT w`); err != nil {
			return wrap(j.op+": savepoint", err)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: panic: %v", j.op, p)
		}
		if single {
			return
		}
		if err != nil {
			if _, rerr := tx.ExecContext(context.Background(), `ROLLBACK TO w`); rerr != nil {
				err = errors.Join(err, wrap(j.op+": rollback to savepoint", rerr))
			}
		}
		if _, rerr := tx.ExecContext(context.Background(), `RELEASE w`); rerr != nil && err == nil {
			err = wrap(j.op+": release savepoint", rerr)
		}
	}()
	return j.fn(context.WithoutCancel(j.ctx), tx)
}

func answer(batch []*job, errs []error) {
	for i, j := range batch {
		j.done <- errs[i]
	}
}
