package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/enforce/enforcetest"
)

// scripted is an MCP server: it answers tools/list with its tools (as JSON, or as
// an event stream when sse is set), tools/call with "ok", anything else with {}; and it
// keeps every method it was sent.
type scripted struct {
	mu    sync.Mutex
	tools []string
	sse   bool
	seen  []string
	// raw, when set, is written instead of any answer to tools/list.
	raw         []byte
	contentType string
}

func (u *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	u.mu.Lock()
	u.seen = append(u.seen, req.Method)
	tools, sse, raw, ct := strings.Join(u.tools, ","), u.sse, u.raw, u.contentType
	u.mu.Unlock()
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result := `{}`
	switch req.Method {
	case "tools/list":
		if raw != nil {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write(raw)
			return
		}
		result = `{"tools":[` + tools + `],"nextCursor":"x"}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":"ok"}]}`
	}
	msg := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": keep-alive\n\nevent: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		fmt.Fprintf(w, "event: message\nid: 8\ndata: %s\n\n", msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, msg)
}

func (u *scripted) methods() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

const (
	good  = `{"name":"good","description":"Kept.","inputSchema":{"type":"object"}}`
	bad   = `{"name":"bad","description":"Never approved.","inputSchema":{"type":"object"}}`
	drift = `{"name":"drift","description":"Reworded.","inputSchema":{"type":"object"}}`
)

// testProxy is a proxy in front of an scripted, with good approved, bad unapproved and
// drift approved in another wording.
func testProxy(t *testing.T, mod func(*enforce.Config)) (*httptest.Server, *scripted) {
	t.Helper()
	up := &scripted{tools: []string{good, bad, drift}}
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	src := enforcetest.NewSource()
	g := enforcetest.LiveDigest(t, []byte(good))
	src.Set("s", "good", enforce.ToolEvidence{Approved: g, Crawled: g})
	src.Set("s", "bad", enforce.ToolEvidence{Crawled: enforcetest.LiveDigest(t, []byte(bad))})
	old := enforcetest.LiveDigest(t, []byte(strings.Replace(drift, "Reworded", "Original", 1)))
	src.Set("s", "drift", enforce.ToolEvidence{Approved: old, Crawled: old})
	cfg := enforce.Config{Servers: []string{"s"}, Source: src, Point: enforce.PointProxy, PassMethods: true}
	if mod != nil {
		mod(&cfg)
	}
	p, err := enforce.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	t.Cleanup(func() { p.Close(context.Background()) })
	px, err := New(Config{Processor: p, Upstreams: []Upstream{{Name: "s", URL: us.URL + "/mcp", AllowPrivate: true}}, Probe: -1, MaxRequestBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(px.Handler())
	t.Cleanup(srv.Close)
	return srv, up
}

func post(t *testing.T, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const listReq = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// TestListingFiltered: JSON and event-stream answers keep only the approved tool, and
// every other byte (nextCursor, the other events, their ids) as the scripted sent it.
func TestListingFiltered(t *testing.T) {
	srv, up := testProxy(t, nil)
	_, _, body := post(t, srv.URL+"/s/mcp", listReq, nil)
	want := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + good + `],"nextCursor":"x"}}`
	if body != want {
		t.Fatalf("JSON listing through the proxy:\n got %s\nwant %s", body, want)
	}
	up.mu.Lock()
	up.sse = true
	up.mu.Unlock()
	_, h, body := post(t, srv.URL+"/s/mcp", listReq, nil)
	if h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", h.Get("Content-Type"))
	}
	wantSSE := ": keep-alive\n\nevent: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\nid: 8\ndata: " + want + "\n\n"
	if !strings.HasSuffix(body, strings.TrimPrefix(wantSSE, ": keep-alive\n\n")) || strings.Contains(body, `"bad"`) {
		t.Fatalf("event stream through the proxy:\n got %q\nwant %q", body, wantSSE)
	}
}

// TestCallsDecided: an approved call reaches the scripted; an unapproved, drifted or
// unknown one is answered by the proxy and never reaches it.
func TestCallsDecided(t *testing.T) {
	srv, up := testProxy(t, nil)
	post(t, srv.URL+"/s/mcp", listReq, nil) // the listing the call rule needs
	call := func(name string) string {
		_, _, b := post(t, srv.URL+"/s/mcp", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`, nil)
		return b
	}
	if b := call("good"); !strings.Contains(b, `"text":"ok"`) {
		t.Fatalf("approved call: %s", b)
	}
	for name, want := range map[string]string{"bad": "is unapproved", "drift": "has drifted", "ghost": "is unknown"} {
		b := call(name)
		if !strings.Contains(b, `"id":"c","error":{"code":-32001,"message":"toolwarrant: tool \"`+name+`\" `+want) {
			t.Errorf("call of %s: %s", name, b)
		}
	}
	calls := 0
	for _, m := range up.methods() {
		if m == "tools/call" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("the scripted saw %d tools/call, want only the approved one", calls)
	}
}

// TestRefusedBeforeForwarding: what the proxy cannot read exactly, or whose headers
// disagree with the body, is refused with 4xx and never forwarded.
func TestRefusedBeforeForwarding(t *testing.T) {
	srv, up := testProxy(t, nil)
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		status     int
		want       string
	}{
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, nil, 400, `appears twice`},
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"good","name":"bad"}}`, nil, 200, `no single valid string name`},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"go\xffod\"}}", nil, 200, `not valid JSON; denied`},
		{"not JSON", `{"jsonrpc":`, nil, 400, `not a JSON-RPC message`},
		{"Mcp-Method differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"good"}}`, map[string]string{"Mcp-Method": "tools/list"}, 400, `Mcp-Method header`},
		{"Mcp-Name differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bad"}}`, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "good"}, 400, `Mcp-Name header`},
		{"Mcp-Name base64 differs", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bad"}}`, map[string]string{"Mcp-Name": "=?base64?Z29vZA==?="}, 400, `Mcp-Name header`},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tools/explode"}`, nil, 200, `is not an MCP method this proxy passes`},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, nil, 413, `over 65536 bytes`},
		{"batch with a denial", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad"}}]`, nil, 200, `the batch held a denied request`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(up.methods())
			status, _, body := post(t, srv.URL+"/s/mcp", tc.body, tc.hdr)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("status %d body %s; want %d and %q", status, body, tc.status, tc.want)
			}
			if n := len(up.methods()); n != before {
				t.Errorf("the scripted was sent %v", up.methods()[before:])
			}
		})
	}
	// A matching header (base64 form included) passes.
	post(t, srv.URL+"/s/mcp", listReq, nil)
	if _, _, b := post(t, srv.URL+"/s/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"good"}}`,
		map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?Z29vZA==?="}); !strings.Contains(b, `"ok"`) {
		t.Errorf("matching headers: %s", b)
	}
}

// TestUndecidableAnswers: an answer to tools/list that is not a listing, not JSON-RPC, or
// not JSON at all is a denial, never the scripted's bytes.
func TestUndecidableAnswers(t *testing.T) {
	srv, up := testProxy(t, nil)
	for _, tc := range []struct {
		name, ct, raw, want string
	}{
		{"no tools array", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"tools":"all"}}`, `-32600`},
		{"not JSON-RPC", "application/json", `[1,2]`, `not JSON-RPC; denied`},
		{"html", "text/html", `<p>` + bad + `</p>`, `answered tools/list with \"text/html\"`},
		{"event that is not JSON", "text/event-stream", "data: " + bad + "x\n\n", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up.mu.Lock()
			up.raw, up.contentType = []byte(tc.raw), tc.ct
			up.mu.Unlock()
			_, _, body := post(t, srv.URL+"/s/mcp", listReq, nil)
			if strings.Contains(body, `"bad"`) || !strings.Contains(body, tc.want) {
				t.Errorf("body %s; want %q and no unapproved tool", body, tc.want)
			}
		})
	}
}

// TestHostAndOrigin: DNS rebinding (a Host that is not loopback) and cross-origin browser
// requests are refused.
func TestHostAndOrigin(t *testing.T) {
	srv, _ := testProxy(t, nil)
	for _, hdr := range []map[string]string{{"Host": "evil.example"}, {"Origin": "https://evil.example"}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/s/mcp", strings.NewReader(listReq))
		for k, v := range hdr {
			req.Header.Set(k, v)
			if k == "Host" {
				req.Host = v
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: status %d, want 403", hdr, resp.StatusCode)
		}
	}
	if status, _, _ := post(t, srv.URL+"/s/mcp", listReq, map[string]string{"Origin": "http://localhost:3000"}); status != http.StatusOK {
		t.Errorf("a loopback origin: %d", status)
	}
}

// TestShadowPasses: in shadow mode the listing is unfiltered and the unapproved call is
// forwarded.
func TestShadowPasses(t *testing.T) {
	srv, up := testProxy(t, func(c *enforce.Config) { c.Shadow = true })
	if _, _, b := post(t, srv.URL+"/s/mcp", listReq, nil); !strings.Contains(b, `"bad"`) || !strings.Contains(b, `"drift"`) {
		t.Fatalf("shadow listing: %s", b)
	}
	if _, _, b := post(t, srv.URL+"/s/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bad"}}`, nil); !strings.Contains(b, `"ok"`) {
		t.Fatalf("shadow call: %s", b)
	}
	if m := up.methods(); m[len(m)-1] != "tools/call" {
		t.Errorf("scripted saw %v", m)
	}
}

// TestStaleApprovalsDenyEverything: past the staleness bound, listings and calls are
// denied and /healthz says 503.
func TestStaleApprovalsDenyEverything(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv, _ := testProxy(t, func(c *enforce.Config) { c.Now = clock; c.Refresh, c.Staleness = time.Hour, time.Hour })
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if _, _, b := post(t, srv.URL+"/s/mcp", listReq, nil); !strings.Contains(b, "staleness bound") || strings.Contains(b, `"good"`) {
		t.Errorf("stale listing: %s", b)
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/healthz %d, want 503", resp.StatusCode)
	}
}

// TestUpstreamUnreachable: a JSON-RPC error naming the server, no pass.
func TestUpstreamUnreachable(t *testing.T) {
	src := enforcetest.NewSource()
	src.Set("s", "x", enforce.ToolEvidence{})
	p, err := enforce.New(enforce.Config{Servers: []string{"s"}, Source: src, PassMethods: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	defer p.Close(context.Background())
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	px, err := New(Config{Processor: p, Upstreams: []Upstream{{Name: "s", URL: dead.URL + "/mcp", AllowPrivate: true}}, Probe: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(px.Handler())
	defer srv.Close()
	status, _, body := post(t, srv.URL+"/s/mcp", listReq, nil)
	if status != http.StatusBadGateway || !strings.Contains(body, `"id":1,"error":{"code":-32603,"message":"toolwarrant proxy: cannot reach server \"s\"`) {
		t.Errorf("status %d: %s", status, body)
	}
	if status, _, _ := post(t, srv.URL+"/nope/mcp", listReq, nil); status != http.StatusNotFound {
		t.Errorf("unknown route: %d", status)
	}
}

// TestNewRefuses: a private scripted without AllowPrivate, or one the processor does not
// serve, is refused at construction.
func TestNewRefuses(t *testing.T) {
	src := enforcetest.NewSource()
	p, err := enforce.New(enforce.Config{Servers: []string{"s"}, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []Upstream{{Name: "s", URL: "http://127.0.0.1:1/mcp"}, {Name: "t", URL: "https://example.com/mcp"}, {Name: "s", URL: "http://169.254.169.254/mcp", AllowPrivate: true}} {
		if _, err := New(Config{Processor: p, Upstreams: []Upstream{u}}); err == nil {
			t.Errorf("%+v accepted", u)
		}
	}
}

func TestSSEReader(t *testing.T) {
	in := ": c\n\nid: 1\nevent: message\ndata: a\ndata: b\nretry: 10\n\n\n\ndata: last"
	r := newSSEReader(strings.NewReader(in), 1<<10)
	ev, err := r.next() // a comment alone (a keep-alive) is an event without data, relayed as it came
	if err != nil || ev.data != nil || string(ev.raw) != ": c\n\n" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = r.next()
	if err != nil || string(ev.data) != "a\nb" || string(ev.id) != "1" || string(ev.name) != "message" || string(ev.retry) != "10" {
		t.Fatalf("%+v %v", ev, err)
	}
	if got := string(ev.encode([]byte("x"))); got != "event: message\nid: 1\nretry: 10\ndata: x\n\n" {
		t.Errorf("encode: %q", got)
	}
	if ev, err = r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("the last event, cut before its blank line, is discarded (as a client does): %+v %v", ev, err)
	}
	big := newSSEReader(bytes.NewReader([]byte("data: "+strings.Repeat("x", 2000)+"\n\n")), 1<<10)
	if _, err := big.next(); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("an event over the bound: %v", err)
	}
}
