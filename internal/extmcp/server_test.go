package extmcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/agentgate-dev/agentgate/internal/enforce"
)

// everythingProcessor serves server-everything's captured listing with echo approved.
func everythingProcessor(t *testing.T, mod func(*enforce.Config)) (*testProcessor, []byte, *gateway) {
	t.Helper()
	result, tools := everything(t)
	src := newMemSource()
	for _, raw := range tools {
		src.set("everything", toolNameOf(t, raw), enforce.ToolEvidence{Crawled: liveDigest(t, raw)})
	}
	echo := liveDigest(t, tools[0])
	src.set("everything", "echo", enforce.ToolEvidence{Approved: echo, Crawled: echo})
	tp := newTestProcessor(t, src, []string{"everything"}, mod)
	return tp, result, startServer(t, tp.Processor)
}

// TestGatewayFlow: what an MCP client sees through the gateway: the list keeps echo only,
// echo's call passes, any other call is denied with -32001 naming only that tool.
func TestGatewayFlow(t *testing.T) {
	_, result, gw := everythingProcessor(t, nil)
	ctx := t.Context()

	r := renderRequest(gw.listRequest(ctx, []string{"everything"}))
	if !r.pass {
		t.Fatalf("tools/list request phase: %+v", r)
	}
	r = renderResponse(gw.listResponse(ctx, []string{"everything"}, result))
	if got := names(t, r.mutated); len(got) != 1 || got[0] != "echo" {
		t.Fatalf("listed %v, want [echo]", got)
	}
	if r := renderRequest(gw.callRequest(ctx, "everything", []byte(`{"name":"echo","arguments":{"message":"hi"}}`))); !r.pass {
		t.Errorf("call echo: %+v", r)
	}
	r = renderRequest(gw.callRequest(ctx, "everything", []byte(`{"name":"get-env","arguments":{}}`)))
	wantDenied(t, r, -32001, `tool "get-env" is unapproved`)
	if strings.Contains(r.message, "echo") {
		t.Errorf("denial leaks another tool: %q", r.message)
	}
	// The response phase of a call (methods: full) passes: the call was gated on request.
	if r := renderResponse(gw.c.CheckResponse(ctx, mcpResponse("tools/call", `{"content":[]}`))); !r.pass {
		t.Errorf("tools/call response phase: %+v", r)
	}
}

// TestFailClosedMatrix: everything the processor cannot decide reaches the client as a
// JSON-RPC error, never as a pass or an unfiltered list.
func TestFailClosedMatrix(t *testing.T) {
	callEcho := []byte(`{"name":"echo","arguments":{"message":"hi"}}`)

	t.Run("store down past the staleness bound", func(t *testing.T) {
		tp, result, gw := everythingProcessor(t, nil)
		renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result))
		tp.src.fail(errors.New("disk I/O error"))
		tp.clock.advance(5 * time.Second)
		tp.refresh(t) // fails; the 5 s old snapshot is still within the 10 s bound
		if r := renderRequest(gw.callRequest(t.Context(), "everything", callEcho)); !r.pass {
			t.Fatalf("within the bound, the last snapshot decides: %+v", r)
		}
		tp.clock.advance(6 * time.Second)
		tp.refresh(t)
		wantDenied(t, renderRequest(gw.callRequest(t.Context(), "everything", callEcho)), -32603, "staleness bound")
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result)), -32603, "staleness bound")
		waitHealth(t, gw, healthpb.HealthCheckResponse_NOT_SERVING)
		tp.src.fail(nil)
		tp.refresh(t)
		if r := renderRequest(gw.callRequest(t.Context(), "everything", callEcho)); !r.pass {
			t.Fatalf("store back: %+v", r)
		}
		waitHealth(t, gw, healthpb.HealthCheckResponse_SERVING)
	})
	t.Run("snapshot stale", func(t *testing.T) {
		tp, result, gw := everythingProcessor(t, nil)
		tp.clock.advance(11 * time.Second) // no refresh happened at all
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result)), -32603, "last read 11s ago, over the 10s staleness bound")
	})
	t.Run("never read", func(t *testing.T) {
		src := newMemSource()
		src.fail(errors.New("no such table"))
		tp := newTestProcessor(t, src, []string{"everything"}, nil)
		gw := startServer(t, tp.Processor)
		wantDenied(t, renderRequest(gw.callRequest(t.Context(), "everything", callEcho)), -32603, "have not been read yet")
		waitHealth(t, gw, healthpb.HealthCheckResponse_NOT_SERVING)
	})
	t.Run("malformed mcp_response", func(t *testing.T) {
		_, _, gw := everythingProcessor(t, nil)
		for _, in := range []string{`{"tools":[`, `not json`, `{"tools":"all"}`, ``} {
			wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, []byte(in))), -32600, "tools/list result")
		}
	})
	t.Run("oversized reply", func(t *testing.T) {
		_, result, gw := everythingProcessor(t, func(c *enforce.Config) { c.MaxReplyBytes = 200 })
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result)), -32603, "reply bound")
	})
	t.Run("oversized message", func(t *testing.T) {
		_, _, gw := everythingProcessor(t, func(c *enforce.Config) { c.MaxMessageBytes = 1 << 10 })
		big := []byte(`{"tools":[],"x":"` + strings.Repeat("a", 2<<10) + `"}`)
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, big)), -32603, "over the 1024-byte bound")
		huge := []byte(`{"tools":[],"x":"` + strings.Repeat("a", 200<<10) + `"}`)
		res, err := gw.listResponse(t.Context(), []string{"everything"}, huge)
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("over gRPC's receive limit: %v %v, want ResourceExhausted (failClosed denies it)", res, err)
		}
		wantDenied(t, renderResponse(res, err), -32603, "checkResponse failed")
	})
	t.Run("panic in a handler", func(t *testing.T) {
		tp, result, gw := everythingProcessor(t, nil)
		tp.setHook(func(context.Context, string) { panic("boom") })
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result)), -32603, "internal error")
		wantDenied(t, renderRequest(gw.callRequest(t.Context(), "everything", callEcho)), -32603, "internal error")
		tp.SetDecisionHook(nil)
		if r := renderRequest(gw.callRequest(t.Context(), "everything", callEcho)); !r.denied() {
			// echo has not been listed in this processor yet: unlisted, still a denial.
			t.Fatal("unlisted call passed")
		}
	})
	t.Run("decision past its deadline", func(t *testing.T) {
		tp, result, gw := everythingProcessor(t, func(c *enforce.Config) { c.DecisionTimeout = 50 * time.Millisecond })
		tp.setHook(func(ctx context.Context, _ string) { <-ctx.Done() })
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result)), -32603, "did not finish in time")
		wantDenied(t, renderRequest(gw.callRequest(t.Context(), "everything", callEcho)), -32603, "did not finish in time")
	})
	t.Run("gRPC deadline exceeded", func(t *testing.T) {
		tp, result, gw := everythingProcessor(t, nil)
		tp.setHook(func(ctx context.Context, _ string) { <-ctx.Done() })
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		res, err := gw.listResponse(ctx, []string{"everything"}, result)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v %v, want DeadlineExceeded", res, err)
		}
		wantDenied(t, renderResponse(res, err), -32603, "checkResponse failed")
	})
	t.Run("unknown method", func(t *testing.T) {
		_, _, gw := everythingProcessor(t, nil)
		for _, m := range []string{"prompts/get", "resources/read", "initialize", ""} {
			wantDenied(t, renderRequest(gw.c.CheckRequest(t.Context(), mcpRequest(m, `{"name":"x"}`))), -32001, "not decided by this processor")
			wantDenied(t, renderResponse(gw.c.CheckResponse(t.Context(), mcpResponse(m, `{}`))), -32001, "not decided by this processor")
		}
	})
	t.Run("target not served", func(t *testing.T) {
		_, result, gw := everythingProcessor(t, nil)
		wantDenied(t, renderResponse(gw.listResponse(t.Context(), []string{"everything", "filesystem"}, result)), -32603, `target "filesystem" is not served`)
		wantDenied(t, renderRequest(gw.callRequest(t.Context(), "filesystem", callEcho)), -32603, "not served")
	})
}

func waitHealth(t *testing.T, gw *gateway, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, svc := range []string{"", ServiceName} {
			res, err := gw.h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
			if err == nil && res.GetStatus() == want && svc == ServiceName {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("health did not become %v", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMetrics: decisions, denials, latency and snapshot age appear in the exposition.
func TestMetrics(t *testing.T) {
	tp, result, gw := everythingProcessor(t, nil)
	renderResponse(gw.listResponse(t.Context(), []string{"everything"}, result))
	renderRequest(gw.callRequest(t.Context(), "everything", []byte(`{"name":"echo"}`)))
	renderRequest(gw.callRequest(t.Context(), "everything", []byte(`{"name":"nope"}`)))
	var b bytes.Buffer
	if _, err := tp.Metrics().WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`toolwarrant_extmcp_decisions_total{method="tools/list",outcome="mutated"} 1`,
		`toolwarrant_extmcp_decisions_total{method="tools/call",outcome="pass"} 1`,
		`toolwarrant_extmcp_denials_total{cause="unknown",method="tools/call"} 1`,
		`toolwarrant_extmcp_decision_seconds_count{method="tools/call"} 2`,
		`toolwarrant_extmcp_decision_seconds_bucket{method="tools/list",le="+Inf"} 1`,
		`toolwarrant_extmcp_tools_dropped_total{kind="unapproved"} 13`,
		`toolwarrant_extmcp_snapshot_age_seconds{server="everything"} 0`,
		"# TYPE toolwarrant_extmcp_decision_seconds histogram",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Every sample line is NAME{labels} VALUE or NAME VALUE.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); len(f) != 2 || !strings.HasPrefix(f[0], "toolwarrant_extmcp_") {
			t.Errorf("malformed sample line %q", line)
		}
	}
	_, _ = io.Discard.Write(nil)
}
