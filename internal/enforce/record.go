package enforce

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// batcher takes observations off the request path: offer never blocks (a full queue
// drops the observation and counts it), and one goroutine writes batches to the Recorder.
type batcher struct {
	ch       chan Observation
	rec      Recorder
	interval time.Duration
	max      int
	timeout  time.Duration
	log      *slog.Logger
	metrics  *Metrics
	stop     chan struct{}
	done     chan struct{}
	syncReq  chan chan error
}

func newBatcher(rec Recorder, queue, max int, interval, timeout time.Duration, log *slog.Logger, m *Metrics) *batcher {
	return &batcher{ch: make(chan Observation, queue), rec: rec, interval: interval, max: max, timeout: timeout,
		log: log, metrics: m, stop: make(chan struct{}), done: make(chan struct{}), syncReq: make(chan chan error)}
}

func (b *batcher) offer(o Observation) {
	select {
	case b.ch <- o:
	default:
		b.metrics.obsDropped.Add(1)
	}
}

// run writes batches until close is called; then it writes what is queued and returns.
func (b *batcher) run(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(b.interval)
	defer t.Stop()
	var batch, retry []Observation
	drain := b.drainInto
	// flush writes what failed once (retry) with what is new; what fails a second time is
	// dropped and counted.
	flush := func() {
		if len(batch) == 0 && len(retry) == 0 {
			return
		}
		if b.write(ctx, slices.Concat(retry, batch)) {
			batch, retry = nil, nil
			return
		}
		b.metrics.obsDropped.Add(uint64(len(retry)))
		batch, retry = nil, batch
	}
	for {
		select {
		case o := <-b.ch:
			if o.Kind == ObservedDrift {
				b.log.WarnContext(ctx, "enforce: drift observed", slog.String("server", o.Server), slog.String("tool", o.Tool),
					slog.String("digest", o.Digest), slog.String("approved", o.Approved))
			}
			batch = append(batch, o)
			if len(batch) >= b.max {
				flush()
			}
		case <-t.C:
			flush()
		case reply := <-b.syncReq:
			drain(&batch)
			n := len(batch) + len(retry)
			flush()
			var err error
			if len(retry) > 0 {
				err = fmt.Errorf("could not record %d of %d observations; they are retried once with the next batch", len(retry), n)
			}
			reply <- err
		case <-b.stop:
			drain(&batch)
			flush()
			flush() // the retry, if the first failed
			b.metrics.obsDropped.Add(uint64(len(retry)))
			return
		}
	}
}

// drain moves what is queued into batch.
func (b *batcher) drainInto(batch *[]Observation) {
	for {
		select {
		case o := <-b.ch:
			*batch = append(*batch, o)
		default:
			return
		}
	}
}

// sync writes what is queued now, in the run loop, and returns when it is written (or
// ctx ends, or the loop has stopped).
func (b *batcher) sync(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case b.syncReq <- reply:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write sorts and de-duplicates one batch and records it; false when the Recorder failed.
func (b *batcher) write(ctx context.Context, batch []Observation) bool {
	slices.SortStableFunc(batch, func(x, y Observation) int {
		return cmp.Or(cmp.Compare(x.Server, y.Server), cmp.Compare(x.Tool, y.Tool), cmp.Compare(x.Digest, y.Digest))
	})
	batch = slices.CompactFunc(batch, func(x, y Observation) bool {
		return x.Server == y.Server && x.Tool == y.Tool && x.Digest == y.Digest && x.Kind == y.Kind
	})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	if err := b.rec.Record(ctx, batch); err != nil {
		b.metrics.recordFailures.Add(1)
		b.log.WarnContext(ctx, "enforce: cannot record observations", slog.Int("observations", len(batch)), slog.String("error", err.Error()))
		return false
	}
	b.metrics.obsRecorded.Add(uint64(len(batch)))
	return true
}

// close stops run after it has written what is queued, or when ctx ends.
func (b *batcher) close(ctx context.Context) {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
	}
}
