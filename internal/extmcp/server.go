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

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
)

// ServiceName is the gRPC service the gateway calls, also the name reported by the
// grpc.health.v1 service alongside "".
const ServiceName = "agentgateway.dev.ext_mcp.ExtMcp"

// handler translates ExtMcp messages to enforce.Messages and decisions to results; it
// decides nothing itself. Every denial is an AuthorizationError result rather than a gRPC
// error, so the answer is a denial even if the gateway were configured failOpen; a panic in
// the translation is one too.
type handler struct {
	pb.UnimplementedExtMcpServer
	p *enforce.Processor
}

// code maps a denial to the AuthorizationError code the gateway renders: tool states and
// refused methods as PERMISSION_DENIED (-32001), malformed params from the client as
// INVALID (-32600), everything the processor itself could not decide as UNKNOWN (-32603,
// an internal error) — the codes enforce.Decision.RPCCode gives the other points.
func code(d enforce.Decision) pb.AuthorizationError_Code {
	switch d.RPCCode() {
	case -32001:
		return pb.AuthorizationError_PERMISSION_DENIED
	case -32600:
		return pb.AuthorizationError_INVALID
	default:
		return pb.AuthorizationError_UNKNOWN
	}
}

func authzError(d enforce.Decision) *pb.AuthorizationError {
	return &pb.AuthorizationError{Code: code(d), Reason: d.Reason}
}

// internalError is the denial of a panic in the translation itself.
var internalError = &pb.AuthorizationError{Code: pb.AuthorizationError_UNKNOWN, Reason: "toolwarrant: internal error while deciding; denied"}

// CheckRequest decides the request phase: tools/call is gated; the request phase of
// tools/list passes (its response is what gets filtered); any other method is denied.
func (h *handler) CheckRequest(ctx context.Context, req *pb.McpRequest) (res *pb.McpRequestResult, _ error) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered(ctx, "CheckRequest", r)
			res = &pb.McpRequestResult{Result: &pb.McpRequestResult_Error{Error: internalError}}
		}
	}()
	d := h.p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: req.GetMethod(), Services: req.GetServiceNames(), Body: req.McpRequest})
	if d.Outcome == enforce.OutcomeDeny {
		return &pb.McpRequestResult{Result: &pb.McpRequestResult_Error{Error: authzError(d)}}, nil
	}
	return &pb.McpRequestResult{Result: &pb.McpRequestResult_Pass{Pass: &pb.Pass{}}}, nil
}

// CheckResponse decides the response phase: a tools/list result is filtered; the result
// of a tools/call (already gated on its request) passes; any other method is denied.
func (h *handler) CheckResponse(ctx context.Context, req *pb.McpResponse) (res *pb.McpResponseResult, _ error) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered(ctx, "CheckResponse", r)
			res = &pb.McpResponseResult{Result: &pb.McpResponseResult_Error{Error: internalError}}
		}
	}()
	d := h.p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: req.GetMethod(), Services: req.GetServiceNames(), Body: req.GetMcpResponse()})
	switch d.Outcome {
	case enforce.OutcomeDeny:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Error{Error: authzError(d)}}, nil
	case enforce.OutcomeMutated:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Mutated{Mutated: d.Mutated}}, nil
	default:
		return &pb.McpResponseResult{Result: &pb.McpResponseResult_Pass{Pass: &pb.Pass{}}}, nil
	}
}

func (h *handler) recovered(ctx context.Context, rpc string, r any) {
	h.p.Logger().ErrorContext(ctx, "extmcp: handler panicked; denied", slog.String("rpc", rpc),
		slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
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
func NewGRPCServer(p *enforce.Processor) (*grpc.Server, *health.Server) {
	cfg := p.Config()
	s := grpc.NewServer(ServerOptions(cfg.MaxMessageBytes, cfg.MaxReplyBytes)...)
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
func UpdateHealth(p *enforce.Processor, hs *health.Server) {
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
func Serve(ctx context.Context, lis net.Listener, p *enforce.Processor, opts ServeOptions) error {
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
	p.Logger().InfoContext(ctx, "extmcp: serving", slog.String("addr", lis.Addr().String()))
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
	p.Logger().InfoContext(cctx, "extmcp: stopped")
	if serveErr != nil && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return fmt.Errorf("extmcp: serve: %w", serveErr)
	}
	return nil
}
