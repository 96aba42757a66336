package extmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"

	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
)

// ServiceName is the gRPC service the gateway calls, also the name reported by the
// grpc.health.v1 service alongside "".
const ServiceName = "agentgateway.dev.ext_mcp.ExtMcp"

// handler translates ExtMcp messages to decisions and decisions to results. Every path
// that cannot produce a decision — a panic, a deadline, a method it does not know —
// returns an AuthorizationError result rather than a gRPC error, so the answer is a
// denial even if the gateway were configured failOpen.
type handler struct {
	pb.UnimplementedExtMcpServer
	p *Processor
}

// code maps a denial cause to the AuthorizationError code the gateway renders: tool
// states and refused methods as PERMISSION_DENIED (-32001), malformed params from the
// client as INVALID (-32600), everything the processor itself could not decide as
// UNKNOWN (-32603, an internal error).
func code(c Cause) pb.AuthorizationError_Code {
	switch {
	case c.ToolState(), c == CauseMethod:
		return pb.AuthorizationError_PERMISSION_DENIED
	case c == CauseMalformed:
		return pb.AuthorizationError_INVALID
	default:
		return pb.AuthorizationError_UNKNOWN
	}
}

func authzError(d Decision) *pb.AuthorizationError {
	return &pb.AuthorizationError{Code: code(d.Cause), Reason: d.Reason}
}

// CheckRequest decides the request phase: tools/call is gated; the request phase of
// tools/list passes (its response is what gets filtered); any other method is denied.
func (h *handler) CheckRequest(ctx context.Context, req *pb.McpRequest) (res *pb.McpRequestResult, _ error) {
	start := time.Now()
	meth := methodOther
	var d Decision
	defer func() {
		if r := recover(); r != nil {
			d = h.recovered(ctx, "CheckRequest", req.GetMethod(), r)
			res = &pb.McpRequestResult{Result: &pb.McpRequestResult_Error{Error: authzError(d)}}
		}
		h.p.metrics.decided(meth, d, time.Since(start))
		h.logDecision(ctx, "CheckRequest", req.GetMethod(), req.GetServiceNames(), d)
	}()
	ctx, cancel := context.WithTimeout(ctx, h.p.cfg.DecisionTimeout)
	defer cancel()
	if hook := h.p.hook.Load(); hook != nil {
		(*hook)(ctx, req.GetMethod())
	}
	switch req.GetMethod() {
	case "tools/call":
		meth = methodToolsCall
		d = h.p.CallTool(ctx, req.GetServiceNames(), req.McpRequest)
	case "tools/list":
		meth = methodToolsList
		d = Decision{Outcome: OutcomePass}
	default:
		d = deny(CauseMethod, "method %q is not decided by this processor; denied (configure only tools/list: response and tools/call: request)", clip(req.GetMethod()))
	}
	if d.Outcome != OutcomeDeny && ctx.Err() != nil {
		d = deny(CauseDeadline, "the decision did not finish in time; denied")
	}
	if d.Outcome == OutcomeDeny {
		return &pb.McpRequestResult{Result: &pb.McpRequestResult_Error{Error: authzError(d)}}, nil
	}
	return &pb.McpRequestResult{Result: &pb.McpRequestResult_Pass{Pass: &pb.Pass{}}}, nil
}

// CheckResponse decides the response phase: a tools/list result is filtered; the result
// of a tools/call (already gated on its request) passes; any other method is denied.
func (h *handler) CheckResponse(ctx context.Context, req *pb.McpResponse) (res *pb.McpResponseResult, _ error) {
	start := time.Now()
	meth := methodOther
	var d Decision
	defer func() {
		if r := recover(); r != nil {
			d = h.recovered(ctx, "CheckResponse", req.GetMethod(), r)
			res = &pb.McpResponseResult{Result: &pb.McpResponseResult_Error{Error: authzError(d)}}
		}
		h.p.metrics.decided(meth, d, time.Since(start))
		h.logDecision(ctx, "CheckResponse", req.GetMethod(), req.GetServiceNames(), d)
	}()
	ctx, cancel := context.WithTimeout(ctx, h.p.cfg.DecisionTimeout)
	defer cancel()
	if hook := h.p.hook.Load(); hook != nil {
		(*hook)(ctx, req.GetMethod())
	}
	switch req.GetMethod() {
	case "tools/list":
		meth = methodToolsList
		d = h.p.ListTools(ctx, req.GetServiceNames(), req.GetMcpResponse())
	case "tools/call":
		meth = methodToolsCall
		d = Decision{Outcome: OutcomePass}
	default:
		d = deny(CauseMethod, "method %q is not decided by this processor; denied (configure only tools/list: response and tools/call: request)", clip(req.GetMethod()))
	}
	if d.Outcome != OutcomeDeny && ctx.Err() != nil {
		d = deny(CauseDeadline, "the decision did not finish in time; denied")
	}
	switch d.Outcome {
	case OutcomeDeny:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Error{Error: authzError(d)}}, nil
	case OutcomeMutated:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Mutated{Mutated: d.Mutated}}, nil
	default:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Pass{Pass: &pb.Pass{}}}, nil
	}
}

func (h *handler) recovered(ctx context.Context, rpc, method string, r any) Decision {
	h.p.log.ErrorContext(ctx, "extmcp: handler panicked; denied", slog.String("rpc", rpc), slog.String("method", method),
		slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
	return deny(CausePanic, "internal error while deciding; denied")
}

func (h *handler) logDecision(ctx context.Context, rpc, method string, services []string, d Decision) {
	if !h.p.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	h.p.log.DebugContext(ctx, "extmcp: decision", slog.String("rpc", rpc), slog.String("method", method), slog.Any("services", services),
		slog.String("outcome", d.Outcome.String()), slog.String("cause", d.Cause.String()), slog.Int("dropped", d.Dropped))
}

// ServeOptions configures [Serve].
type ServeOptions struct {
	// ShutdownGrace bounds how long in-flight RPCs may finish after ctx ends before the
	// server is stopped hard. Default 5s.
	ShutdownGrace time.Duration
	// HealthInterval is how often the health status is re-evaluated. Default 1s.
	HealthInterval time.Duration
}

// NewGRPCServer returns a gRPC server with the ExtMcp service of p and the
// grpc.health.v1 service registered, and the health server, whose status the caller (or
// [Serve]) keeps current with [UpdateHealth].
func NewGRPCServer(p *Processor) (*grpc.Server, *health.Server) {
	s := grpc.NewServer(ServerOptions(p.cfg.MaxMessageBytes, p.cfg.MaxReplyBytes)...)
	pb.RegisterExtMcpServer(s, &handler{p: p})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	UpdateHealth(p, hs)
	return s, hs
}

// ServerOptions are the gRPC server options of [NewGRPCServer] for the given message and
// reply bounds (Config.MaxMessageBytes, Config.MaxReplyBytes): the buffer pool and the
// codec that draws on it, size limits and keepalive policy. A server of the same shape (a
// load generator's calibration target) uses them too.
func ServerOptions(maxMessageBytes, maxReplyBytes int) []grpc.ServerOption {
	return []grpc.ServerOption{
		experimental.BufferPool(bufferPool),
		grpc.ForceServerCodecV2(poolCodec{bufferPool}),
		grpc.MaxRecvMsgSize(maxMessageBytes + 64<<10),
		grpc.MaxSendMsgSize(maxReplyBytes + 64<<10),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
}

// bufferPool is shared by every server of the process.
var bufferPool mem.BufferPool = &tieredPool{}

// UpdateHealth sets SERVING while every server has fresh approvals, NOT_SERVING otherwise.
func UpdateHealth(p *Processor, hs *health.Server) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if p.Fresh() {
		st = healthpb.HealthCheckResponse_SERVING
	}
	hs.SetServingStatus("", st)
	hs.SetServingStatus(ServiceName, st)
}

// Serve starts p, serves ExtMcp and health on lis until ctx ends, then shuts down
// gracefully: health goes NOT_SERVING, in-flight RPCs get ShutdownGrace to finish, the
// recorder writes what is queued. It returns nil after a shutdown that ctx asked for.
func Serve(ctx context.Context, lis net.Listener, p *Processor, opts ServeOptions) error {
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 5 * time.Second
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = time.Second
	}
	p.Start(ctx)
	s, hs := NewGRPCServer(p)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	p.log.InfoContext(ctx, "extmcp: serving", slog.String("addr", lis.Addr().String()))
	t := time.NewTicker(opts.HealthInterval)
	defer t.Stop()
	var serveErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case serveErr = <-errc:
			break loop
		case <-t.C:
			UpdateHealth(p, hs)
		}
	}
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(opts.ShutdownGrace):
		s.Stop()
		<-stopped
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
	defer cancel()
	p.Close(cctx)
	p.log.InfoContext(cctx, "extmcp: stopped")
	if serveErr != nil && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return fmt.Errorf("extmcp: serve: %w", serveErr)
	}
	return nil
}
