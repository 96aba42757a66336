package extmcp

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
)

// gateway is a gateway-faithful ExtMcp client: it sends exactly what agentgateway's
// mcpGuardrails callout sends (docs/extmcp.md, "What the gateway sends"), over plaintext
// HTTP/2 on loopback, and renders results as the gateway renders them to the MCP client.
type gateway struct {
	conn *grpc.ClientConn
	c    pb.ExtMcpClient
	h    healthpb.HealthClient
}

// startServer serves p on a loopback port until the test ends and returns a gateway
// client connected to it.
func startServer(t *testing.T, p *enforce.Processor) *gateway {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, lis, p, ServeOptions{ShutdownGrace: 2 * time.Second, HealthInterval: 20 * time.Millisecond})
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return &gateway{conn: conn, c: pb.NewExtMcpClient(conn), h: healthpb.NewHealthClient(conn)}
}

// requestHeaders are what the gateway forwards by default from a Streamable HTTP client:
// the pseudo-headers and the client's headers, one entry per value.
func requestHeaders() []*pb.McpHeader {
	h := func(k, v string) *pb.McpHeader { return &pb.McpHeader{Key: k, Value: []byte(v)} }
	return []*pb.McpHeader{h(":method", "POST"), h(":scheme", "http"), h(":authority", "127.0.0.1:3000"), h(":path", "/everything/mcp"),
		h("content-type", "application/json"), h("accept", "application/json, text/event-stream"),
		h("mcp-protocol-version", "2025-11-25"), h("mcp-session-id", "3f0c")}
}

// listResponse is the response phase of tools/list: once, on the merged result, with every
// fanned-out target in service_names and no metadata configured.
func (g *gateway) listResponse(ctx context.Context, targets []string, result []byte) (*pb.McpResponseResult, error) {
	return g.c.CheckResponse(ctx, &pb.McpResponse{ServiceNames: targets, Method: "tools/list", McpResponse: result})
}

// listRequest is the request phase of tools/list (only if configured): no mcp_request.
func (g *gateway) listRequest(ctx context.Context, targets []string) (*pb.McpRequestResult, error) {
	return g.c.CheckRequest(ctx, &pb.McpRequest{ServiceNames: targets, Method: "tools/list", Headers: requestHeaders()})
}

// callRequest is the request phase of tools/call: one target, the unprefixed params.
func (g *gateway) callRequest(ctx context.Context, target string, params []byte) (*pb.McpRequestResult, error) {
	return g.c.CheckRequest(ctx, &pb.McpRequest{ServiceNames: []string{target}, Method: "tools/call", McpRequest: params, Headers: requestHeaders()})
}

// rendered is what the MCP client ends up with.
type rendered struct {
	pass    bool
	mutated []byte
	code    int // JSON-RPC error code when denied
	message string
}

// render applies the gateway's rules under failClosed: an AuthorizationError becomes a
// JSON-RPC error by code; a gRPC failure becomes -32603 "mcpGuardrails check… failed";
// no result set is a protocol violation (-32603).
func render(phase string, err error, pass bool, mutated []byte, ae *pb.AuthorizationError) rendered {
	switch {
	case err != nil:
		return rendered{code: -32603, message: "mcpGuardrails " + phase + " failed: " + err.Error()}
	case ae != nil:
		code := -32603
		switch ae.GetCode() {
		case pb.AuthorizationError_PERMISSION_DENIED:
			code = -32001
		case pb.AuthorizationError_RESOURCE_EXHAUSTED:
			code = -32003
		case pb.AuthorizationError_INVALID:
			code = -32600
		}
		return rendered{code: code, message: ae.GetReason()}
	case pass:
		return rendered{pass: true}
	case mutated != nil:
		return rendered{mutated: mutated}
	default:
		return rendered{code: -32603, message: "mcpGuardrails protocol violation: no result"}
	}
}

func renderRequest(res *pb.McpRequestResult, err error) rendered {
	return render("checkRequest", err, res.GetPass() != nil, res.GetMutated(), res.GetError())
}

func renderResponse(res *pb.McpResponseResult, err error) rendered {
	return render("checkResponse", err, res.GetPass() != nil, res.GetMutated(), res.GetError())
}

func (r rendered) denied() bool { return !r.pass && r.mutated == nil }

func wantDenied(t *testing.T, r rendered, code int, inMessage string) {
	t.Helper()
	if !r.denied() {
		t.Fatalf("not denied: pass=%v mutated=%s", r.pass, r.mutated)
	}
	if code != 0 && r.code != code {
		t.Errorf("JSON-RPC code %d (%s), want %d", r.code, r.message, code)
	}
	if !strings.Contains(r.message, inMessage) {
		t.Errorf("message %q does not contain %q", r.message, inMessage)
	}
}
