package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// stack is one pads table and the AWS config that reaches it, signed as the function's
// role: template.yaml's PadsFunction policy, assumed (internal/awstest).
type stack struct {
	cfg   aws.Config
	role  *awstest.Principal
	table string
}

func newStack(t *testing.T) stack {
	t.Helper()
	cfg := awstest.Config(t)
	// Retries keep the SDK's attempt count but not its multi-second backoff.
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 5 * time.Millisecond, nil })
		})
	}
	table := awstest.PadsTable(t, cfg)
	p := awstest.Role(t, "PadsFunction", awstest.Resources{"PadsTable": table})
	role := p.Config(t)
	role.Retryer = cfg.Retryer
	return stack{cfg: role, role: p, table: table}
}

// handler cold-starts the Lambda's handler function on the stack, as main does, with extra
// SDK middlewares (call counters, faults), and returns its decoded-event path.
func (s stack) handler(t *testing.T, mws ...func(*middleware.Stack) error) handlerFunc {
	t.Helper()
	return s.function(t, mws...).serve
}

// function cold-starts the Lambda's handler function as main does: what lambda.Start runs.
func (s stack) function(t *testing.T, mws ...func(*middleware.Stack) error) *function {
	t.Helper()
	cfg := s.cfg.Copy()
	cfg.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), mws...)
	env := map[string]string{"PADS_TABLE": s.table}
	f, err := newHandler(t.Context(), func(k string) string { return env[k] }, &cfg, new(slog.LevelVar), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	return f
}

func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(testenv.Event(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// forPad points a pad-route event at padID, with auth as its Authorization header ("" drops it).
func forPad(ev events.APIGatewayV2HTTPRequest, padID, auth string) events.APIGatewayV2HTTPRequest {
	old := ev.PathParameters["pad_id"]
	ev.RawPath = strings.Replace(ev.RawPath, "/"+old+"/", "/"+padID+"/", 1)
	ev.RequestContext.HTTP.Path = ev.RawPath
	ev.PathParameters = map[string]string{"pad_id": padID}
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = v
	}
	delete(h, "authorization")
	if auth != "" {
		h["authorization"] = auth
	}
	ev.Headers = h
	return ev
}

func withBody(ev events.APIGatewayV2HTTPRequest, body []byte, b64 bool) events.APIGatewayV2HTTPRequest {
	if b64 {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	} else {
		ev.Body, ev.IsBase64Encoded = string(body), false
	}
	return ev
}

type result struct {
	status int
	header map[string]string
	body   map[string]any
	raw    string
}

func invoke(t *testing.T, h handlerFunc, ev events.APIGatewayV2HTTPRequest) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := h(ctx, ev)
	if err != nil {
		t.Fatalf("%s %s: handler error %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	raw := resp.Body
	if resp.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(raw)
		raw = string(b)
	}
	r := result{status: resp.StatusCode, header: resp.Headers, raw: raw}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &r.body); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON object: %v", ev.RequestContext.HTTP.Method, ev.RawPath, raw, err)
		}
	}
	return r
}

func want(t *testing.T, what string, r result, status int, fields map[string]any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.status, status, r.raw)
	}
	for k, v := range fields {
		if got := fmt.Sprint(r.body[k]); got != fmt.Sprint(v) {
			t.Errorf("%s: %s = %v, want %v (body %s)", what, k, got, v, r.raw)
		}
	}
}

type pad struct{ id, writeKey, ticket string }

func create(t *testing.T, h handlerFunc) pad {
	t.Helper()
	r := invoke(t, h, loadEvent(t, "create.json"))
	want(t, "create", r, 201, nil)
	return pad{id: r.body["pad_id"].(string), writeKey: r.body["write_key"].(string), ticket: r.body["read_ticket"].(string)}
}

const envelope = `{"schema": "locker.handoff.v1", "task_id": "t-1", "from_agent": "a", "to_agent": "b", "constraints": [], "artifacts": [], "budget_usd": null}`

func appendBlock(t *testing.T, h handlerFunc, p pad, payload []byte, b64 bool) result {
	t.Helper()
	return invoke(t, h, withBody(forPad(loadEvent(t, "append.json"), p.id, "Bearer "+p.writeKey), payload, b64))
}

// readAll reads the whole pad with a ticket and checks the chain independently of the
// service: contiguous seqs, prev linkage from genesis, recomputed hashes, the manifest head.
func readAll(t *testing.T, h handlerFunc, p pad) []map[string]any {
	t.Helper()
	m := invoke(t, h, forPad(loadEvent(t, "manifest.json"), p.id, ""))
	want(t, "manifest", m, 200, nil)
	// Page like lockermcp's reader, 16 blocks at a time, halving on a 413.
	var list []any
	total := int(m.body["block_count"].(float64))
	for from, chunk := 0, 16; from < total; {
		ev := forPad(loadEvent(t, "blocks.json"), p.id, "Bearer "+p.ticket)
		ev.RawQueryString = fmt.Sprintf("from=%d&to=%d", from, min(from+chunk, total)-1)
		ev.QueryStringParameters = nil
		r := invoke(t, h, ev)
		if r.status == 413 && chunk > 1 {
			chunk /= 2
			continue
		}
		want(t, "blocks", r, 200, map[string]any{"total_blocks": total})
		page, _ := r.body["blocks"].([]any)
		if len(page) == 0 {
			t.Fatalf("empty page at %d of %d", from, total)
		}
		list = append(list, page...)
		from += len(page)
	}
	var blocks []map[string]any
	prev := locker.GenesisHash
	for i, x := range list {
		b := x.(map[string]any)
		payload, err := base64.StdEncoding.Strict().DecodeString(b["payload_b64"].(string))
		if err != nil {
			t.Fatalf("block %d payload_b64: %v", i, err)
		}
		if int(b["seq"].(float64)) != i || b["prev_hash"] != prev || b["curr_hash"] != locker.NextHash(prev, payload) {
			t.Fatalf("block %d breaks the chain: %v", i, b)
		}
		prev = b["curr_hash"].(string)
		blocks = append(blocks, b)
	}
	if m.body["head_hash"] != prev || int(m.body["block_count"].(float64)) != len(blocks) {
		t.Fatalf("manifest head %v count %v; chain head %s, %d blocks", m.body["head_hash"], m.body["block_count"], prev, len(blocks))
	}
	return blocks
}

// TestEvents invokes the handler with every sample event as committed: they are valid
// against a fresh stack, where only demo-pad-v1 exists.
func TestEvents(t *testing.T) {
	h := newStack(t).handler(t)
	tests := []struct {
		file   string
		status int
		fields map[string]any
	}{
		{"health.json", 200, map[string]any{"status": "ok"}},
		{"create.json", 201, nil},
		{"append.json", 409, map[string]any{"error": "conflict", "detail": "pad is sealed"}},
		{"seal.json", 409, map[string]any{"error": "conflict", "detail": "pad is sealed"}},
		{"tickets.json", 201, map[string]any{"pad_id": locker.DemoPadID, "type": "read_unlimited"}},
		{"manifest.json", 200, map[string]any{"state": "sealed", "block_count": 3, "head_hash": locker.DemoHead}},
		{"blocks.json", 200, map[string]any{"pad_id": locker.DemoPadID, "from": 0, "to": 2, "total_blocks": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			want(t, tc.file, invoke(t, h, loadEvent(t, tc.file)), tc.status, tc.fields)
		})
	}
	r := invoke(t, h, loadEvent(t, "health.json"))
	pads := r.body["pads"].(map[string]any)
	if fmt.Sprint(pads) != "map[sealed:1 total:2 unsealed:1]" {
		t.Errorf("health pads = %v, want the demo pad and the created one", pads)
	}
	// DynamoDB has no SQLite write-ahead log: wal_mode must not claim one (docs/aws.md).
	if db := fmt.Sprint(r.body["database"]); db != "map[wal_mode:false writable:true]" {
		t.Errorf("health database = %s, want writable and no WAL claim", db)
	}
}

// TestColdStartMakesNoAWSCall builds the handler as main does (AWS config from the
// environment) against a counting proxy in front of the endpoint: building it must send no
// request at all; the first request then reaches DynamoDB through the same proxy.
func TestColdStartMakesNoAWSCall(t *testing.T) {
	st := newStack(t)
	target, err := url.Parse(awstest.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, kv := range st.role.Env(t) { // the function's role, from the environment as in Lambda
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.URL)
	env := map[string]string{"PADS_TABLE": st.table}
	h, err := newHandler(t.Context(), func(k string) string { return env[k] }, nil, new(slog.LevelVar), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("cold start sent %d requests to AWS, want none", n)
	}
	want(t, "first /health", invoke(t, h.serve, loadEvent(t, "health.json")), 200, nil)
	if sent.Load() == 0 {
		t.Fatalf("the first request sent nothing through the counting proxy: the count above proves nothing")
	}
}

// TestDemoSeededOnFirstRead: on a table that has its format marker but no demo pad (a table
// initialised by a build that wrote the marker first and failed before seeding), the first
// read of demo-pad-v1 seeds it, byte-identical.
func TestDemoSeededOnFirstRead(t *testing.T) {
	st := newStack(t)
	_, err := dynamodb.NewFromConfig(st.cfg).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(st.table),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "SCHEMA"},
			"sk": &types.AttributeValueMemberS{Value: "SCHEMA"}, "version": &types.AttributeValueMemberS{Value: "pads/1"}}})
	if err != nil {
		t.Fatal(err)
	}
	calls := awstest.NewCalls()
	h := st.handler(t, calls.Middleware)
	want(t, "health before any demo read", invoke(t, h, loadEvent(t, "health.json")), 200, map[string]any{"pads": map[string]any{"sealed": 0, "total": 0, "unsealed": 0}})
	if got := fmt.Sprint(calls.Take()); got != "map[GetItem:1 Query:1]" {
		t.Errorf("first /health on a table with its marker: calls %s, want the marker read and the counters", got)
	}
	r := invoke(t, h, loadEvent(t, "blocks.json"))
	want(t, "demo blocks", r, 200, map[string]any{"total_blocks": 3})
	// The route's read (missing), the seed (6 GetItem, 5 TransactWriteItems), the re-read,
	// the slice: internal/dynamostore/README.md's row for it.
	if got := fmt.Sprint(calls.Take()); got != "map[GetItem:8 Query:1 TransactWriteItems:5]" {
		t.Errorf("first demo read on a table without it: calls %s", got)
	}
	blocks := r.body["blocks"].([]any)
	if last := blocks[len(blocks)-1].(map[string]any); last["curr_hash"] != locker.DemoHead {
		t.Errorf("demo head = %v, want %s", last["curr_hash"], locker.DemoHead)
	}
	want(t, "health after", invoke(t, h, loadEvent(t, "health.json")), 200, map[string]any{"pads": map[string]any{"sealed": 1, "total": 1, "unsealed": 0}})
}

// TestHandoff is a whole handoff through the handler function: create, envelope, artifact
// (base64-encoded by API Gateway, as binary bodies are), seal, a new ticket, read, verify.
func TestHandoff(t *testing.T) {
	h := newStack(t).handler(t)
	p := create(t, h)
	r0 := appendBlock(t, h, p, []byte(envelope), false)
	want(t, "append envelope", r0, 201, map[string]any{"pad_id": p.id, "seq": 0, "curr_hash": locker.NextHash(locker.GenesisHash, []byte(envelope))})
	artifact := []byte{0xff, 0x00, 'b', 'i', 'n'}
	r1 := appendBlock(t, h, p, artifact, true)
	want(t, "append artifact", r1, 201, map[string]any{"seq": 1, "curr_hash": locker.NextHash(r0.body["curr_hash"].(string), artifact)})
	sealed := invoke(t, h, forPad(loadEvent(t, "seal.json"), p.id, "Bearer "+p.writeKey))
	want(t, "seal", sealed, 200, map[string]any{"state": "sealed", "head_hash": r1.body["curr_hash"]})
	tk := invoke(t, h, forPad(loadEvent(t, "tickets.json"), p.id, "Bearer "+p.writeKey))
	want(t, "tickets", tk, 201, map[string]any{"type": "read_unlimited"})
	blocks := readAll(t, h, pad{id: p.id, ticket: tk.body["ticket"].(string)})
	if len(blocks) != 2 || blocks[1]["payload_b64"] != base64.StdEncoding.EncodeToString(artifact) || blocks[1]["payload_utf8"] != nil {
		t.Errorf("blocks = %v", blocks)
	}
	if ct := blocks[0]["content_type"]; ct != "application/json" {
		t.Errorf("content_type = %v", ct)
	}
	// The first read opened the read_once lease; the original ticket still reads.
	readAll(t, h, p)
}

// TestBadInput sends what API Gateway can deliver but the contract refuses.
func TestBadInput(t *testing.T) {
	h := newStack(t).handler(t)
	p := create(t, h)
	count := func() int {
		t.Helper()
		m := invoke(t, h, forPad(loadEvent(t, "manifest.json"), p.id, ""))
		return int(m.body["block_count"].(float64))
	}
	t.Run("oversized body", func(t *testing.T) {
		// API Gateway accepts up to 10 MB; the 64 KiB cap holds on the decoded body.
		for _, b64 := range []bool{false, true} {
			r := appendBlock(t, h, p, bytes.Repeat([]byte{'x'}, 1<<20), b64)
			want(t, "1 MiB append", r, 413, map[string]any{"error": "payload_too_large", "detail": "payload exceeds 65536 bytes"})
		}
		ev := loadEvent(t, "create.json")
		r := invoke(t, h, withBody(ev, append([]byte("{}"), bytes.Repeat([]byte{' '}, 4095)...), false))
		want(t, "4097-byte create", r, 413, map[string]any{"detail": "request body exceeds 4096 bytes"})
		if n := count(); n != 0 {
			t.Errorf("block_count = %d after refusals", n)
		}
	})
	t.Run("base64 body", func(t *testing.T) {
		r := appendBlock(t, h, p, []byte(envelope), true)
		want(t, "base64 envelope", r, 201, map[string]any{"seq": 0})
		big := bytes.Repeat([]byte{0x80}, locker.MaxBlockBytes) // exactly the cap, not UTF-8
		want(t, "64 KiB base64 artifact", appendBlock(t, h, p, big, true), 201, map[string]any{"seq": 1})
		ev := withBody(forPad(loadEvent(t, "append.json"), p.id, "Bearer "+p.writeKey), nil, false)
		ev.Body, ev.IsBase64Encoded = "not base64!", true
		want(t, "malformed base64 body", invoke(t, h, ev), 400, map[string]any{"error": "bad_request",
			"detail": "invalid API Gateway event: the body is marked isBase64Encoded but is not base64"})
		if n := count(); n != 2 {
			t.Errorf("block_count = %d, want 2", n)
		}
	})
	t.Run("missing headers", func(t *testing.T) {
		r := invoke(t, h, withBody(forPad(loadEvent(t, "append.json"), p.id, ""), []byte("x"), false))
		want(t, "append without Authorization", r, 401, map[string]any{"error": "unauthorized", "detail": "invalid write key"})
		ev := withBody(forPad(loadEvent(t, "append.json"), p.id, "Bearer "+p.writeKey), []byte("no type"), false)
		delete(ev.Headers, "content-type")
		want(t, "append without Content-Type", invoke(t, h, ev), 201, map[string]any{"seq": 2})
		blocks := readAll(t, h, p)
		if ct := blocks[2]["content_type"]; ct != "application/json" {
			t.Errorf("stored content_type = %v, want the application/json default", ct)
		}
		bl := forPad(loadEvent(t, "blocks.json"), p.id, "")
		want(t, "blocks without ticket", invoke(t, h, bl), 401, map[string]any{"detail": "missing read ticket"})
		ev = loadEvent(t, "health.json")
		ev.Headers = nil
		want(t, "health without any header", invoke(t, h, ev), 200, nil)
	})
	t.Run("unknown routes", func(t *testing.T) {
		ev := loadEvent(t, "health.json")
		ev.RawPath, ev.RequestContext.HTTP.Path, ev.RouteKey = "/v2/nothing", "/v2/nothing", "$default"
		want(t, "unknown path", invoke(t, h, ev), 404, map[string]any{"detail": "Not Found"})
		ev = loadEvent(t, "manifest.json")
		ev.RequestContext.HTTP.Method = "DELETE"
		want(t, "wrong method", invoke(t, h, ev), 405, map[string]any{"detail": "Method Not Allowed"})
		ev = forPad(loadEvent(t, "manifest.json"), strings.Repeat("z", 3000), "")
		want(t, "oversized pad id", invoke(t, h, ev), 404, map[string]any{"detail": "pad not found"})
		ev = forPad(loadEvent(t, "manifest.json"), "%ff%fe", "")
		want(t, "non-UTF-8 pad id", invoke(t, h, ev), 404, map[string]any{"detail": "pad not found"})
	})
}

// TestCallBounds counts DynamoDB calls per route through an SDK middleware and asserts the
// bounds documented in internal/dynamostore/README.md, cold start and first requests
// included.
func TestCallBounds(t *testing.T) {
	calls := awstest.NewCalls()
	st := newStack(t)
	h := st.handler(t, calls.Middleware)
	step := func(name string, bound map[string]int, fn func()) {
		t.Helper()
		fn()
		got := calls.Take()
		if fmt.Sprint(got) != fmt.Sprint(bound) {
			t.Errorf("%s: DynamoDB calls %v, documented bound %v", name, got, bound)
		}
	}
	step("cold start", map[string]int{}, func() {})
	// The first call on a new table: the format marker is missing, so the demo pad is seeded
	// (GetItem before each step and after the seal; create, 3 appends, seal) and the marker
	// written; then the route's own Query.
	step("first request on a new table (/health)", map[string]int{"GetItem": 7, "PutItem": 1, "Query": 1, "TransactWriteItems": 5}, func() {
		r := invoke(t, h, loadEvent(t, "health.json"))
		want(t, "health", r, 200, nil)
		if fmt.Sprint(r.body["pads"]) != "map[sealed:1 total:1 unsealed:0]" {
			t.Errorf("first /health on a new table: pads %v, want the demo pad alone", r.body["pads"])
		}
	})
	// Another container on the same table: no call at cold start, one marker read with its
	// first request.
	h2 := st.handler(t, calls.Middleware)
	step("cold start of a second container", map[string]int{}, func() {})
	step("its first request (demo manifest)", map[string]int{"GetItem": 2}, func() {
		want(t, "demo manifest", invoke(t, h2, loadEvent(t, "manifest.json")), 200, map[string]any{"head_hash": locker.DemoHead})
	})
	step("its second request (demo manifest)", map[string]int{"GetItem": 1}, func() {
		want(t, "demo manifest", invoke(t, h2, loadEvent(t, "manifest.json")), 200, nil)
	})
	var p pad
	var tk string
	step("POST /v1/pads", map[string]int{"TransactWriteItems": 1}, func() { p = create(t, h) })
	step("append", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, func() { want(t, "append", appendBlock(t, h, p, []byte(envelope), false), 201, nil) })
	step("seal", map[string]int{"GetItem": 1, "Query": 1, "TransactWriteItems": 1}, func() {
		want(t, "seal", invoke(t, h, forPad(loadEvent(t, "seal.json"), p.id, "Bearer "+p.writeKey)), 200, nil)
	})
	step("tickets", map[string]int{"GetItem": 1, "PutItem": 1}, func() {
		r := invoke(t, h, forPad(loadEvent(t, "tickets.json"), p.id, "Bearer "+p.writeKey))
		want(t, "tickets", r, 201, nil)
		tk = r.body["ticket"].(string)
	})
	step("manifest", map[string]int{"GetItem": 1}, func() { want(t, "manifest", invoke(t, h, forPad(loadEvent(t, "manifest.json"), p.id, "")), 200, nil) })
	blocks := func(ticket string) {
		ev := forPad(loadEvent(t, "blocks.json"), p.id, "Bearer "+ticket)
		ev.RawQueryString, ev.QueryStringParameters = "", nil
		want(t, "blocks", invoke(t, h, ev), 200, nil)
	}
	step("blocks, read_once ticket opening its lease", map[string]int{"GetItem": 2, "Query": 1, "UpdateItem": 1}, func() { blocks(p.ticket) })
	step("blocks, inside the lease", map[string]int{"GetItem": 2, "Query": 1}, func() { blocks(p.ticket) })
	step("blocks, read_unlimited ticket", map[string]int{"GetItem": 2, "Query": 1}, func() { blocks(tk) })
	// A sealed pad with a ticket that read it before: the warm container remembers both
	// (locker's read cache), so only the slice is read; the binary form's whole answer is
	// cached too, so a repeat lockermcp read makes no call at all.
	step("blocks, read_once ticket again (sealed: pad and ticket remembered)", map[string]int{"Query": 1}, func() { blocks(p.ticket) })
	step("blocks, read_unlimited ticket again", map[string]int{"Query": 1}, func() { blocks(tk) })
	binaryOf := func(pd pad, ticket string) {
		ev := forPad(loadEvent(t, "blocks.json"), pd.id, "Bearer "+ticket)
		ev.RawQueryString, ev.QueryStringParameters = "", nil
		ev.Headers["accept"] = padwire.MediaType
		resp, err := h(t.Context(), ev)
		ctype := ""
		for k, v := range resp.Headers {
			if strings.EqualFold(k, "Content-Type") {
				ctype = v
			}
		}
		if err != nil || resp.StatusCode != 200 || ctype != padwire.MediaType {
			t.Fatalf("binary read: %v, %d %v", err, resp.StatusCode, resp.Headers)
		}
	}
	binary := func() { binaryOf(p, tk) }
	step("blocks in the binary form (lockermcp's read)", map[string]int{"Query": 1}, binary)
	step("blocks in the binary form again (the answer cached)", map[string]int{}, binary)
	// An open pad: its pad and ticket are read every time (its record can change), its
	// binary answer is cached by head and state.
	var o pad
	step("POST /v1/pads (a pad left open)", map[string]int{"TransactWriteItems": 1}, func() { o = create(t, h) })
	step("append to it", map[string]int{"GetItem": 1, "TransactWriteItems": 1}, func() { want(t, "append", appendBlock(t, h, o, []byte(envelope), false), 201, nil) })
	step("the open pad in the binary form, opening the lease", map[string]int{"GetItem": 2, "Query": 1, "UpdateItem": 1}, func() { binaryOf(o, o.ticket) })
	step("the open pad in the binary form again (same head and state: the answer cached)", map[string]int{"GetItem": 2}, func() { binaryOf(o, o.ticket) })
	step("blocks, demo pad", map[string]int{"GetItem": 1, "Query": 1}, func() { want(t, "demo", invoke(t, h, loadEvent(t, "blocks.json")), 200, nil) })
	step("health", map[string]int{"Query": 1}, func() { want(t, "health", invoke(t, h, loadEvent(t, "health.json")), 200, nil) })
	step("append refused (sealed)", map[string]int{"GetItem": 1}, func() { want(t, "sealed", appendBlock(t, h, p, []byte("x"), false), 409, nil) })
	step("unknown pad", map[string]int{"GetItem": 1}, func() {
		want(t, "404", invoke(t, h, forPad(loadEvent(t, "manifest.json"), strings.Repeat("0", 32), "")), 404, nil)
	})
}

// TestConcurrentAppends has 32 writers, each its own Lambda instance (its own handler and
// so its own in-process pad lock), append to one pad at once. Every 201 must be in the
// stored chain at its seq with its hash, the chain must verify, and every other answer must
// be the 409 of a race lost too often.
func TestConcurrentAppends(t *testing.T) {
	if awstest.External() {
		t.Log("external endpoint: this test relies on its per-item serializability")
	}
	st := newStack(t)
	first := st.handler(t)
	ev := loadEvent(t, "create.json")
	ev.Body = `{"max_blocks": 64}`
	r := invoke(t, first, ev)
	p := pad{id: r.body["pad_id"].(string), writeKey: r.body["write_key"].(string), ticket: r.body["read_ticket"].(string)}
	want(t, "envelope", appendBlock(t, first, p, []byte(envelope), false), 201, nil)
	const writers = 32
	handlers := make([]handlerFunc, writers)
	for i := range handlers {
		handlers[i] = st.handler(t)
	}
	type ack struct {
		seq  int
		hash string
		body string
	}
	var mu sync.Mutex
	var acks []ack
	statuses := map[int]int{}
	appendEv := forPad(loadEvent(t, "append.json"), p.id, "Bearer "+p.writeKey)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf("writer %d", w)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			resp, err := handlers[w](ctx, withBody(appendEv, []byte(body), false))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			statuses[resp.StatusCode]++
			var out map[string]any
			_ = json.Unmarshal([]byte(resp.Body), &out)
			switch resp.StatusCode {
			case 201:
				acks = append(acks, ack{seq: int(out["seq"].(float64)), hash: out["curr_hash"].(string), body: body})
			case 409:
				if out["detail"] != "pad changed while writing; retry the request" {
					t.Errorf("writer %d: 409 %v", w, out)
				}
			default:
				t.Errorf("writer %d: status %d %s", w, resp.StatusCode, resp.Body)
			}
		}()
	}
	wg.Wait()
	t.Logf("32 concurrent writers: statuses %v", statuses)
	blocks := readAll(t, first, p)
	if len(blocks) != 1+len(acks) {
		t.Errorf("stored %d blocks; 1 + %d acknowledged", len(blocks), len(acks))
	}
	for _, a := range acks {
		if a.seq >= len(blocks) || blocks[a.seq]["curr_hash"] != a.hash || blocks[a.seq]["payload_utf8"] != a.body {
			t.Errorf("acknowledged seq %d (%s) is not stored as acknowledged", a.seq, a.body)
		}
	}
	if len(acks) == 0 {
		t.Errorf("no writer succeeded")
	}
}

// TestFaultAfterSend loses TransactWriteItems responses after DynamoDB received (and
// committed) the request. A lost first response is recovered by the SDK's retry, which
// recognises its own write: one block, acknowledged. Responses lost on every attempt give
// 503 with Retry-After: the block may be stored, but it is not acknowledged, and the retries
// did not store it twice.
func TestFaultAfterSend(t *testing.T) {
	st := newStack(t)
	var failAll bool
	var fmu sync.Mutex
	fault := &awstest.Fault{Operation: "TransactWriteItems"}
	h := st.handler(t, fault.Middleware)
	p := create(t, h)
	base := fault.Attempts()
	fault.Fail = func(n int64) bool {
		fmu.Lock()
		defer fmu.Unlock()
		return failAll || n == base+1
	}

	r := appendBlock(t, h, p, []byte(envelope), false)
	want(t, "append, first response lost", r, 201, map[string]any{"seq": 0})
	if got := fault.Attempts() - base; got != 2 {
		t.Errorf("TransactWriteItems attempts = %d, want 2 (the lost one and the retry)", got)
	}
	blocks := readAll(t, h, p)
	if len(blocks) != 1 || blocks[0]["curr_hash"] != r.body["curr_hash"] {
		t.Fatalf("after a lost response: %d blocks, want exactly the acknowledged one", len(blocks))
	}

	fmu.Lock()
	failAll = true
	fmu.Unlock()
	r = appendBlock(t, h, p, []byte("artifact"), false)
	want(t, "append, every response lost", r, 503, map[string]any{"error": "unavailable"})
	if r.header["Retry-After"] == "" {
		t.Errorf("503 without Retry-After: %v", r.header)
	}
	fmu.Lock()
	failAll = false
	fmu.Unlock()
	blocks = readAll(t, h, p)
	if len(blocks) != 2 || blocks[1]["payload_utf8"] != "artifact" {
		t.Fatalf("after an unacknowledged append: %d blocks, want the committed attempt exactly once", len(blocks))
	}
	want(t, "append after the fault", appendBlock(t, h, p, []byte("next"), false), 201, map[string]any{"seq": 2})
	readAll(t, h, p)
}
