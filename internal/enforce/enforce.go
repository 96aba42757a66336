package enforce

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Phase is where in an MCP exchange a message is decided.
type Phase uint8

// Phases.
const (
	// PhaseRequest: a client's request on its way to the upstream (its params).
	PhaseRequest Phase = iota
	// PhaseResponse: the upstream's result on its way back to the client.
	PhaseResponse
)

func (p Phase) String() string {
	if p == PhaseRequest {
		return "request"
	}
	return "response"
}

// Message is one MCP message as an enforcement point hands it to [Processor.Decide].
type Message struct {
	Phase Phase
	// Method is the JSON-RPC method of the request (for a response, of the request it
	// answers).
	Method string
	// Services are the upstream servers the message is for, by catalog name: one for a
	// proxy route or a tools/call, several when a gateway multiplexes targets into one
	// listing (tool names then carry a "<target>_" prefix).
	Services []string
	// Body is the request's params or the response's result, as raw JSON.
	Body []byte
}

// Enforcement point kinds, for [Config.Point] and the decision records.
const (
	PointExtMcp    = "extmcp"
	PointProxy     = "proxy"
	PointAgentCore = "agentcore"
)

// Decide is the decision every enforcement point asks, whatever its wire: agentgateway's
// ExtMcp callout (internal/extmcp), the MCP proxy (internal/mcpproxy) and the AgentCore
// Gateway interceptor (internal/agentcore) translate their messages to a [Message] and
// the [Decision] back, and decide nothing themselves.
//
// A tools/call request passes only if the tool's approved digest is what the catalog last
// observed of it and (unless [Config.Stateless]) what this processor last saw listed; a
// tools/list result is filtered to the tools whose live digest is the approved digest. The
// request of a tools/list and the result of a tools/call pass (the one is filtered on its
// way back, the other was gated on its way in). Anything else, and anything that cannot
// be decided within [Config.DecisionTimeout] — a method not decided, malformed JSON,
// approvals older than the staleness bound, an oversized message, a panic — is a denial.
//
// In shadow mode ([Config.Shadow]) the rules run as usual and every decision is recorded,
// but the message passes: [Decision.Shadow] and [Decision.Would] say what enforcement
// would have done. Every decision is counted in the metrics and in the decision records.
func (p *Processor) Decide(ctx context.Context, m Message) (d Decision) {
	start := time.Now()
	meth := methodOf(m.Method)
	defer func() {
		if r := recover(); r != nil {
			p.log.ErrorContext(ctx, "enforce: decision panicked; denied", slog.String("phase", m.Phase.String()), slog.String("method", clip(m.Method)),
				slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
			d = deny(CausePanic, "internal error while deciding; denied")
			d.Would = OutcomeDeny
			p.tally.add(messageKey(meth, nil, nil, d))
			d = p.shadowed(d)
		}
		p.metrics.decided(meth, d, time.Since(start))
		if p.log.Enabled(ctx, slog.LevelDebug) {
			p.log.DebugContext(ctx, "enforce: decision", slog.String("point", p.cfg.Point), slog.String("phase", m.Phase.String()),
				slog.String("method", clip(m.Method)), slog.Any("services", m.Services), slog.String("outcome", d.Outcome.String()),
				slog.String("would", d.Would.String()), slog.String("cause", d.Cause.String()), slog.Int("dropped", d.Dropped))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DecisionTimeout)
	defer cancel()
	if hook := p.hook.Load(); hook != nil {
		(*hook)(ctx, m.Method)
	}
	switch {
	case m.Method == "tools/call" && m.Phase == PhaseRequest:
		d = p.decideCall(ctx, m.Services, m.Body)
	case m.Method == "tools/list" && m.Phase == PhaseResponse:
		d = p.decideList(ctx, m.Services, m.Body)
	case m.Method == "tools/list" || m.Method == "tools/call", p.cfg.PassMethods && PassedMethod(m.Method):
		return Decision{Outcome: OutcomePass, Would: OutcomePass, recorded: true}
	case p.cfg.PassMethods:
		d = deny(CauseMethod, "method %q is not an MCP method this %s passes; denied", clip(m.Method), p.cfg.pointNoun())
	default:
		d = deny(CauseMethod, "method %q is not decided by this processor; denied (configure only tools/list: response and tools/call: request)", clip(m.Method))
	}
	if d.Outcome != OutcomeDeny && ctx.Err() != nil {
		d = deny(CauseDeadline, "the decision did not finish in time; denied")
	}
	d.Would = d.Outcome
	if !d.recorded {
		var srvs []*server
		var snaps []*snapshot
		if d.srv != nil {
			srvs, snaps = []*server{d.srv}, []*snapshot{d.snap}
		} else if len(m.Services) == 1 {
			if s, ok := p.servers[m.Services[0]]; ok {
				srvs = []*server{s}
				if snap, cause := p.cache.get(s.name); cause == causeNone {
					snaps = []*snapshot{snap}
				}
			}
		}
		p.tally.add(messageKey(meth, srvs, snaps, d))
	}
	return p.shadowed(d)
}

// shadowed turns a denial or a filtered listing into a pass in shadow mode.
func (p *Processor) shadowed(d Decision) Decision {
	if !p.cfg.Shadow || d.Outcome == OutcomePass {
		return d
	}
	d.Outcome, d.Mutated, d.Shadow = OutcomePass, nil, true
	return d
}

// RPCCode is the JSON-RPC error code a transport that answers the client itself (the
// proxy, the interceptor) gives a denial — the codes agentgateway gives the ExtMcp
// processor's AuthorizationError codes, so a client sees the same error from every point:
// -32001 for a tool's state or a method not decided, -32600 (invalid request) for
// malformed params, -32603 (internal error) for what the processor itself could not
// decide.
func (d Decision) RPCCode() int64 {
	switch c := d.Cause; {
	case c.ToolState(), c == CauseMethod:
		return -32001
	case c == CauseMalformed:
		return -32600
	default:
		return -32603
	}
}

func methodOf(name string) method {
	switch name {
	case "tools/list":
		return methodToolsList
	case "tools/call":
		return methodToolsCall
	default:
		return methodOther
	}
}

// Naming is how tool names carry their target ([Config.Naming]).
type Naming uint8

// Namings.
const (
	NamingGateway Naming = iota
	NamingPrefixed
)

// passedMethods are the MCP methods (every revision up to 2026-07-28) that carry no tool
// definition and so pass a point with Config.PassMethods: the handshake, liveness,
// resources, prompts, completion, logging, roots, sampling and elicitation (server to
// client), tasks, and subscriptions. tools/list results and tools/call requests are
// decided; every other method is denied.
var passedMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "subscriptions/listen": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true, "logging/setLevel": true,
	"roots/list": true, "sampling/createMessage": true, "elicitation/create": true,
	"tasks/get": true, "tasks/list": true, "tasks/result": true, "tasks/cancel": true,
}

// PassedMethod reports whether a point with Config.PassMethods passes method undecided:
// one of the MCP methods that carry no tool definition, or any notification
// ("notifications/..."). tools/list and tools/call are decided, never passed by name.
func PassedMethod(method string) bool {
	return passedMethods[method] || strings.HasPrefix(method, "notifications/")
}

// Observe takes in what a listing of the upstream shows — each tool's last-listed digest,
// and observations of what is not approved — as a tools/list result decided for no client:
// nothing is counted in the metrics or the decision records. A transport that lists the
// upstream itself between clients' listings (the proxy's probe) calls it, so that a
// definition changed upstream stops calls within one probe even if no client lists again.
func (p *Processor) Observe(ctx context.Context, services []string, result []byte) {
	if len(result) > p.cfg.MaxMessageBytes {
		return
	}
	var srvArr [4]*server
	var snapArr [4]*snapshot
	srvs, snaps, d := p.resolve(services, srvArr[:0], snapArr[:0])
	if d.Outcome == OutcomeDeny {
		return
	}
	sc := p.scratch.Get().(*listScratch)
	defer sc.release(&p.scratch)
	p.listTools(ctx, srvs, snaps, result, sc, false)
}

// ServerState is what [Processor.State] reports of one server.
type ServerState struct {
	Server string `json:"server"`
	// Fresh: the approvals held are younger than the staleness bound.
	Fresh bool `json:"fresh"`
	// AgeSeconds is how old they are (-1: never read).
	AgeSeconds float64 `json:"ageSeconds"`
	// Approvals names the approved set held ("" before the first read): the approval set
	// of the decision records.
	Approvals string `json:"approvals,omitempty"`
	// Approved counts the tools with an approved digest.
	Approved int `json:"approved"`
}

// State reports every served server's approvals as held now, sorted by server (a
// transport's health answer).
func (p *Processor) State() []ServerState {
	out := make([]ServerState, 0, len(p.cfg.Servers))
	for _, name := range p.cfg.Servers {
		st := ServerState{Server: name, AgeSeconds: -1}
		if e := p.cache.entries[name]; e != nil {
			if snap := e.snap.Load(); snap != nil {
				st.Approvals = snap.approvals.String()
				for _, ev := range snap.tools {
					if ev.hasApproved {
						st.Approved++
					}
				}
			}
		}
		if age := p.cache.age(name); age >= 0 {
			st.AgeSeconds = age.Seconds()
		}
		_, cause := p.cache.get(name)
		st.Fresh = cause == causeNone
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b ServerState) int { return strings.Compare(a.Server, b.Server) })
	return out
}
