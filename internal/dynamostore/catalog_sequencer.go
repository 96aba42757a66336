package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The audit log's sequencer (catalog.md, "Sequenced appends"). A writer of events that
// accompany no other write (decision records) does not take the head: it puts its events
// as one queue item (AUDITQ/Q#<time>#<wid>) and returns once they are sequenced. Whoever
// holds the sequencer lease (AUDIT/LEASE) integrates the queue in batches: it reads the
// head and the oldest queue items, chains and signs their events from the head (the log
// key's Auditor), and writes the records, the head and the deletion of those queue items
// in one TransactWriteItems conditioned on the head and on each queue item still being
// there. One head update integrates a whole batch, however many writers queued it.
//
// Safety does not depend on the lease: every integration is conditioned on the head, so
// two integrators cannot both extend it (no fork) and a queue item is deleted only by the
// transaction that writes its records. The lease only keeps the other writers from
// signing the same batch in vain; a holder that dies stops holding it after leaseFor.

const (
	pkQueue = "AUDITQ"
	skLease = "LEASE"
	// batchItems bounds the queue items one integration takes: each is one Delete of the
	// transaction, beside the records' REC# items (packed by chunkBytes), the head and the
	// format marker, within DynamoDB's 100 actions.
	batchItems = 40
	// batchBytes bounds the events' JSON one integration takes (their records are larger
	// by the base64 of body and signature: well within txBudget).
	batchBytes = 1 << 20
	// maxQueuedBytes bounds one queue item's events (an item holds 400 KB).
	maxQueuedBytes = 350 << 10
	// lingerRounds and lingerPause: a holder that finds the queue empty looks again that
	// many times, that long apart, before it lets the lease go.
	lingerRounds = 2
	lingerPause  = 3 * time.Millisecond
)

// SequencerConfig turns on sequenced appends (CatalogConfig.Sequencer).
type SequencerConfig struct {
	// Log chains and signs queued events from the head: the log key's audit.Chainer, the
	// same the service signs its other writes with. Required.
	Log warrant.Auditor
	// Holder names this process in the lease (for the operator reading the item). Default:
	// a random ID.
	Holder string
	// LeaseFor is how long a lease holder is trusted to be alive. Default 15s.
	LeaseFor time.Duration
	// Wait bounds how long AppendEvents waits for its events to be sequenced (within the
	// context's deadline). Default 20s.
	Wait time.Duration
	// Now is the clock of the lease. Default time.Now.
	Now func() time.Time
}

type sequencer struct {
	log      warrant.Auditor
	holder   string
	leaseFor time.Duration
	wait     time.Duration
	now      func() time.Time
}

func newSequencer(cfg *SequencerConfig, id func() (string, error)) (*sequencer, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.Log == nil {
		return nil, errors.New("dynamostore: SequencerConfig.Log is required")
	}
	s := &sequencer{log: cfg.Log, holder: cfg.Holder, leaseFor: cfg.LeaseFor, wait: cfg.Wait, now: cfg.Now}
	if s.holder == "" {
		h, err := id()
		if err != nil {
			return nil, err
		}
		s.holder = h
	}
	if s.leaseFor <= 0 {
		s.leaseFor = 15 * time.Second
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
// it can take the lease. Acknowledged means sequenced: nil only once a transaction wrote
// their records. ErrInvalid, and nothing queued, for events that are not well formed or
// too large for one item; ErrUnavailable when they were queued but not sequenced within
// SequencerConfig.Wait (they stay queued, and the next integration — any writer's, or
// Sequence's — writes them).
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
	// Take the lease and integrate, or wait for the holder to: poll the queue item, and
	// try the lease again every third poll (a holder lingers on an empty queue before it
	// lets go, so an item queued while it works is usually integrated by it). The first
	// pause is about one integration's round trips.
	pause := 16 * time.Millisecond
	for i := 0; ; i++ {
		if i%3 == 0 {
			if held, err := c.lease(ctx); err == nil && held {
				_, ierr := c.integrateWhileHeld(ctx, sk)
				c.release(ctx)
				if ierr == nil {
					return nil // it integrated through an empty queue: ours is in
				}
				if !errors.Is(ierr, context.DeadlineExceeded) {
					return fmt.Errorf("%s: queued as %s; integrating: %w", op, sk, ierr)
				}
			}
		}
		item, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: c.table, Key: keyOf(pkQueue, sk), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("pk")})
		if err == nil && item.Item == nil {
			return nil
		}
		d := pause/2 + time.Duration(mrand.Int64N(int64(pause)))
		pause = min(2*pause, 64*time.Millisecond)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w: queued as %s but not sequenced within %s; it stays queued and the next integration writes it",
				op, warrant.ErrUnavailable, sk, c.seq.wait)
		}
	}
}

// enqueue puts the queue item, once: a retried put that finds its own item (a lost
// response) succeeded.
func (c *Catalog) enqueue(ctx context.Context, op, sk, wid string, at time.Time, evs []byte) error {
	_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: c.table,
		Item:                                with(keyOf(pkQueue, sk), "evs", bin(evs), "wid", str(wid), "queued_at", tstr(at), "n", num(int64(len(evs)))),
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

// lease takes or renews the sequencer lease: held by nobody, expired, or already ours.
func (c *Catalog) lease(ctx context.Context) (bool, error) {
	now := c.seq.now()
	_, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: c.table, Key: keyOf(pkAudit, skLease),
		UpdateExpression:         aws.String("SET holder = :me, #u = :until"),
		ConditionExpression:      aws.String("attribute_not_exists(holder) OR #u < :now OR holder = :me"),
		ExpressionAttributeNames: map[string]string{"#u": "until"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": str(c.seq.holder),
			":until": num(now.Add(c.seq.leaseFor).UnixMilli()), ":now": num(now.UnixMilli())}})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return false, nil
	}
	if err != nil {
		return false, cclassify("take the sequencer lease", err)
	}
	return true, nil
}

// release gives the lease up if it is still ours (best effort: it expires anyway).
func (c *Catalog) release(ctx context.Context) {
	_, err := c.db.UpdateItem(context.WithoutCancel(ctx), &dynamodb.UpdateItemInput{TableName: c.table, Key: keyOf(pkAudit, skLease),
		UpdateExpression: aws.String("REMOVE holder, #u"), ConditionExpression: aws.String("holder = :me"),
		ExpressionAttributeNames: map[string]string{"#u": "until"}, ExpressionAttributeValues: map[string]types.AttributeValue{":me": str(c.seq.holder)}})
	var cf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cf) {
		c.log.WarnContext(ctx, "sequencer lease not released; it expires", "err", err)
	}
}

// integrateWhileHeld integrates batches until the queue is empty, or — once own (a queue
// key, "" for none) is integrated — until half the lease is spent, so that a steady stream
// of writers does not keep one holder busy past its lease. It returns the entries written.
func (c *Catalog) integrateWhileHeld(ctx context.Context, own string) (int, error) {
	start := c.seq.now()
	total, empty := 0, 0
	ownDone := own == ""
	var head *warrant.AuditHead // known after our own commit; read again when it moved
	for range 10000 {
		n, last, next, err := c.integrate(ctx, head)
		head = next
		switch {
		case errors.Is(err, errMoved):
			continue
		case err != nil:
			return total, err
		case n == 0:
			// Linger: writers queueing now would otherwise wait for the lease.
			if empty++; empty > lingerRounds {
				return total, nil
			}
			select {
			case <-time.After(lingerPause):
			case <-ctx.Done():
				return total, nil
			}
			continue
		}
		empty = 0
		total += n
		if !ownDone && last >= own {
			ownDone = true
		}
		if ownDone && c.seq.now().Sub(start) > c.seq.leaseFor/2 {
			return total, nil
		}
		if c.seq.now().Sub(start) > c.seq.leaseFor*3/4 {
			if _, err := c.lease(ctx); err != nil {
				return total, err
			}
			start = c.seq.now()
		}
	}
	return total, nil
}

// integrate writes one batch: the oldest queue items (at most batchItems and batchBytes),
// their events chained and signed from the head (known, when the caller knows it, else
// read), in one transaction. It returns the entries written, the last queue key taken
// and the head after them; errMoved when the head or a queue item changed under it.
func (c *Catalog) integrate(ctx context.Context, known *warrant.AuditHead) (int, string, *warrant.AuditHead, error) {
	const op = "integrate audit events"
	var head warrant.AuditHead
	if known != nil {
		head = *known
	} else {
		h, err := c.AuditHead(ctx)
		if err != nil {
			return 0, "", nil, err
		}
		head = h
	}
	page, err := c.db.Query(ctx, &dynamodb.QueryInput{TableName: c.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkQueue)},
		Limit:                     aws.Int32(batchItems)})
	if err != nil {
		return 0, "", nil, cclassify(op+": read the queue", err)
	}
	var events []warrant.Event
	var deletes []txItem
	size, last := 0, ""
	for _, it := range page.Items {
		evs := bval(it, "evs")
		if len(deletes) > 0 && size+len(evs) > batchBytes {
			break
		}
		var q []queuedEvent
		if err := json.Unmarshal(evs, &q); err != nil || len(q) == 0 {
			// Only AppendEvents writes the queue, after checking its events: an item it
			// cannot read was altered, and is left for the operator rather than skipped.
			return 0, "", nil, fmt.Errorf("%s: queue item %s does not hold events: %v", op, sval(it, "sk"), err)
		}
		for _, e := range q {
			at, err := time.Parse(time.RFC3339Nano, e.At)
			if err != nil {
				return 0, "", nil, fmt.Errorf("%s: queue item %s: %v", op, sval(it, "sk"), err)
			}
			events = append(events, warrant.Event{Type: e.Type, Actor: e.Actor, At: at, Body: e.Body})
		}
		last = sval(it, "sk")
		size += len(evs)
		deletes = append(deletes, txItem{role: roleQueued, item: types.TransactWriteItem{Delete: &types.Delete{TableName: c.table,
			Key: keyOf(pkQueue, last), ConditionExpression: aws.String("attribute_exists(pk)")}}})
	}
	if len(deletes) == 0 {
		return 0, "", &head, nil
	}
	recs, err := c.seq.log.Chain(ctx, head, events)
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s: %w", op, err)
	}
	wid, err := c.writeID()
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s: %w", op, err)
	}
	aud, err := c.auditItems(op, warrant.AuditAppend{Prev: head, Records: recs}, wid)
	if err != nil {
		return 0, "", nil, err
	}
	res, err := c.transact(ctx, op, wid, append(aud, deletes...))
	if err != nil {
		return 0, "", nil, err
	}
	if res != nil {
		return 0, "", nil, errMoved // read the head again
	}
	next := warrant.AuditHead{Seq: recs[len(recs)-1].Seq, Hash: recs[len(recs)-1].Hash}
	return len(events), last, &next, nil
}

// Sequence integrates everything queued (the scheduled sweep: events whose writer died
// between queueing and integration, or gave up waiting). It waits for the lease at most
// the sequencer's Wait, and returns the entries it wrote.
func (c *Catalog) Sequence(ctx context.Context) (int, error) {
	if c.seq == nil {
		return 0, errors.New("sequence the audit queue: the catalog has no sequencer (CatalogConfig.Sequencer)")
	}
	ctx, cancel := context.WithTimeout(ctx, c.seq.wait)
	defer cancel()
	for attempt := 0; ; attempt++ {
		held, err := c.lease(ctx)
		if err != nil {
			return 0, err
		}
		if held {
			n, err := c.integrateWhileHeld(ctx, "")
			c.release(ctx)
			return n, err
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 20)) * 50 * time.Millisecond):
		case <-ctx.Done():
			return 0, fmt.Errorf("sequence the audit queue: %w: the lease stayed held by another integrator for %s", warrant.ErrUnavailable, c.seq.wait)
		}
	}
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
	sk := sval(items[0], "sk")
	var ns int64
	if len(sk) > 22 {
		ns, _ = strconv.ParseInt(sk[2:22], 10, 64)
	}
	return len(items), time.Unix(0, ns).UTC(), nil
}
