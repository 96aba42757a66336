package enforce

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// RecordOutcome is what an enforcement point did with one tool, in a decision record.
type RecordOutcome string

// Record outcomes.
const (
	// RecordAllowed: a listed tool was kept, or a tools/call passed.
	RecordAllowed RecordOutcome = "allowed"
	// RecordFiltered: a listed tool was removed from the tools/list result.
	RecordFiltered RecordOutcome = "filtered"
	// RecordDenied: a tools/call, or a whole message that could not be decided, was refused.
	RecordDenied RecordOutcome = "denied"
	// RecordWouldDeny: shadow mode let through what enforcement would have filtered or
	// denied.
	RecordWouldDeny RecordOutcome = "would-deny"
)

// DecisionRecord counts identical decisions of one enforcement point over a window: one
// per (server, tool, method, live digest, outcome, cause, approval set).
type DecisionRecord struct {
	// Server is the upstream the decisions were for ("" when the message named none that
	// this point serves).
	Server string `json:"server"`
	// Tool is the tool ("" for a decision about a whole message: a malformed listing, a
	// method not decided, approvals gone stale).
	Tool string `json:"tool,omitempty"`
	// Method is tools/list (a tool listed and kept or removed), tools/call, or the method
	// a whole-message denial was about.
	Method string `json:"method"`
	// Digest is the live digest judged: as listed (tools/list) or as last listed or
	// crawled (tools/call); "" when none could be computed.
	Digest  string        `json:"digest,omitempty"`
	Outcome RecordOutcome `json:"outcome"`
	// Cause says why a tool was filtered or denied (unknown, unapproved, drifted,
	// unlisted, refused, stale, malformed, ...); "" when allowed.
	Cause string `json:"cause,omitempty"`
	// Approvals names the approval set the decisions were made under: SHA-256 over the
	// server's sorted "tool digest" lines (the same at every point reading the same
	// approvals); "" when no fresh approvals were held.
	Approvals string `json:"approvals,omitempty"`
	// Count is how many such decisions the window held.
	Count uint64 `json:"count"`
}

// DecisionBatch is one window of one enforcement point's decisions, as written to the
// audit log.
type DecisionBatch struct {
	// Point is the kind of enforcement point: extmcp, proxy or agentcore.
	Point string `json:"point"`
	// Instance names the process that decided (host and process id by default).
	Instance string `json:"instance"`
	// Shadow reports that the point ran in shadow mode: nothing was filtered or denied.
	Shadow bool `json:"shadow"`
	// From and To bound the window.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Records are sorted by server, tool, method, outcome, digest, cause and approvals.
	Records []DecisionRecord `json:"records"`
	// Folded counts decisions recorded without their tool because the window already
	// held maxRecordKeys distinct records (clients naming ever new tools).
	Folded uint64 `json:"folded,omitempty"`
}

// DecisionRecorder is the write port of decision records. RecordDecisions stores one
// batch; it is called from one goroutine at a time, never on a request's path (except
// through [Processor.Sync], which a serverless transport calls before it answers),
// with a ctx bounded by the record timeout. On an error the counts are kept and written
// with the next batch.
type DecisionRecorder interface {
	RecordDecisions(ctx context.Context, b DecisionBatch) error
}

// DecisionRecorderFunc adapts a function to [DecisionRecorder].
type DecisionRecorderFunc func(ctx context.Context, b DecisionBatch) error

// RecordDecisions calls f.
func (f DecisionRecorderFunc) RecordDecisions(ctx context.Context, b DecisionBatch) error {
	return f(ctx, b)
}

// maxRecordKeys bounds the distinct records one window holds; past it, new records are
// folded without their tool name (a client naming endless tools cannot grow memory).
const maxRecordKeys = 10_000

// recordKey is a DecisionRecord's identity while counting.
type recordKey struct {
	server, tool string
	method       method
	live         digest
	hasLive      bool
	outcome      RecordOutcome
	cause        string
	approvals    digest
	hasApprovals bool
}

// listShape is what one tools/list decision records: one key per listed tool. A memoized
// listing shares its shape: a repeat costs one atomic add (n), and the tally expands n into
// the keys when it flushes. evicted is set, under the memo's write lock, once the memo no
// longer holds the entry: hits count under the read lock, so a flush that sees evicted has
// every count and may forget the shape.
type listShape struct {
	keys    []recordKey
	n       atomic.Uint64
	evicted atomic.Bool
}

// tally aggregates decisions between flushes.
type tally struct {
	mu     sync.Mutex
	counts map[recordKey]uint64
	shapes map[*listShape]struct{}
	folded uint64
	from   time.Time
}

func newTally(now time.Time) *tally {
	return &tally{counts: map[recordKey]uint64{}, shapes: map[*listShape]struct{}{}, from: now}
}

var kindCause = map[ObservationKind]string{ObservedNew: CauseUnknown.String(), ObservedDrift: CauseDrifted.String(),
	ObservedUnapproved: CauseUnapproved.String(), ObservedRefused: "refused"}

// shapeOf builds the keys of one tools/list decision: per tool when it was decided tool
// by tool, else one key for the whole message.
func (t *tally) shapeOf(srvs []*server, snaps []*snapshot, items []listedTool, d Decision) *listShape {
	if t == nil {
		return nil
	}
	if d.Outcome == OutcomeDeny {
		return &listShape{keys: []recordKey{messageKey(methodToolsList, srvs, snaps, d)}}
	}
	sh := &listShape{keys: make([]recordKey, len(items))}
	for i, it := range items {
		k := recordKey{method: methodToolsList, tool: clip(it.tool), outcome: RecordAllowed}
		if it.srv >= 0 {
			k.server, k.approvals, k.hasApprovals = srvs[it.srv].name, snaps[it.srv].approvals, true
		}
		if it.refused == "" && it.tool != "" && it.srv >= 0 {
			k.live, k.hasLive = it.d, true
		}
		if !it.keep {
			k.outcome, k.cause = RecordFiltered, kindCause[it.kind]
		}
		sh.keys[i] = k
	}
	return sh
}

// messageKey is the key of a decision about a whole message, or of a tools/call; d is the
// decision before shadow mode turned it into a pass.
func messageKey(m method, srvs []*server, snaps []*snapshot, d Decision) recordKey {
	k := recordKey{method: m, tool: clip(d.Tool), outcome: RecordAllowed, live: d.live, hasLive: d.hasLive}
	if d.Outcome == OutcomeDeny {
		k.outcome, k.cause = RecordDenied, d.Cause.String()
	}
	if len(srvs) == 1 {
		k.server = srvs[0].name
	}
	if len(snaps) == 1 && snaps[0] != nil {
		k.approvals, k.hasApprovals = snaps[0].approvals, true
	}
	return k
}

// register keeps a memoized shape until it is evicted and flushed.
func (t *tally) register(sh *listShape) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.shapes[sh] = struct{}{}
	t.mu.Unlock()
}

// addShape counts one decision of a shape no memo holds.
func (t *tally) addShape(sh *listShape) {
	if t == nil || sh == nil {
		return
	}
	t.mu.Lock()
	for _, k := range sh.keys {
		t.addLocked(k, 1)
	}
	t.mu.Unlock()
}

// add counts one decision about a whole message or a call.
func (t *tally) add(k recordKey) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.addLocked(k, 1)
	t.mu.Unlock()
}

func (t *tally) addLocked(k recordKey, n uint64) {
	if _, ok := t.counts[k]; !ok && len(t.counts) >= maxRecordKeys {
		k.tool, k.live, k.hasLive = "", digest{}, false
		t.folded += n
	}
	t.counts[k] += n
}

// take empties the tally into a batch for the window ending at now (nil records when
// nothing was decided).
func (t *tally) take(now time.Time, shadow bool) (DecisionBatch, map[recordKey]uint64, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for sh := range t.shapes {
		gone := sh.evicted.Load() // before the swap: see listShape
		if n := sh.n.Swap(0); n > 0 {
			for _, k := range sh.keys {
				t.addLocked(k, n)
			}
		}
		if gone {
			delete(t.shapes, sh)
		}
	}
	counts, folded := t.counts, t.folded
	b := DecisionBatch{Shadow: shadow, From: t.from, To: now, Folded: folded}
	t.counts, t.folded, t.from = map[recordKey]uint64{}, 0, now
	for k, n := range counts {
		b.Records = append(b.Records, k.record(n, shadow))
	}
	slices.SortFunc(b.Records, func(x, y DecisionRecord) int {
		return cmp.Or(cmp.Compare(x.Server, y.Server), cmp.Compare(x.Tool, y.Tool), cmp.Compare(x.Method, y.Method),
			cmp.Compare(x.Outcome, y.Outcome), cmp.Compare(x.Digest, y.Digest), cmp.Compare(x.Cause, y.Cause), cmp.Compare(x.Approvals, y.Approvals))
	})
	return b, counts, folded
}

// giveBack returns the counts of a batch that could not be written, to go with the next.
func (t *tally) giveBack(counts map[recordKey]uint64, folded uint64, from time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, n := range counts {
		t.addLocked(k, n)
	}
	t.folded += folded
	if from.Before(t.from) {
		t.from = from
	}
}

func (k recordKey) record(n uint64, shadow bool) DecisionRecord {
	r := DecisionRecord{Server: k.server, Tool: k.tool, Method: methodNames[k.method], Outcome: k.outcome, Cause: k.cause, Count: n}
	if shadow && (k.outcome == RecordFiltered || k.outcome == RecordDenied) {
		r.Outcome = RecordWouldDeny
	}
	if k.hasLive {
		r.Digest = k.live.String()
	}
	if k.hasApprovals {
		r.Approvals = k.approvals.String()
	}
	return r
}

// decisionWriter flushes the tally to the DecisionRecorder every interval, and on demand.
type decisionWriter struct {
	t        *tally
	rec      DecisionRecorder
	point    string
	instance string
	shadow   bool
	timeout  time.Duration
	now      func() time.Time
	log      *slog.Logger
	metrics  *Metrics
	mu       sync.Mutex // one flush at a time
	last     atomic.Int64
}

// flush writes what the tally holds (nothing when it holds nothing). On failure the
// counts go back into the tally.
func (w *decisionWriter) flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	w.last.Store(now.UnixNano())
	b, counts, folded := w.t.take(now, w.shadow)
	if len(b.Records) == 0 {
		return nil
	}
	b.Point, b.Instance = w.point, w.instance
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	err := w.rec.RecordDecisions(ctx, b)
	if errors.Is(err, warrant.ErrQueued) {
		// Durably queued for the log's sequencer, which will write them: giving the counts
		// back would record them twice.
		w.log.WarnContext(ctx, "enforce: decision records queued, not yet in the audit log", slog.Int("records", len(b.Records)), slog.String("error", err.Error()))
		err = nil
	}
	if err != nil {
		w.t.giveBack(counts, folded, b.From)
		w.metrics.decisionRecordFailures.Add(1)
		w.log.WarnContext(ctx, "enforce: cannot write decision records; kept for the next window", slog.Int("records", len(b.Records)), slog.String("error", err.Error()))
		return err
	}
	w.metrics.decisionRecords.Add(uint64(len(b.Records)))
	return nil
}

// due reports whether a window of every has passed since the last flush.
func (w *decisionWriter) due(every time.Duration) bool {
	return w.now().Sub(time.Unix(0, w.last.Load())) >= every
}

func (w *decisionWriter) run(ctx context.Context, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = w.flush(ctx)
		case <-stop:
			return
		}
	}
}

// pointNoun is how denial reasons name this enforcement point.
func (c Config) pointNoun() string {
	switch {
	case c.Point == PointProxy:
		return "proxy"
	case c.Point == PointAgentCore:
		return "interceptor"
	default:
		return "gateway"
	}
}
