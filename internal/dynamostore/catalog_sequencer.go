package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The audit log's sequencer (catalog.md, "Sequenced appends"). A writer of events that
// accompany no other write (decision records) does not take the head: it puts its events
// as one queue item (AUDITQ/Q#<time>#<wid>) and returns once they are sequenced. The
// queue is integrated in batches by the writer whose item is the oldest: it reads the
// oldest queue items (one Query, which is also every waiter's poll), chains and signs
// their events from the head (the log key's Auditor), and writes the records, the head
// and the deletion of those queue items in one TransactWriteItems conditioned on the head
// and on each queue item still being there. One head update integrates a whole batch,
// however many writers queued it; the other writers only poll.
//
// Safety does not depend on who integrates: every integration is conditioned on the head,
// so two integrators cannot both extend it (no fork), and a queue item is deleted only by
// the transaction that writes its records, so a writer whose item is gone knows it is in
// the log. Liveness: when the oldest item has waited StaleAfter (its writer died, or gave
// up waiting), the writer queued next integrates it (then the one after, and so on), and
// the scheduled sweep (Sequence) does too.

const (
	pkQueue = "AUDITQ"
	// batchItems bounds the queue items one integration takes: each is one Delete of the
	// transaction, beside the records' REC# items (packed by chunkBytes), the head and the
	// format marker, within DynamoDB's 100 actions.
	batchItems = 40
	// batchBytes bounds the events' JSON one integration takes (their records are larger
	// by the base64 of body and signature: well within txBudget).
	batchBytes = 1 << 20
	// maxQueuedBytes bounds one queue item's events (an item holds 400 KB).
	maxQueuedBytes = 350 << 10
	// maxPolls bounds a writer's looks at the queue (Wait bounds them in time).
	maxPolls = 10000
)

// SequencerConfig turns on sequenced appends (CatalogConfig.Sequencer).
type SequencerConfig struct {
	// Log chains and signs queued events from the head: the log key's audit.Chainer, the
	// same the service signs its other writes with. Required.
	Log warrant.Auditor
	// StaleAfter is how long the oldest queue item waits for its own writer to integrate
	// it before the writer queued next does (the one after that waits twice as long, and so
	// on). Default 2s.
	StaleAfter time.Duration
	// Wait bounds how long AppendEvents waits for its events to be sequenced (within the
	// context's deadline). Default 20s.
	Wait time.Duration
	// Now is the clock of the queue's keys and staleness. Default time.Now.
	Now func() time.Time
}

type sequencer struct {
	log   warrant.Auditor
	stale time.Duration
	wait  time.Duration
	now   func() time.Time
	// head is the head our last integration wrote (nil: read it): a stale one only costs
	// a cancelled transaction.
	head atomic.Pointer[warrant.AuditHead]
}

func newSequencer(cfg *SequencerConfig) (*sequencer, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.Log == nil {
		return nil, errors.New("dynamostore: SequencerConfig.Log is required")
	}
	s := &sequencer{log: cfg.Log, stale: cfg.StaleAfter, wait: cfg.Wait, now: cfg.Now}
	if s.stale <= 0 {
		s.stale = 2 * time.Second
	}
	if s.wait <= 0 {
		s.wait = 20 * time.Second
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// queuedEvent is one event inside a queue item.
type queuedEvent struct {
	Type  string          `json:"t"`
	Actor string          `json:"a"`
	At    string          `json:"at"`
	Body  json.RawMessage `json:"b,omitempty"`
}

// errMoved is an integration cancelled because another one moved the head or took a
// queue item first: read again.
var errMoved = errors.New("the audit head moved")

// AppendEvents implements warrant.EventSequencer: it queues events as one item and returns
// once they are in the log, consecutive and in order, integrating the queue itself when
// its item is the oldest (or the oldest is stale). Acknowledged means sequenced: nil only
// once a transaction wrote their records. ErrInvalid, and nothing queued, for events that are not well formed or
// too large for one item; ErrUnavailable when the queue item could not be put; ErrQueued
// when it was, but was not sequenced within SequencerConfig.Wait (or the context), or this
// writer's own integration failed: it stays queued, and the next integration — any
// writer's, or Sequence's — writes it.
func (c *Catalog) AppendEvents(ctx context.Context, events []warrant.Event) error {
	const op = "append audit events"
	if c.seq == nil {
		return fmt.Errorf("%s: the catalog has no sequencer (CatalogConfig.Sequencer)", op)
	}
	if len(events) == 0 {
		return fmt.Errorf("%s: none: %w", op, warrant.ErrInvalid)
	}
	q := make([]queuedEvent, len(events))
	for i, e := range events {
		if e.Type == "" || e.Actor == "" || e.At.IsZero() {
			return fmt.Errorf("%s: event %d needs a type, an actor and a time: %w", op, i, warrant.ErrInvalid)
		}
		if len(e.Body) > 0 && !json.Valid(e.Body) {
			return fmt.Errorf("%s: event %d: its body is not JSON: %w", op, i, warrant.ErrInvalid)
		}
		q[i] = queuedEvent{e.Type, e.Actor, e.At.UTC().Format(time.RFC3339Nano), e.Body}
	}
	evs, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if len(evs) > maxQueuedBytes {
		return fmt.Errorf("%s: the events take %d bytes, more than the %d one queue item holds: %w", op, len(evs), maxQueuedBytes, warrant.ErrInvalid)
	}
	wid, err := c.writeID()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	now := c.seq.now().UTC()
	sk := fmt.Sprintf("Q#%020d#%s", now.UnixNano(), wid)
	if err := c.enqueue(ctx, op, sk, wid, now, evs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.seq.wait)
	defer cancel()
	pause := 2 * time.Millisecond
	for range maxPolls {
		done, err := c.turn(ctx, sk)
		switch {
		case err == nil && done:
			return nil
		case errors.Is(err, errMoved):
			continue // another integration came first: look again now
		case err != nil && !errors.Is(err, warrant.ErrUnavailable) && ctx.Err() == nil:
			return fmt.Errorf("%s: %w as %s; integrating them failed: %v", op, warrant.ErrQueued, sk, err)
		}
		d := pause/2 + time.Duration(mrand.Int64N(int64(pause)))
		pause = min(2*pause, 32*time.Millisecond)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w as %s within %s; it stays queued and the next integration writes it",
				op, warrant.ErrQueued, sk, c.seq.wait)
		}
	}
	return fmt.Errorf("%s: %w as %s after %d looks at the queue; it stays queued and the next integration writes it", op, warrant.ErrQueued, sk, maxPolls)
}

// turn looks at the queue once for the writer of queue key sk: done when sk is no longer
// queued (integrated: only an integration deletes a queue item); when sk is the oldest,
// or the oldest has waited too long for its own writer, it integrates a batch. The look
// is a Query of the oldest item's key alone (what every waiting writer pays per poll);
// only an integration reads the page.
func (c *Catalog) turn(ctx context.Context, sk string) (bool, error) {
	first, err := c.db.Query(ctx, &dynamodb.QueryInput{TableName: c.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkQueue)},
		ProjectionExpression:      aws.String("sk, queued_at"), Limit: aws.Int32(1)})
	if err != nil {
		return false, cclassify("read the audit queue", err)
	}
	if len(first.Items) == 0 || sval(first.Items[0], "sk") > sk {
		return true, nil
	}
	if sval(first.Items[0], "sk") < sk && !c.stale(first.Items[0], 1) {
		return false, nil // behind a live writer's item
	}
	page, err := c.queuePage(ctx)
	if err != nil {
		return false, err
	}
	at, queued := position(page, sk)
	if !queued {
		return true, nil
	}
	if at != 0 && (at < 0 || !c.stale(page[0], at)) {
		return false, nil
	}
	_, last, err := c.integrate(ctx, page)
	return err == nil && last >= sk, err
}

// position reports where queue key sk is in page (the oldest queue items, in key order),
// and whether it is still queued: absent from a page that is not full, or older than its
// first item, it was integrated (only an integration deletes a queue item).
func position(page []map[string]types.AttributeValue, sk string) (int, bool) {
	for i, it := range page {
		if sval(it, "sk") == sk {
			return i, true
		}
	}
	if len(page) < batchItems || sk < sval(page[0], "sk") {
		return -1, false
	}
	return -1, true // beyond the page: still queued
}

// stale reports whether the writer at position pos of the queue may integrate the oldest
// item it (whose own writer may be dead): once it has waited pos × StaleAfter, so that
// the writers behind it take over one at a time rather than all at once.
func (c *Catalog) stale(it map[string]types.AttributeValue, pos int) bool {
	at := tval(it, "queued_at")
	return !at.IsZero() && c.seq.now().Sub(at) > time.Duration(pos)*c.seq.stale
}

// queuePage reads the oldest queue items (one consistent Query of batchItems).
func (c *Catalog) queuePage(ctx context.Context) ([]map[string]types.AttributeValue, error) {
	page, err := c.db.Query(ctx, &dynamodb.QueryInput{TableName: c.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkQueue)},
		Limit:                     aws.Int32(batchItems)})
	if err != nil {
		return nil, cclassify("read the audit queue", err)
	}
	return page.Items, nil
}

// enqueue puts the queue item, once: a retried put that finds its own item (a lost
// response) succeeded.
func (c *Catalog) enqueue(ctx context.Context, op, sk, wid string, at time.Time, evs []byte) error {
	_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: c.table,
		Item:                                with(keyOf(pkQueue, sk), "evs", bin(evs), "wid", str(wid), "queued_at", tstr(at)),
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) && sval(cf.Item, "wid") == wid {
		return nil
	}
	if err != nil {
		return cclassify(op+": queue", err)
	}
	return nil
}

// integrate writes one batch: the first items of page (the oldest queue items; at most
// batchItems and batchBytes), their events chained and signed from the head, in one
// transaction. It returns the entries written and the last queue key taken; errMoved
// when the head or a queue item changed since they were read.
func (c *Catalog) integrate(ctx context.Context, page []map[string]types.AttributeValue) (int, string, error) {
	const op = "integrate audit events"
	if len(page) == 0 {
		return 0, "", nil
	}
	head := c.seq.head.Load()
	if head == nil {
		h, err := c.AuditHead(ctx)
		if err != nil {
			return 0, "", err
		}
		head = &h
	}
	var events []warrant.Event
	var deletes []txItem
	size, last := 0, ""
	for _, it := range page {
		evs := bval(it, "evs")
		if len(deletes) > 0 && size+len(evs) > batchBytes {
			break
		}
		var q []queuedEvent
		if err := json.Unmarshal(evs, &q); err != nil || len(q) == 0 {
			// Only AppendEvents writes the queue, after checking its events: an item it
			// cannot read was altered, and is left for the operator rather than skipped.
			return 0, "", fmt.Errorf("%s: queue item %s does not hold events: %v", op, sval(it, "sk"), err)
		}
		for _, e := range q {
			at, err := time.Parse(time.RFC3339Nano, e.At)
			if err != nil {
				return 0, "", fmt.Errorf("%s: queue item %s: %v", op, sval(it, "sk"), err)
			}
			events = append(events, warrant.Event{Type: e.Type, Actor: e.Actor, At: at, Body: e.Body})
		}
		last = sval(it, "sk")
		size += len(evs)
		deletes = append(deletes, txItem{role: roleQueued, item: types.TransactWriteItem{Delete: &types.Delete{TableName: c.table,
			Key: keyOf(pkQueue, last), ConditionExpression: aws.String("attribute_exists(pk)")}}})
	}
	recs, err := c.seq.log.Chain(ctx, *head, events)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", op, err)
	}
	wid, err := c.writeID()
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", op, err)
	}
	aud, err := c.auditItems(op, warrant.AuditAppend{Prev: *head, Records: recs}, wid)
	if err != nil {
		return 0, "", err
	}
	res, err := c.transact(ctx, op, wid, append(aud, deletes...))
	if err != nil {
		return 0, "", err
	}
	if res != nil {
		c.seq.head.Store(nil) // read it again
		return 0, "", errMoved
	}
	c.seq.head.Store(&warrant.AuditHead{Seq: recs[len(recs)-1].Seq, Hash: recs[len(recs)-1].Hash})
	return len(events), last, nil
}

// Sequence integrates everything queued (the scheduled sweep: events whose writer died
// between queueing and integration, or gave up waiting), whoever queued it, within the
// sequencer's Wait, and returns the entries it wrote.
func (c *Catalog) Sequence(ctx context.Context) (int, error) {
	if c.seq == nil {
		return 0, errors.New("sequence the audit queue: the catalog has no sequencer (CatalogConfig.Sequencer)")
	}
	ctx, cancel := context.WithTimeout(ctx, c.seq.wait)
	defer cancel()
	total := 0
	for range 100000 {
		page, err := c.queuePage(ctx)
		if err != nil {
			return total, err
		}
		if len(page) == 0 {
			return total, nil
		}
		n, _, err := c.integrate(ctx, page)
		if err != nil && !errors.Is(err, errMoved) {
			return total, err
		}
		total += n
	}
	return total, nil
}

// QueuedAudit returns how many queue items wait for integration and when the oldest was
// queued (zero when none): what the sweep's log line and an operator's check report.
func (c *Catalog) QueuedAudit(ctx context.Context) (int, time.Time, error) {
	items, err := c.query(ctx, "read the audit queue", pkQueue, "", "", "")
	if err != nil {
		return 0, time.Time{}, err
	}
	if len(items) == 0 {
		return 0, time.Time{}, nil
	}
	return len(items), tval(items[0], "queued_at"), nil
}
