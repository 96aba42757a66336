package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/mcpmsg"
)

// HandlerFunc is an interceptor Lambda's handler: one event in, one output out. It never
// returns an error: whatever it cannot read or decide is answered with a denial, because
// what the gateway does with a failed invocation is not documented.
//
// It implements the aws-lambda-go runtime's Handler interface (Invoke), so lambda.Start
// hands it the event's bytes as they arrived: an event that is not JSON reaches it (and is
// denied) instead of failing the invocation in the runtime's decoder, and its output goes
// back byte for byte.
type HandlerFunc func(ctx context.Context, event json.RawMessage) (json.RawMessage, error)

// Invoke calls h: the aws-lambda-go runtime's raw-bytes handler interface.
func (h HandlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return h(ctx, payload)
}

// Defaults for [Options].
const (
	DefaultSyncTimeout = 2 * time.Second
	DefaultMargin      = 250 * time.Millisecond
)

// Options configures [Handler]. Zero values take the documented defaults.
type Options struct {
	// Refresh: at the start of every invocation, approvals older than this are re-read
	// (Processor.RefreshOlder): the process is frozen between invocations, so the core's
	// own refresh loop does not run. Default the processor's Config().Refresh.
	Refresh time.Duration
	// MaxEventBytes bounds the event; a larger one is denied. Default MaxEventBytes.
	MaxEventBytes int
	// SyncTimeout bounds the writes made before answering (Processor.Sync: observations,
	// and the decision records once per RecordEvery); what is not written by then is
	// written by a later invocation. Default DefaultSyncTimeout.
	SyncTimeout time.Duration
	// Margin: with an invocation deadline, the answer is given at least this long before
	// it (a refresh or a decision still running then is cut short, and denies). Default
	// DefaultMargin.
	Margin time.Duration
	// Logger receives denials, would-denials and errors. Default the processor's logger.
	Logger *slog.Logger
}

// handler is one execution environment's interceptor over one processor.
type handler struct {
	p        *enforce.Processor
	o        Options
	log      *slog.Logger
	services []string
	timeout  time.Duration // the processor's DecisionTimeout
}

// CheckConfig reports why a processor's configuration does not suit this point: the
// interceptor needs AgentCore's prefixed naming (every tool is TARGET___TOOL), every MCP
// method seen (PassMethods), and calls decided on the catalog's evidence alone (Stateless:
// one execution environment does not see the listings another served).
func CheckConfig(c enforce.Config) error {
	var errs []error
	if c.Point != enforce.PointAgentCore {
		errs = append(errs, fmt.Errorf("point %q, want %q", c.Point, enforce.PointAgentCore))
	}
	if c.Naming != enforce.NamingPrefixed {
		errs = append(errs, errors.New("tool names are not prefixed (NamingPrefixed)"))
	}
	if !c.PassMethods {
		errs = append(errs, errors.New("PassMethods is off: every initialize and notification would be denied"))
	}
	if !c.Stateless {
		errs = append(errs, errors.New("stateless calls are off: calls would be denied as unlisted in every execution environment that served no listing"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("agentcore: the processor is not configured for the interceptor: %w", err)
	}
	return nil
}

// ProcessorConfig returns c with this point's settings: Point PointAgentCore, Naming
// NamingPrefixed (AgentCore's "___" separator), PassMethods and Stateless (see
// [CheckConfig]).
func ProcessorConfig(c enforce.Config) enforce.Config {
	c.Point, c.Naming, c.PassMethods, c.Stateless = enforce.PointAgentCore, enforce.NamingPrefixed, true, true
	return c
}

// Handler returns the interceptor over p, which must be started (Processor.Start: its
// recorder's loop writes what Sync asks for) and configured by [ProcessorConfig]; one that
// is not is logged and every event denied. Every message names all of p's servers: the
// gateway multiplexes its targets into one listing, and a tools/call is attributed by its
// TARGET___ prefix.
func Handler(p *enforce.Processor, o Options) HandlerFunc {
	cfg := p.Config()
	if o.Refresh <= 0 {
		o.Refresh = cfg.Refresh
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = MaxEventBytes
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	if o.Margin <= 0 {
		o.Margin = DefaultMargin
	}
	if o.Logger == nil {
		o.Logger = p.Logger()
	}
	if err := CheckConfig(cfg); err != nil {
		o.Logger.Error("agentcore: misconfigured; every message is denied", slog.String("error", err.Error()))
		return Unavailable("toolwarrant: the interceptor is misconfigured; denied (see its log)", o.Logger)
	}
	h := &handler{p: p, o: o, log: o.Logger, services: slices.Clone(cfg.Servers), timeout: cfg.DecisionTimeout}
	return h.invoke
}

func (h *handler) invoke(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-h.o.Margin))
		defer cancel()
	}
	out := h.serve(ctx, raw)
	h.sync(ctx)
	return out, nil
}

// Denial reasons of what the interceptor itself cannot read; the decision core words the
// rest (Decision.Reason).
const (
	reasonEvent    = "toolwarrant: the interceptor cannot read the gateway's event; denied"
	reasonPanic    = "toolwarrant: internal error while deciding; denied"
	reasonNoBody   = "toolwarrant: the gateway's event carries no request body; denied"
	reasonResponse = "toolwarrant: the gateway's response is not one JSON-RPC message; denied"
	reasonNoAnswer = "toolwarrant: the gateway's response carries no body; denied"
)

// The JSON-RPC codes of the interceptor's own denials, as Decision.RPCCode words the core's:
// what the client sent is not a request (-32600); what the interceptor could not decide (-32603).
const (
	codeInvalid  = -32600
	codeInternal = -32603
)

// serve decides one event and returns the output. Every path returns an output; a panic
// is a denial too.
func (h *handler) serve(ctx context.Context, raw []byte) (out []byte) {
	var id []byte // the request's JSON-RPC id once read, for a denial
	defer func() {
		if r := recover(); r != nil {
			h.log.ErrorContext(ctx, "agentcore: handler panicked; denied", requestID(ctx), slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
			out = deny(id, codeInternal, reasonPanic)
		}
	}()
	ev, err := readEvent(raw)
	if ev.request != nil {
		if m, perr := mcpmsg.Parse(ev.request); perr == nil {
			id = m.ID
		}
	}
	switch {
	case len(raw) > h.o.MaxEventBytes:
		h.log.WarnContext(ctx, "agentcore: event over the size bound; denied", requestID(ctx), slog.Int("bytes", len(raw)), slog.Int("max", h.o.MaxEventBytes))
		return deny(id, codeInternal, fmt.Sprintf("toolwarrant: the gateway's event is %d bytes, over the %d-byte bound; denied", len(raw), h.o.MaxEventBytes))
	case err != nil:
		h.log.WarnContext(ctx, "agentcore: unreadable event; denied", requestID(ctx), slog.String("error", err.Error()))
		return deny(id, codeInternal, reasonEvent)
	case !ev.hasVersion || ev.version != InputVersion:
		h.log.WarnContext(ctx, "agentcore: unknown interceptor input version; denied", requestID(ctx), slog.String("version", clip(ev.version)))
		return deny(id, codeInternal, fmt.Sprintf("toolwarrant: interceptor input version %q is not %q; denied", clip(ev.version), InputVersion))
	}
	h.refresh(ctx)
	if ev.isResponse {
		return h.response(ctx, ev)
	}
	return h.request(ctx, ev)
}

// refresh re-reads approvals older than Options.Refresh, leaving the decision its time
// before the answer is due.
func (h *handler) refresh(ctx context.Context) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-h.timeout))
		defer cancel()
	}
	h.p.RefreshOlder(ctx, h.o.Refresh)
}

// request decides the REQUEST point: the client's message on its way to the target.
func (h *handler) request(ctx context.Context, ev event) []byte {
	if ev.request == nil {
		h.log.WarnContext(ctx, "agentcore: request without a body; denied", requestID(ctx))
		return deny(nil, codeInternal, reasonNoBody)
	}
	m, err := mcpmsg.Parse(ev.request)
	if err != nil {
		h.log.InfoContext(ctx, "agentcore: request is not one JSON-RPC message; denied", requestID(ctx), slog.String("error", err.Error()))
		return deny(nil, codeInvalid, "toolwarrant: the request is not one JSON-RPC message ("+err.Error()+"); denied")
	}
	if !m.HasMethod {
		// A client's answer to a server's request (sampling, elicitation, roots): no method
		// to decide, no tool in it — as the proxy passes it.
		return passRequest(ev.request)
	}
	d := h.p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: m.Method, Services: h.services, Body: m.Params()})
	h.logDecision(ctx, "request", m.Method, d)
	if d.Outcome == enforce.OutcomeDeny {
		return deny(m.ID, d.RPCCode(), d.Reason)
	}
	return passRequest(ev.request)
}

// response decides the RESPONSE point: the target's answer on its way to the client, with
// the request it answers.
func (h *handler) response(ctx context.Context, ev event) []byte {
	req, err := mcpmsg.Parse(ev.request)
	if ev.request == nil || err != nil || !req.HasMethod {
		h.log.WarnContext(ctx, "agentcore: response without a readable request; denied", requestID(ctx))
		return deny(req.ID, codeInternal, "toolwarrant: the gateway's event does not say which request the response answers; denied")
	}
	status := ev.status
	if status == 0 {
		status = 200
	}
	if ev.response == nil {
		if req.ID != nil {
			// An answer to a request is missing: nothing to pass, and after a REQUEST-side
			// denial some gateways send null here. The client gets a denial either way.
			h.log.WarnContext(ctx, "agentcore: response without a body; denied", requestID(ctx), slog.String("method", clip(req.Method)))
			return deny(req.ID, codeInternal, reasonNoAnswer)
		}
		// A notification's answer has no body: the core says whether the notification passes.
		d := h.p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: req.Method, Services: h.services})
		h.logDecision(ctx, "response", req.Method, d)
		if d.Outcome == enforce.OutcomeDeny {
			return deny(nil, d.RPCCode(), d.Reason)
		}
		return respond(status, []byte("null"))
	}
	m, err := mcpmsg.Parse(ev.response)
	if err != nil {
		h.log.WarnContext(ctx, "agentcore: response is not one JSON-RPC message; denied", requestID(ctx), slog.String("error", err.Error()))
		return deny(req.ID, codeInternal, reasonResponse)
	}
	result := m.Result()
	if m.HasMethod || result == nil {
		// A server's request or notification on the response stream, or an error answer
		// (a denial at the REQUEST point among them): no result to filter, as the proxy
		// passes them.
		return respond(status, ev.response)
	}
	method := req.Method
	if method != "tools/list" && mcpmsg.HasToolsArray(result) {
		// A result that carries a listing is decided as one, whatever it answers.
		method = "tools/list"
	}
	d := h.p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: method, Services: h.services, Body: result})
	h.logDecision(ctx, "response", method, d)
	switch d.Outcome {
	case enforce.OutcomeDeny:
		return deny(req.ID, d.RPCCode(), d.Reason)
	case enforce.OutcomeMutated:
		return respond(status, m.WithResult(d.Mutated))
	default:
		return respond(status, ev.response)
	}
}

func (h *handler) logDecision(ctx context.Context, point, method string, d enforce.Decision) {
	switch {
	case d.Shadow:
		h.log.InfoContext(ctx, "agentcore: would deny (shadow mode: passed)", requestID(ctx), slog.String("point", point), slog.String("method", clip(method)),
			slog.String("tool", clip(d.Tool)), slog.String("cause", d.Cause.String()), slog.Int("dropped", d.Dropped), slog.String("reason", d.Reason))
	case d.Outcome == enforce.OutcomeDeny:
		h.log.InfoContext(ctx, "agentcore: denied", requestID(ctx), slog.String("point", point), slog.String("method", clip(method)),
			slog.String("tool", clip(d.Tool)), slog.String("cause", d.Cause.String()))
	case d.Outcome == enforce.OutcomeMutated:
		h.log.InfoContext(ctx, "agentcore: listing filtered", requestID(ctx), slog.Int("dropped", d.Dropped))
	}
}

// sync writes what the processor queued (Processor.Sync), bounded by SyncTimeout and the
// answer's deadline: a write still running then goes on when the environment next thaws.
func (h *handler) sync(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.o.SyncTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.p.Sync(ctx, false) }()
	select {
	case err := <-done:
		if err != nil {
			h.log.WarnContext(ctx, "agentcore: cannot write observations or decision records yet; kept for a later invocation", requestID(ctx), slog.String("error", err.Error()))
		}
	case <-ctx.Done():
		h.log.WarnContext(ctx, "agentcore: writing observations or decision records did not finish before the answer was due", requestID(ctx))
	}
}

// deny is a denial at either point: the gateway answers the client with this JSON-RPC
// error at once (HTTP 200, as MCP clients expect a JSON-RPC error) and calls no target.
func deny(id []byte, code int64, reason string) []byte {
	return respond(200, mcpmsg.ErrorResponse(id, code, reason))
}

// Unavailable returns a handler that denies every event with reason, keeping the request's
// JSON-RPC id where it can read one: the interceptor of an environment that could not
// start, or is misconfigured. log (nil: discard) gets one line per event.
func Unavailable(reason string, log *slog.Logger) HandlerFunc {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var id []byte
		if len(raw) <= MaxEventBytes {
			if ev, err := readEvent(raw); err == nil && ev.request != nil {
				if m, err := mcpmsg.Parse(ev.request); err == nil {
					id = m.ID
				}
			}
		}
		log.ErrorContext(ctx, "agentcore: unavailable; denied", requestID(ctx), slog.String("reason", reason))
		return deny(id, codeInternal, reason), nil
	}
}

// Retry returns a handler that calls start on its first event, and again at most once
// every interval while it fails, denying every event ([Unavailable]) until start succeeds;
// from then on it serves with the handler start returned. It is the interceptor of an
// environment whose cold start could not read the catalog: a Lambda error instead would
// leave the decision to the gateway.
func Retry(start func(ctx context.Context) (HandlerFunc, error), interval time.Duration, log *slog.Logger) HandlerFunc {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		mu   sync.Mutex
		h    HandlerFunc
		next time.Time
	)
	unavailable := Unavailable("toolwarrant: the interceptor could not start (the catalog or the log key was unreachable); denied", log)
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		if h == nil && !time.Now().Before(next) {
			next = time.Now().Add(interval)
			started, err := start(ctx)
			if err != nil {
				log.ErrorContext(ctx, "agentcore: start failed; retrying later", requestID(ctx), slog.String("error", err.Error()), slog.Duration("retry", interval))
			} else {
				h = started
			}
		}
		serve := h
		mu.Unlock()
		if serve == nil {
			return unavailable(ctx, raw)
		}
		return serve(ctx, raw)
	}
}

// clip bounds what the event supplies in a log line or a reason.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
