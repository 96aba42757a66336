package dynamostore_test

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// seqStack is a table with a log key, for sequenced appends.
type seqStack struct {
	st    *stack
	key   *keysigner.Signer
	calls *awstest.Calls
}

func newSeqStack(t *testing.T) *seqStack {
	t.Helper()
	key, err := keysigner.Create(filepath.Join(t.TempDir(), "log.key"), keysigner.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	return &seqStack{st: newStack(t, false), key: key, calls: awstest.NewCalls()}
}

// catalog opens a catalog of the stack with a sequencer (its calls counted).
func (s *seqStack) catalog(t *testing.T, sc dynamostore.SequencerConfig, dyn ...func(*dynamodb.Options)) *dynamostore.Catalog {
	t.Helper()
	sc.Log = &audit.Chainer{Signer: s.key}
	dyn = append(dyn, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, s.calls.Middleware) })
	c, err := dynamostore.NewCatalog(t.Context(), dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(s.st.cfg, dyn...), Table: s.st.table, Sequencer: &sc})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verify reads the whole log, checks it with the log key and returns its records.
func (s *seqStack) verify(t *testing.T, c *dynamostore.Catalog) []warrant.AuditRecord {
	t.Helper()
	recs, err := c.AuditRecords(t.Context(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	rep := audit.Verify(recs, audit.Options{Keys: map[string]crypto.PublicKey{s.key.KeyID(): s.key.Public()}})
	if !rep.OK() {
		t.Fatalf("the log does not verify: %v", rep.Problems)
	}
	head, err := c.AuditHead(t.Context())
	if err != nil || head != rep.Head {
		t.Fatalf("head %+v (%v), the log ends at %+v", head, err, rep.Head)
	}
	return recs
}

func event(writer, i, part int) warrant.Event {
	return warrant.Event{Type: "decisions_recorded", Actor: fmt.Sprintf("writer-%d", writer), At: time.Now().UTC(),
		Body: json.RawMessage(fmt.Sprintf(`{"writer":%d,"i":%d,"part":%d}`, writer, i, part))}
}

// TestSequencedAppends: 12 writers append 10 times each (two events a time) through the
// sequencer while a writer of the head path appends too. Every acknowledged event is in
// the log exactly once, each append's events consecutive and in order; the log verifies;
// the queue is empty; and batching happened: fewer head updates than appends.
func TestSequencedAppends(t *testing.T) {
	s := newSeqStack(t)
	ctx := t.Context()
	const writers, per = 12, 10
	cats := make([]*dynamostore.Catalog, writers)
	for i := range cats {
		cats[i] = s.catalog(t, dynamostore.SequencerConfig{})
	}
	direct := s.catalog(t, dynamostore.SequencerConfig{})
	s.calls.Take()
	var wg sync.WaitGroup
	errs := make(chan error, writers*per+10)
	for w, c := range cats {
		wg.Go(func() {
			for i := range per {
				if err := c.AppendEvents(ctx, []warrant.Event{event(w, i, 1), event(w, i, 2)}); err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, i, err)
				}
			}
		})
	}
	// The head path at the same time (a trust list change, a crawl): it still works, the
	// sequencer's batches being one more writer of the head.
	chain := &audit.Chainer{Signer: s.key}
	wg.Go(func() {
		for i := range 5 {
			for range 20 {
				head, err := direct.AuditHead(ctx)
				if err != nil {
					errs <- err
					return
				}
				recs, err := chain.Chain(ctx, head, []warrant.Event{event(99, i, 1)})
				if err != nil {
					errs <- err
					return
				}
				if err = direct.AppendAudit(ctx, warrant.AuditAppend{Prev: head, Records: recs}); err == nil {
					break
				} else if !errors.Is(err, warrant.ErrConflict) {
					errs <- err
					return
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	calls := s.calls.Take()
	recs := s.verify(t, direct)
	seen := map[string]int{}
	for i, r := range recs {
		var b struct {
			Event struct{ Writer, I, Part int } `json:"event"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		e := b.Event
		seen[fmt.Sprintf("%d/%d/%d", e.Writer, e.I, e.Part)]++
		if e.Writer != 99 && e.Part == 1 {
			if i+1 >= len(recs) || !strings.Contains(string(recs[i+1].Body), fmt.Sprintf(`"i":%d,"part":2,"writer":%d`, e.I, e.Writer)) {
				t.Errorf("entry %d (writer %d append %d part 1) is not followed by its part 2", r.Seq, e.Writer, e.I)
			}
		}
	}
	for w := range writers {
		for i := range per {
			for _, p := range []int{1, 2} {
				if n := seen[fmt.Sprintf("%d/%d/%d", w, i, p)]; n != 1 {
					t.Errorf("writer %d append %d part %d is in the log %d times", w, i, p, n)
				}
			}
		}
	}
	if want := writers*per*2 + 5; len(recs) != want {
		t.Errorf("%d entries, want %d", len(recs), want)
	}
	if n, _, err := direct.QueuedAudit(ctx); err != nil || n != 0 {
		t.Errorf("%d queue items left (%v)", n, err)
	}
	// Each integration is one TransactWriteItems, as is each of the 5 direct appends (and
	// their lost races): fewer than the 120 sequenced appends means batches of several.
	if tx := calls["TransactWriteItems"]; tx >= writers*per {
		t.Errorf("%d transactions for %d sequenced appends: no batching", tx, writers*per)
	}
	t.Logf("calls: %v", calls)
}

// TestSequencedAppendRefused: events that are not well formed, or too large for a queue
// item, are refused with ErrInvalid and nothing is queued.
func TestSequencedAppendRefused(t *testing.T) {
	s := newSeqStack(t)
	c := s.catalog(t, dynamostore.SequencerConfig{})
	ctx := t.Context()
	big := warrant.Event{Type: "decisions_recorded", Actor: "a", At: time.Now(), Body: json.RawMessage(`{"x":"` + strings.Repeat("y", 400<<10) + `"}`)}
	for name, evs := range map[string][]warrant.Event{
		"none":      nil,
		"no type":   {{Actor: "a", At: time.Now()}},
		"no time":   {{Type: "t", Actor: "a"}},
		"not JSON":  {{Type: "t", Actor: "a", At: time.Now(), Body: json.RawMessage(`{"x":`)}},
		"too large": {big},
	} {
		if err := c.AppendEvents(ctx, evs); !errors.Is(err, warrant.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if n, _, err := c.QueuedAudit(ctx); err != nil || n != 0 {
		t.Errorf("%d queue items after refusals (%v)", n, err)
	}
	plain, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(s.st.cfg), Table: s.st.table})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.AppendEvents(ctx, []warrant.Event{event(1, 1, 1)}); err == nil || !strings.Contains(err.Error(), "no sequencer") {
		t.Errorf("a catalog without a sequencer: %v", err)
	}
}

// TestSequencedAppendSurvivesItsWriter: an append whose integration never commits (its
// writer dies before the transaction is sent) is not acknowledged and stays queued; a
// writer queued behind it waits for it and, within StaleAfter, does not integrate it;
// past StaleAfter the next writer integrates the whole queue, each append once.
func TestSequencedAppendSurvivesItsWriter(t *testing.T) {
	s := newSeqStack(t)
	ctx := t.Context()
	dying := s.catalog(t, dynamostore.SequencerConfig{Wait: 2 * time.Second}, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, awstest.Unsent("TransactWriteItems", errors.New("the writer died before its integration was sent")))
	})
	err := dying.AppendEvents(ctx, []warrant.Event{event(1, 1, 1)})
	if !errors.Is(err, warrant.ErrQueued) {
		t.Fatalf("an append whose integration never committed: %v, want ErrQueued", err)
	}
	if n, _, _ := dying.QueuedAudit(ctx); n != 1 {
		t.Fatalf("%d queue items after the failed integration, want 1: %v", n, err)
	}
	// Behind a fresh item of another writer: it waits, and gives up unacknowledged.
	waiting := s.catalog(t, dynamostore.SequencerConfig{Wait: 300 * time.Millisecond, StaleAfter: time.Hour})
	if err := waiting.AppendEvents(ctx, []warrant.Event{event(2, 1, 1)}); !errors.Is(err, warrant.ErrQueued) {
		t.Fatalf("an append behind another writer's fresh item: %v, want ErrQueued", err)
	}
	if n, _, _ := waiting.QueuedAudit(ctx); n != 2 {
		t.Fatalf("%d queue items, want 2", n)
	}
	// Past StaleAfter, the next writer integrates the queue, its own append with it.
	later := s.catalog(t, dynamostore.SequencerConfig{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err := later.AppendEvents(ctx, []warrant.Event{event(3, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if n, err := later.Sequence(ctx); err != nil || n != 0 {
		t.Errorf("Sequence after the queue was integrated wrote %d entries (%v)", n, err)
	}
	recs := s.verify(t, later)
	if len(recs) != 3 {
		t.Fatalf("%d entries, want 3", len(recs))
	}
	for i, r := range recs {
		if want := fmt.Sprintf(`"writer":%d`, i+1); !strings.Contains(string(r.Body), want) {
			t.Errorf("entry %d is %s, want the queue's order (%s)", r.Seq, r.Body, want)
		}
	}
}

// TestSequenceSweeps: Sequence integrates what writers that are gone left queued, more
// than one batch of it, in queue order.
func TestSequenceSweeps(t *testing.T) {
	s := newSeqStack(t)
	ctx := t.Context()
	c := s.catalog(t, dynamostore.SequencerConfig{})
	db := dynamodb.NewFromConfig(s.st.cfg)
	const n = 95 // more than two batches of 40
	for i := range n {
		evs, _ := json.Marshal([]map[string]any{{"t": "decisions_recorded", "a": "gone", "at": time.Now().UTC().Format(time.RFC3339Nano), "b": map[string]int{"writer": 7, "i": i, "part": 1}}})
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.st.table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "AUDITQ"}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("Q#%020d#w%03d", time.Now().UnixNano(), i)},
			"evs": &types.AttributeValueMemberB{Value: evs}, "wid": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	wrote, err := c.Sequence(ctx)
	if err != nil || wrote != n {
		t.Fatalf("Sequence wrote %d entries (%v), want %d", wrote, err, n)
	}
	recs := s.verify(t, c)
	for i, r := range recs {
		if want := fmt.Sprintf(`"i":%d,`, i); !strings.Contains(string(r.Body), want) {
			t.Fatalf("entry %d is %s, want queue item %d", r.Seq, r.Body, i)
		}
	}
	if q, _, _ := c.QueuedAudit(ctx); q != 0 {
		t.Errorf("%d queue items left", q)
	}
}
