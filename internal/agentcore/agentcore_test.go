package agentcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/enforce/enforcetest"
)

// TestListingFiltered: a tools/list RESPONSE keeps exactly the approved tools of every
// target; unapproved, drifted, unknown, unprefixed (AgentCore's search tool) and
// other-target tools are removed, and every other byte of the body — the JSON-RPC
// envelope's spacing, the id, nextCursor — is as the target sent it, with its status code.
func TestListingFiltered(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := `{"jsonrpc": "2.0", "id": 7, "result": ` + string(f.list) + ` }`
	out := f.invoke(t, t.Context(), responseEvent(listRequest, body, 200))
	o := decode(t, out)
	if o.MCP.Response == nil || o.MCP.Response.StatusCode != 200 {
		t.Fatalf("not a response: %s", out)
	}
	want := `{"jsonrpc": "2.0", "id": 7, "result": ` + string(f.filtered()) + ` }`
	if got := string(o.MCP.Response.Body); got != want {
		t.Fatalf("filtered body:\n got %.600s\nwant %.600s", got, want)
	}
	var res struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(o.MCP.Response.Body, &res)
	got := enforcetest.Names(t, res.Result)
	if strings.Join(got, ",") != strings.Join(f.approved, ",") {
		t.Errorf("kept %v, want %v", got, f.approved)
	}
	// The status code is the target's (a listing answered 200; this one says 203).
	out = f.invoke(t, t.Context(), responseEvent(listRequest, body, 203))
	if o := decode(t, out); o.MCP.Response.StatusCode != 203 || string(o.MCP.Response.Body) != want {
		t.Errorf("with status 203: %s", out)
	}
	// Observations: the unapproved, drifted and unknown tools are reported to the catalog
	// (what the catalog recorder turns into a gateway crawl record), once each.
	if err := f.p.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]enforce.ObservationKind{}
	for _, ob := range f.rec.observations() {
		kinds[ob.Server+"/"+ob.Tool] = ob.Kind
	}
	for tool, kind := range map[string]enforce.ObservationKind{"everything/" + unapproved: enforce.ObservedUnapproved,
		"everything/" + drifted: enforce.ObservedDrift, "everything/echo": "", "everything/get-env": enforce.ObservedNew} {
		if kinds[tool] != kind {
			t.Errorf("observation of %s: %q, want %q", tool, kinds[tool], kind)
		}
	}
}

// TestCalls: a tools/call REQUEST passes, byte for byte, only for an approved tool of a
// served target; anything else is denied with the request's id and a JSON-RPC error the
// gateway answers with, naming why.
func TestCalls(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tests := []struct {
		name, tool string
		pass       bool
		code       int64
		reason     string
	}{
		{name: "approved", tool: "everything___echo", pass: true},
		{name: "approved on the second target", tool: "weather___get_forecast", pass: true},
		{name: "unapproved", tool: "everything___" + unapproved, code: -32001, reason: "is unapproved"},
		{name: "drifted", tool: "everything___" + drifted, code: -32001, reason: "has drifted"},
		{name: "unknown tool", tool: "everything___nothing", code: -32001, reason: "is unknown"},
		{name: "unknown target", tool: "other___tool", code: -32001, reason: "carries no prefix of a served target"},
		{name: "AgentCore's semantic search", tool: searchTool, code: -32001, reason: "carries no prefix of a served target"},
		{name: "prefix without the separator", tool: "everything_echo", code: -32001, reason: "carries no prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := call(tc.tool)
			out := f.invoke(t, t.Context(), requestEvent(body))
			if tc.pass {
				o := decode(t, out)
				if o.MCP.Request == nil || string(o.MCP.Request.Body) != body {
					t.Fatalf("not passed byte for byte: %s", out)
				}
				return
			}
			e := denial(t, out)
			if string(e.ID) != `"c-1"` || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.reason) {
				t.Errorf("denial %s %d %q, want id \"c-1\", %d, %q", e.ID, e.Error.Code, e.Error.Message, tc.code, tc.reason)
			}
		})
	}
	// Malformed params are the client's fault (-32600).
	e := denial(t, f.invoke(t, t.Context(), requestEvent(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}`)))
	if e.Error.Code != -32600 || string(e.ID) != "3" {
		t.Errorf("a call without a name: %d %s %q", e.Error.Code, e.ID, e.Error.Message)
	}
}

// TestOtherMethods: the MCP methods that carry no tool pass at both points, unchanged;
// an unknown method is denied, the core saying which; a client's answer to a server request
// and an error answer pass.
func TestOtherMethods(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	passes := []string{initialize, initialized, listRequest, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, `{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`}
	for _, body := range passes {
		o := decode(t, f.invoke(t, t.Context(), requestEvent(body)))
		if o.MCP.Request == nil || string(o.MCP.Request.Body) != body {
			t.Errorf("REQUEST %s not passed: %+v", body, o)
		}
	}
	initResult := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"gw","version":"1"}}}`
	callResult := `{"jsonrpc":"2.0","id":"c-1","result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`
	errAnswer := `{"jsonrpc":"2.0","id":"c-1","error":{"code":-32001,"message":"toolwarrant: tool \"x\" is unknown; denied"}}`
	for _, c := range []struct{ req, resp string }{{initialize, initResult}, {call("everything___echo"), callResult}, {call("x"), errAnswer}} {
		o := decode(t, f.invoke(t, t.Context(), responseEvent(c.req, c.resp, 200)))
		if o.MCP.Response == nil || o.MCP.Response.StatusCode != 200 || string(o.MCP.Response.Body) != c.resp {
			t.Errorf("RESPONSE %s not passed: %+v", c.resp, o)
		}
	}
	// A notification's response without a body passes as it came.
	o := decode(t, f.invoke(t, t.Context(), responseEvent(initialized, "null", 202)))
	if o.MCP.Response == nil || o.MCP.Response.StatusCode != 202 || string(o.MCP.Response.Body) != "null" {
		t.Errorf("the answer to notifications/initialized: %+v", o)
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":9,"method":"tools/delete","params":{}}`, `{"jsonrpc":"2.0","id":9,"method":"x_amz_bedrock_agentcore_admin"}`} {
		e := denial(t, f.invoke(t, t.Context(), requestEvent(body)))
		if string(e.ID) != "9" || e.Error.Code != -32001 || !strings.Contains(e.Error.Message, "is not an MCP method this interceptor passes") {
			t.Errorf("%s: %s %d %q", body, e.ID, e.Error.Code, e.Error.Message)
		}
	}
	// A result carrying a listing is decided as one, whatever request it answers.
	o = decode(t, f.invoke(t, t.Context(), responseEvent(initialize, `{"jsonrpc":"2.0","id":0,"result":`+string(f.list)+`}`, 200)))
	if !bytes.Contains(o.MCP.Response.Body, []byte("everything___echo")) || bytes.Contains(o.MCP.Response.Body, []byte(unapproved)) {
		t.Errorf("a listing in an initialize result was not filtered: %.300s", o.MCP.Response.Body)
	}
}

// TestUndecidable: whatever the interceptor cannot read or decide is a denial — never a
// Lambda error, never the body passed — keeping the request's id when it can be read.
func TestUndecidable(t *testing.T) {
	f := newFixture(t, fixtureOpts{options: Options{MaxEventBytes: 64 << 10}})
	tests := []struct {
		name   string
		event  []byte
		id     string
		code   int64
		reason string
	}{
		{name: "not JSON", event: []byte(`{"interceptorInputVersion":"1.0","mcp":{`), id: "null", code: -32603, reason: "cannot read the gateway's event"},
		{name: "not an object", event: []byte(`["interceptorInputVersion"]`), id: "null", code: -32603, reason: "cannot read"},
		{name: "empty", event: nil, id: "null", code: -32603, reason: "cannot read"},
		{name: "trailing data", event: append(requestEvent(call("everything___echo")), " {}"...), id: `"c-1"`, code: -32603, reason: "cannot read"},
		{name: "invalid UTF-8", event: bytes.Replace(requestEvent(call("everything___echo")), []byte("hi"), []byte("h\xff"), 1), id: "null", code: -32603, reason: "cannot read"},
		{name: "another version", event: bytes.Replace(requestEvent(call("everything___echo")), []byte(`"1.0"`), []byte(`"2.0"`), 1), id: `"c-1"`, code: -32603, reason: `version "2.0" is not "1.0"`},
		{name: "no version", event: bytes.Replace(requestEvent(call("everything___echo")), []byte(`"interceptorInputVersion":"1.0",`), nil, 1), id: `"c-1"`, code: -32603, reason: `version ""`},
		{name: "version twice", event: bytes.Replace(requestEvent(call("everything___echo")), []byte(`"interceptorInputVersion":"1.0",`), []byte(`"interceptorInputVersion":"1.0","interceptorInputVersion":"1.0",`), 1), id: "null", code: -32603, reason: "cannot read"},
		{name: "body twice", event: bytes.Replace(requestEvent(call("everything___echo")), []byte(`"body":{`), []byte(`"body":{},"body":{`), 1), id: "null", code: -32603, reason: "cannot read"},
		{name: "oversized", event: bytes.Replace(requestEvent(call("everything___echo")), []byte(`"hi"`), []byte(`"`+strings.Repeat("a", 64<<10)+`"`), 1), id: `"c-1"`, code: -32603, reason: "over the 65536-byte bound"},
		{name: "no request body", event: []byte(`{"interceptorInputVersion":"1.0","mcp":{"gatewayRequest":{"path":"/mcp","httpMethod":"POST"}}}`), id: "null", code: -32603, reason: "carries no request body"},
		{name: "null request body", event: []byte(`{"interceptorInputVersion":"1.0","mcp":{"gatewayRequest":{"body":null}}}`), id: "null", code: -32603, reason: "carries no request body"},
		{name: "no mcp", event: []byte(`{"interceptorInputVersion":"1.0"}`), id: "null", code: -32603, reason: "carries no request body"},
		{name: "request is a batch", event: requestEvent(`[` + call("everything___echo") + `]`), id: "null", code: -32600, reason: "not one JSON-RPC message"},
		{name: "request with two methods", event: requestEvent(`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"everything___` + unapproved + `"}}`), id: "null", code: -32600, reason: "not one JSON-RPC message"},
		{name: "response to an unreadable request", event: responseEvent(`{"id":1}`, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, 200), id: "1", code: -32603, reason: "does not say which request"},
		{name: "response without a body", event: responseEvent(listRequest, "null", 200), id: "7", code: -32603, reason: "carries no body"},
		{name: "response that is not JSON-RPC", event: responseEvent(listRequest, `{"tools":[]}`, 200), id: "7", code: -32603, reason: "not one JSON-RPC message"},
		{name: "response body a string", event: responseEvent(listRequest, `"{\"jsonrpc\":\"2.0\"}"`, 200), id: "7", code: -32603, reason: "not one JSON-RPC message"},
		{name: "listing that is not a listing", event: responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":{"tools":{}}}`, 200), id: "7", code: -32600, reason: "not valid JSON with a single \"tools\" array"},
		{name: "status not a status", event: responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`, 42), id: "7", code: -32603, reason: "cannot read"},
	}
	// A listing one byte over the bound is denied whole, never passed unfiltered.
	g := newFixture(t, fixtureOpts{})
	list := responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":`+string(g.list)+`}`, 200)
	g.h = Handler(g.p, Options{MaxEventBytes: len(list) - 1})
	tests = append(tests, struct {
		name   string
		event  []byte
		id     string
		code   int64
		reason string
	}{name: "oversized listing", event: list, id: "7", code: -32603, reason: "-byte bound"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := f
			if tc.name == "oversized listing" {
				h = g
			}
			e := denial(t, h.invoke(t, t.Context(), tc.event))
			if string(e.ID) != tc.id || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.reason) {
				t.Errorf("denial id %s code %d %q; want id %s code %d containing %q", e.ID, e.Error.Code, e.Error.Message, tc.id, tc.code, tc.reason)
			}
		})
	}
}

// TestStaleApprovalsDeny: with the catalog unreachable from the start, a listing is denied
// whole (not passed unfiltered) and every call is denied.
func TestStaleApprovalsDeny(t *testing.T) {
	f := newFixture(t, fixtureOpts{failing: true})
	e := denial(t, f.invoke(t, t.Context(), responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":`+string(f.list)+`}`, 200)))
	if e.Error.Code != -32603 || !strings.Contains(e.Error.Message, "have not been read yet") {
		t.Errorf("listing: %d %q", e.Error.Code, e.Error.Message)
	}
	e = denial(t, f.invoke(t, t.Context(), requestEvent(call("everything___echo"))))
	if !strings.Contains(e.Error.Message, "cannot decide") {
		t.Errorf("call: %q", e.Error.Message)
	}
	// The source comes back: the next invocation re-reads (the approvals were never read,
	// so they are older than any refresh interval) and decides.
	f.src.Fail(nil)
	if o := decode(t, f.invoke(t, t.Context(), requestEvent(call("everything___echo")))); o.MCP.Request == nil {
		t.Errorf("after the catalog came back, the approved call is still denied: %+v", o)
	}
}

// TestRefreshPerInvocation: a re-approval reaches the next invocation once the approvals
// held are older than Options.Refresh, with no refresh loop running in between (a frozen
// Lambda runs none).
func TestRefreshPerInvocation(t *testing.T) {
	f := newFixture(t, fixtureOpts{options: Options{Refresh: time.Nanosecond}})
	body := call("everything___" + unapproved)
	denial(t, f.invoke(t, t.Context(), requestEvent(body)))
	_, tools := enforcetest.Everything(t)
	for _, raw := range tools {
		if enforcetest.ToolName(t, raw) == unapproved {
			d := enforcetest.LiveDigest(t, raw)
			f.src.Set("everything", unapproved, enforce.ToolEvidence{Approved: d, Crawled: d})
		}
	}
	if o := decode(t, f.invoke(t, t.Context(), requestEvent(body))); o.MCP.Request == nil {
		t.Errorf("the newly approved tool is still denied: %+v", o)
	}
}

// TestDeadline: a decision still running when the answer is due (the invocation's deadline
// less the margin) is a denial, answered in time.
func TestDeadline(t *testing.T) {
	f := newFixture(t, fixtureOpts{options: Options{Margin: 50 * time.Millisecond}})
	f.p.SetDecisionHook(func(ctx context.Context, _ string) { <-ctx.Done() })
	defer f.p.SetDecisionHook(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	e := denial(t, f.invoke(t, ctx, requestEvent(call("everything___echo"))))
	if !strings.Contains(e.Error.Message, "did not finish in time") || time.Since(start) > 300*time.Millisecond {
		t.Errorf("denial %q after %s", e.Error.Message, time.Since(start))
	}
}

// TestPanicDenies: a panic while deciding is a denial with the request's id.
func TestPanicDenies(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.p.SetDecisionHook(func(context.Context, string) { panic("boom") })
	defer f.p.SetDecisionHook(nil)
	e := denial(t, f.invoke(t, t.Context(), requestEvent(call("everything___echo"))))
	if string(e.ID) != `"c-1"` || e.Error.Code != -32603 || !strings.Contains(e.Error.Message, "internal error") {
		t.Errorf("%s %d %q", e.ID, e.Error.Code, e.Error.Message)
	}
	// The transport's own recovery: a handler over a processor it cannot use.
	h := &handler{p: nil, o: Options{MaxEventBytes: MaxEventBytes}, log: f.p.Logger()}
	e = denial(t, h.serve(t.Context(), requestEvent(call("everything___echo"))))
	if string(e.ID) != `"c-1"` || !strings.Contains(e.Error.Message, "internal error") {
		t.Errorf("transport panic: %s %q", e.ID, e.Error.Message)
	}
}

// TestShadow: in shadow mode everything the core decides passes — the listing unfiltered,
// the unapproved call through — and the decision records say what would have been denied.
func TestShadow(t *testing.T) {
	f := newFixture(t, fixtureOpts{shadow: true})
	body := `{"jsonrpc":"2.0","id":7,"result":` + string(f.list) + `}`
	o := decode(t, f.invoke(t, t.Context(), responseEvent(listRequest, body, 200)))
	if o.MCP.Response == nil || string(o.MCP.Response.Body) != body {
		t.Errorf("shadow listing was changed: %.300s", o.MCP.Response.Body)
	}
	for _, tool := range []string{"everything___" + unapproved, searchTool, "everything___echo"} {
		if o := decode(t, f.invoke(t, t.Context(), requestEvent(call(tool)))); o.MCP.Request == nil {
			t.Errorf("shadow call of %s denied", tool)
		}
	}
	if o := decode(t, f.invoke(t, t.Context(), requestEvent(`{"jsonrpc":"2.0","id":1,"method":"tools/delete"}`))); o.MCP.Request == nil {
		t.Error("shadow: an unknown method was denied")
	}
	// What the interceptor cannot read is denied in shadow mode too.
	denial(t, f.invoke(t, t.Context(), []byte("not json")))
	if err := f.p.Sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	got := map[string]enforce.RecordOutcome{}
	for _, r := range f.rec.records() {
		got[r.Method+" "+r.Server+"/"+r.Tool] = r.Outcome
	}
	for k, want := range map[string]enforce.RecordOutcome{
		"tools/list everything/" + unapproved: enforce.RecordWouldDeny, "tools/list everything/echo": enforce.RecordAllowed,
		"tools/call everything/" + unapproved: enforce.RecordWouldDeny, "tools/call /" + searchTool: enforce.RecordWouldDeny,
		"tools/call everything/echo": enforce.RecordAllowed, "other /": enforce.RecordWouldDeny, // the core records unknown methods as "other"
	} {
		if got[k] != want {
			t.Errorf("record %q: %q, want %q (all: %v)", k, got[k], want, got)
		}
	}
	for _, w := range f.rec.wins {
		if !w.Shadow || w.Point != enforce.PointAgentCore {
			t.Errorf("window %+v: want shadow, point %s", w, enforce.PointAgentCore)
		}
	}
}

// TestDecisionRecordsEveryWindow: each invocation syncs, so the decision records of a
// frozen-between-invocations process are written once a RecordEvery window has passed,
// without Close; observations are written at every invocation.
func TestDecisionRecordsEveryWindow(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.invoke(t, t.Context(), responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":`+string(f.list)+`}`, 200))
	if len(f.rec.observations()) == 0 {
		t.Error("the listing's observations were not written before the answer")
	}
	if n := len(f.rec.records()); n != 0 {
		t.Errorf("%d decision records written before a window passed", n)
	}
	// A processor with a one-nanosecond window writes at the next invocation.
	g := newFixture(t, fixtureOpts{})
	cfg := g.p.Config()
	cfg.RecordEvery = time.Nanosecond
	p, err := enforce.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	defer p.Close(context.Background())
	h := Handler(p, Options{})
	if _, err := h.Invoke(t.Context(), requestEvent(call("everything___"+unapproved))); err != nil {
		t.Fatal(err)
	}
	var denied bool
	for _, r := range g.rec.records() {
		denied = denied || r.Method == "tools/call" && r.Tool == unapproved && r.Outcome == enforce.RecordDenied && r.Cause == "unapproved"
	}
	if !denied {
		t.Errorf("decision records after one invocation: %+v", g.rec.records())
	}
}

// TestMisconfigured: a processor not configured for this point denies everything rather
// than deciding with another point's rules.
func TestMisconfigured(t *testing.T) {
	src := enforcetest.NewSource()
	src.Set("everything", "echo", enforce.ToolEvidence{})
	p, err := enforce.New(enforce.Config{Servers: []string{"everything"}, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConfig(p.Config()); err == nil || !strings.Contains(err.Error(), "stateless calls") || !strings.Contains(err.Error(), "prefixed") {
		t.Errorf("CheckConfig of an ExtMcp configuration: %v", err)
	}
	e := denial(t, must(Handler(p, Options{}).Invoke(t.Context(), requestEvent(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))))
	if string(e.ID) != "1" || !strings.Contains(e.Error.Message, "misconfigured") {
		t.Errorf("%s %q", e.ID, e.Error.Message)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestRetry: an environment whose start failed denies (keeping ids) and retries at most
// once per interval; once start succeeds, it serves.
func TestRetry(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	calls := 0
	fail := true
	h := Retry(func(context.Context) (HandlerFunc, error) {
		calls++
		if fail {
			return nil, errors.New("catalog unreachable")
		}
		return f.h, nil
	}, 50*time.Millisecond, nil)
	ev := requestEvent(call("everything___echo"))
	for range 3 {
		e := denial(t, must(h.Invoke(t.Context(), ev)))
		if string(e.ID) != `"c-1"` || !strings.Contains(e.Error.Message, "could not start") {
			t.Errorf("%s %q", e.ID, e.Error.Message)
		}
	}
	if calls != 1 {
		t.Errorf("start called %d times within one interval", calls)
	}
	fail = false
	time.Sleep(60 * time.Millisecond)
	if o := decode(t, must(h.Invoke(t.Context(), ev))); o.MCP.Request == nil || calls != 2 {
		t.Errorf("after start succeeded: %+v (%d calls)", o, calls)
	}
	if o := decode(t, must(h.Invoke(t.Context(), ev))); o.MCP.Request == nil || calls != 2 {
		t.Errorf("started handler: %+v (%d calls)", o, calls)
	}
}
