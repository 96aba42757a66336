package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// maxBatch bounds the writes one transaction takes (and so one COMMIT's latency).
const maxBatch = 128

// job is one queued write.
type job struct {
	ctx  context.Context
	op   string
	fn   func(context.Context, *sql.Tx) error
	done chan error
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
}

func newCommitter(db *sql.DB) *committer {
	c := &committer{db: db, queue: make(chan *job, maxBatch), stop: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c
}

var errClosed = errors.New("sqlitestore: store closed")

// submit queues fn and waits for its outcome: nil only once its transaction committed.
func (c *committer) submit(ctx context.Context, op string, fn func(context.Context, *sql.Tx) error) error {
	j := &job{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)}
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
		for len(batch) < maxBatch {
			select {
			case j, ok := <-c.queue:
				if !ok {
					break drain
				}
				batch = append(batch, j)
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
		answer(batch, errs)
		return
	}
	single := live == 1
	committed := 0
	for i, j := range batch {
		if errs[i] != nil {
			continue
		}
		if err := runJob(tx, j, single); err != nil {
			errs[i] = err
			if single {
				break
			}
			continue
		}
		committed++
	}
	if committed == 0 {
		_ = tx.Rollback()
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
	answer(batch, errs)
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
