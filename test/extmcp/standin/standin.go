package standin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
)

// standIn is a small MCP proxy that plays agentgateway. It reads the configuration `toolwarrant emit` wrote and does
// what the gateway does with it (docs/extmcp.md): per route, mcpAuthorization filters the
// tools/list result and denies calls to tools no rule allows (-32602, HTTP 400); the
// mcpGuardrails processor is called on the phases its methods map selects, with exactly
// the fields the gateway sends; a denial becomes a JSON-RPC error (HTTP 200 on the request
// phase); a gRPC failure is a denial under failClosed and a pass under failOpen. It
// forwards everything else to the upstream unchanged.
type standIn struct {
	routes []*standRoute
	http   *http.Client
}

type standRoute struct {
	prefix, target, upstream string
	proc                     pb.ExtMcpClient
	failClosed               bool
	methods                  map[string]string
	timeout                  time.Duration
	allowed                  map[string]bool // nil: no allow rules (everything allowed)
}

// New returns the stand-in gateway for config (an agentgateway standalone configuration
// as emit writes it: one target, path prefix and remote processor per route). Its gRPC
// connections are closed when the test ends.
func New(t testing.TB, config []byte) http.Handler {
	t.Helper()
	g, err := gatewayconf.Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{http: &http.Client{Timeout: 30 * time.Second}}
	conns := map[string]*grpc.ClientConn{}
	for _, r := range g.Routes {
		if len(r.Targets) != 1 || len(r.Paths) != 1 || len(r.Processors) != 1 {
			t.Fatalf("stand-in supports one target, path and processor per route: %+v", r)
		}
		p := r.Processors[0]
		conn := conns[p.Host]
		if conn == nil {
			if conn, err = grpc.NewClient(p.Host, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
				t.Fatal(err)
			}
			conns[p.Host] = conn
			t.Cleanup(func() { conn.Close() })
		}
		timeout := 10 * time.Second // the gateway's default per callout
		if p.RequestTimeout != "" {
			if timeout, err = time.ParseDuration(p.RequestTimeout); err != nil {
				t.Fatal(err)
			}
		}
		sr := &standRoute{prefix: r.Paths[0], target: r.Targets[0].Name, upstream: r.Targets[0].Host, proc: pb.NewExtMcpClient(conn),
			failClosed: p.FailureMode != "failOpen", methods: p.Methods, timeout: timeout}
		for _, rule := range r.Rules {
			if sr.allowed == nil {
				sr.allowed = map[string]bool{}
			}
			if tool, ok := gatewayconf.ParseAllowRule(rule.Expr); ok && rule.Effect == "allow" {
				sr.allowed[tool] = true
			} else if rule.Expr != gatewayconf.NoToolRule {
				t.Fatalf("stand-in cannot evaluate rule %q", rule.Expr)
			}
		}
		s.routes = append(s.routes, sr)
	}
	return s
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rt *standRoute
	for _, x := range s.routes {
		if strings.HasPrefix(r.URL.Path, x.prefix) {
			rt = x
		}
	}
	if rt == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodGet {
		http.Error(w, "no server-initiated stream", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg rpcMessage
	if r.Method == http.MethodPost {
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, "stand-in: one JSON-RPC message per POST", http.StatusBadRequest)
			return
		}
	}
	ctx := r.Context()
	if msg.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if phase := gatewayconf.ResolveMethod(rt.methods, "tools/call"); phase == "request" || phase == "full" {
			res, err := s.checkRequest(ctx, rt, r, msg)
			if e := renderRequest(rt, res, err); e != nil {
				writeRPCError(w, http.StatusOK, msg.ID, e)
				return
			}
			if m := res.GetMutated(); m != nil {
				msg.Params = m
				body, _ = json.Marshal(msg)
			}
		}
		if rt.allowed != nil && !rt.allowed[p.Name] {
			writeRPCError(w, http.StatusBadRequest, msg.ID, &rpcErr{Code: -32602, Message: "Unknown tool: " + p.Name})
			return
		}
	}
	resp, err := s.forward(ctx, rt, r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if msg.Method != "tools/list" || resp.StatusCode != http.StatusOK {
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	reply, err := readResponse(resp, msg.ID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	if reply.Result != nil {
		result := s.authorizeList(rt, reply.Result)
		if phase := gatewayconf.ResolveMethod(rt.methods, "tools/list"); phase == "response" || phase == "full" {
			cctx, cancel := context.WithTimeout(ctx, rt.timeout)
			res, err := rt.proc.CheckResponse(cctx, &pb.McpResponse{ServiceNames: []string{rt.target}, Method: "tools/list", McpResponse: result})
			cancel()
			if e := render(rt, "checkResponse", err, res.GetPass() != nil, res.GetMutated(), res.GetError()); e != nil {
				writeRPCError(w, http.StatusOK, msg.ID, e)
				return
			}
			if m := res.GetMutated(); m != nil {
				if !json.Valid(m) {
					writeRPCError(w, http.StatusOK, msg.ID, &rpcErr{Code: -32603, Message: "mcpGuardrails protocol violation: mutated result is not JSON"})
					return
				}
				result = m
			}
		}
		reply.Result = result
	}
	out, _ := json.Marshal(reply)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// checkRequest sends what the gateway sends on a tools/call request phase: one target,
// the params as raw JSON, the client's headers with the pseudo-headers, one entry per
// value, minus the disallowed ones (authorization, cookie in emit's config).
func (s *standIn) checkRequest(ctx context.Context, rt *standRoute, r *http.Request, msg rpcMessage) (*pb.McpRequestResult, error) {
	hs := []*pb.McpHeader{{Key: ":method", Value: []byte(r.Method)}, {Key: ":scheme", Value: []byte("http")},
		{Key: ":authority", Value: []byte(r.Host)}, {Key: ":path", Value: []byte(r.URL.RequestURI())}}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lk := strings.ToLower(k)
		if lk == "authorization" || lk == "cookie" {
			continue
		}
		for _, v := range r.Header[k] {
			hs = append(hs, &pb.McpHeader{Key: lk, Value: []byte(v)})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, rt.timeout)
	defer cancel()
	return rt.proc.CheckRequest(ctx, &pb.McpRequest{ServiceNames: []string{rt.target}, Method: msg.Method, McpRequest: msg.Params, Headers: hs})
}

type rpcErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func renderRequest(rt *standRoute, res *pb.McpRequestResult, err error) *rpcErr {
	return render(rt, "checkRequest", err, res.GetPass() != nil, res.GetMutated(), res.GetError())
}

// render maps a processor answer to the JSON-RPC error the client gets (nil: go on).
func render(rt *standRoute, phase string, err error, pass bool, mutated []byte, ae *pb.AuthorizationError) *rpcErr {
	switch {
	case err != nil:
		if !rt.failClosed {
			return nil
		}
		return &rpcErr{Code: -32603, Message: fmt.Sprintf("mcpGuardrails %s failed: %s", phase, status.Convert(err).Message())}
	case ae != nil:
		code := map[pb.AuthorizationError_Code]int{pb.AuthorizationError_PERMISSION_DENIED: -32001, pb.AuthorizationError_RESOURCE_EXHAUSTED: -32003,
			pb.AuthorizationError_INVALID: -32600}[ae.GetCode()]
		if code == 0 {
			code = -32603
		}
		e := &rpcErr{Code: code, Message: ae.GetReason()}
		if ae.McpError != nil && json.Valid(ae.McpError) {
			e.Data = ae.McpError
		}
		return e
	case pass || mutated != nil:
		return nil
	default:
		if !rt.failClosed {
			return nil
		}
		return &rpcErr{Code: -32603, Message: "mcpGuardrails protocol violation: no result"}
	}
}

// authorizeList drops the tools no allow rule permits (the gateway does this while it
// merges, before the guardrails response hook) and stamps ttlMs and cacheScope as the
// gateway does on the merged result. Each kept tool object stays byte for byte as the
// upstream sent it.
func (s *standIn) authorizeList(rt *standRoute, result json.RawMessage) json.RawMessage {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(result, &doc); err != nil {
		return result
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(doc["tools"], &tools)
	kept := []json.RawMessage{}
	for _, t := range tools {
		var x struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &x)
		if rt.allowed == nil || rt.allowed[x.Name] {
			kept = append(kept, t)
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i, t := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(t)
	}
	b.WriteString("]")
	keys := make([]string, 0, len(doc))
	for k := range doc {
		if k != "tools" && k != "ttlMs" && k != "cacheScope" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(doc[k])
	}
	b.WriteString(`,"ttlMs":0,"cacheScope":"private"}`)
	return b.Bytes()
}

func (s *standIn) forward(ctx context.Context, rt *standRoute, r *http.Request, body []byte) (*http.Response, error) {
	u, err := url.Parse(rt.upstream)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"} {
		if v := r.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	return s.http.Do(req)
}

// readResponse returns the JSON-RPC response with the given id from a JSON or SSE body.
func readResponse(resp *http.Response, id json.RawMessage) (rpcMessage, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return rpcMessage{}, err
	}
	var candidates [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var cur []byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data:"):
				cur = append(cur, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			case line == "":
				if len(cur) > 0 {
					candidates = append(candidates, cur)
				}
				cur = nil
			}
		}
		if len(cur) > 0 {
			candidates = append(candidates, cur)
		}
	} else {
		candidates = [][]byte{data}
	}
	for _, c := range candidates {
		var m rpcMessage
		if json.Unmarshal(c, &m) == nil && bytes.Equal(m.ID, id) && (m.Result != nil || m.Error != nil) {
			return m, nil
		}
	}
	return rpcMessage{}, fmt.Errorf("stand-in: no response with id %s from upstream", id)
}

func writeRPCError(w http.ResponseWriter, code int, id json.RawMessage, e *rpcErr) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcErr         `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}
