package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// TestBinaryBlocks: the binary /blocks form through the Lambda proxy behind an HTTP API.
// No binaryMediaTypes setting exists or is needed there: a body that is not valid UTF-8
// leaves the function base64-encoded with isBase64Encoded, which API Gateway decodes, so a
// client receives the bytes the handler wrote; they carry the same blocks as the JSON form.
func TestBinaryBlocks(t *testing.T) {
	h := newStack(t).handler(t)
	p := create(t, h)
	payloads := [][]byte{[]byte(envelope), {0xff, 0xfe, 0x00, 'x'}, []byte("text\n")}
	for i, b := range payloads {
		want(t, "append", appendBlock(t, h, p, b, i == 1), 201, nil)
	}
	blocks := readAll(t, h, p)

	ev := forPad(loadEvent(t, "blocks.json"), p.id, "Bearer "+p.ticket)
	ev.RawQueryString, ev.QueryStringParameters = "", nil
	ev.Headers["accept"] = padwire.MediaType
	resp, err := h(t.Context(), ev)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("binary read: %d %v", resp.StatusCode, err)
	}
	if resp.Headers["Content-Type"] != padwire.MediaType || !resp.IsBase64Encoded {
		t.Fatalf("headers %v, base64 %v: want the binary media type, base64-encoded for API Gateway", resp.Headers, resp.IsBase64Encoded)
	}
	body, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	rd := padwire.NewReader(bytes.NewReader(body), bufio.NewReader(nil))
	hd, err := rd.Header()
	if err != nil || hd.PadID != p.id || hd.Count != 3 || hd.TotalBlocks != 3 || hd.To != 2 {
		t.Fatalf("header %+v: %v", hd, err)
	}
	for i := range payloads {
		f, ok, err := rd.Next()
		if err != nil || !ok {
			t.Fatalf("frame %d: %v", i, err)
		}
		got := make([]byte, f.PayloadLen)
		if err := rd.Payload(got, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payloads[i]) || string(f.CurrHash) != blocks[i]["curr_hash"] || string(f.PrevHash) != blocks[i]["prev_hash"] {
			t.Fatalf("frame %d differs from the JSON block %v", i, blocks[i])
		}
	}
	if _, ok, err := rd.Next(); ok || err != nil || rd.End() != nil {
		t.Fatalf("no end mark where expected: %v", err)
	}
}

// gateway stands in for API Gateway's HTTP API (payload format 2.0) in front of the
// function, on loopback, for an HTTP client: each request becomes an event like those in
// events/, each invocation passes through Lambda's payload limits (awstest.LambdaHTTP), and
// a base64-encoded answer is decoded, as API Gateway decodes it. jsonOnly drops the
// client's Accept header (a deployment whose client never asks for the binary form).
type gateway struct {
	t        *testing.T
	h        awstest.HTTPFunc
	jsonOnly bool

	mu          sync.Mutex
	invocations int
	resultBytes int // the invocations' results, as Lambda carries them (JSON)
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/pads/"), "/")
	if len(parts) != 2 || (parts[1] != "blocks" && parts[1] != "manifest") {
		http.NotFound(w, r)
		return
	}
	ev := forPad(loadEvent(g.t, parts[1]+".json"), parts[0], r.Header.Get("Authorization"))
	ev.RawQueryString, ev.QueryStringParameters = r.URL.RawQuery, map[string]string{}
	for k, v := range r.URL.Query() {
		ev.QueryStringParameters[k] = strings.Join(v, ",")
	}
	delete(ev.Headers, "accept")
	if a := r.Header.Get("Accept"); a != "" && !g.jsonOnly {
		ev.Headers["accept"] = a
	}
	resp, err := g.h(r.Context(), ev)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, _ := json.Marshal(resp)
	g.mu.Lock()
	g.invocations++
	g.resultBytes += len(out)
	g.mu.Unlock()
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// readThrough reads pad p with lockermcp's reader through g, on loopback, and checks that
// it verifies onto the writer's head with exactly payloads.
func readThrough(t *testing.T, g *gateway, p pad, payloads [][]byte) {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	c, err := lockerclient.New(lockerclient.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	head := locker.ChainHead(payloads)
	ch, err := c.Read(t.Context(), p.id, p.ticket, lockerclient.ReadOptions{ExpectedHead: &head})
	if err != nil || ch.Integrity.Verdict != lockerclient.VerdictTrustedHeadMatch || ch.Head != head || len(ch.Blocks) != len(payloads) {
		t.Fatalf("read (JSON only %v): %v", g.jsonOnly, err)
	}
	for i, b := range ch.Blocks {
		if !bytes.Equal(b.Payload, payloads[i]) {
			t.Fatalf("read (JSON only %v): block %d differs", g.jsonOnly, i)
		}
	}
}

// TestLockermcpReadsThroughAPIGateway: lockermcp's reader verifies a full pad (4 × 64 KiB,
// the whole byte quota) served by the function behind API Gateway in one invocation in the
// binary form, and in six without it (a refused whole-pad range, the manifest, four
// 64 KiB pages); both land on the writer's head with the same blocks, and the binary
// results carry fewer bytes through Lambda.
func TestLockermcpReadsThroughAPIGateway(t *testing.T) {
	h := newStack(t).handler(t)
	p := create(t, h)
	size := locker.MaxPadBytes / 4
	payloads := [][]byte{[]byte(envelope + strings.Repeat(" ", size-len(envelope)))}
	for i := 1; i < 4; i++ {
		payloads = append(payloads, bytes.Repeat([]byte{byte(i), 0xff, 'x', '\n'}, size/4))
	}
	for i, b := range payloads {
		want(t, "append", appendBlock(t, h, p, b, true), 201, map[string]any{"seq": i})
	}
	want(t, "seal", invoke(t, h, forPad(loadEvent(t, "seal.json"), p.id, "Bearer "+p.writeKey)), 200, nil)

	lambda := awstest.LambdaHTTP(awstest.HTTPFunc(h))
	bin, js := &gateway{t: t, h: lambda}, &gateway{t: t, h: lambda, jsonOnly: true}
	readThrough(t, bin, p, payloads)
	readThrough(t, js, p, payloads)
	t.Logf("a 256 KiB pad through API Gateway and Lambda: binary form %d invocation(s), %d result bytes; JSON %d invocations, %d result bytes",
		bin.invocations, bin.resultBytes, js.invocations, js.resultBytes)
	if bin.invocations != 1 || js.invocations != 6 {
		t.Fatalf("invocations: binary %d, JSON %d; want 1 and 6", bin.invocations, js.invocations)
	}
	if bin.resultBytes >= js.resultBytes {
		t.Fatalf("the binary results (%d bytes) are not smaller than the JSON ones (%d)", bin.resultBytes, js.resultBytes)
	}
}

// TestBinaryAnswerWithinLambdaResultLimit: a pad whose binary answer would not fit
// Lambda's 6 MB result once base64-encoded (here: 51 content types of 100 KB) is
// refused with 413 instead of failing the invocation, and lockermcp's reader then reads
// it in JSON pages, every invocation within Lambda's limits.
func TestBinaryAnswerWithinLambdaResultLimit(t *testing.T) {
	h := newStack(t).handler(t)
	lambda := awstest.LambdaHTTP(awstest.HTTPFunc(h))
	r := invoke(t, h, withBody(loadEvent(t, "create.json"), []byte(`{"max_blocks": 64}`), false))
	want(t, "create", r, 201, nil)
	p := pad{id: r.body["pad_id"].(string), writeKey: r.body["write_key"].(string), ticket: r.body["read_ticket"].(string)}
	ct := "text/plain; note=" + strings.Repeat("a", 100_000)
	payloads := [][]byte{[]byte(envelope)}
	for i := 1; i < 52; i++ {
		payloads = append(payloads, []byte(strconv.Itoa(i)))
	}
	for i, b := range payloads {
		ev := withBody(forPad(loadEvent(t, "append.json"), p.id, "Bearer "+p.writeKey), b, false)
		if i > 0 {
			ev.Headers["content-type"] = ct
		}
		want(t, "append", invoke(t, h, ev), 201, nil)
	}
	ev := forPad(loadEvent(t, "blocks.json"), p.id, "Bearer "+p.ticket)
	ev.RawQueryString, ev.QueryStringParameters = "from=0&to=4095", map[string]string{"from": "0", "to": "4095"}
	ev.Headers["accept"] = padwire.MediaType
	resp, err := lambda(t.Context(), ev)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("binary read of a 5.1 MB answer: %d %v; want 413 within Lambda's limits", resp.StatusCode, err)
	}
	readThrough(t, &gateway{t: t, h: lambda}, p, payloads)
}

// TestBinaryAnswerAlwaysBase64: a binary answer that happens to be valid UTF-8 (its
// framing's created_at bytes decide that) still leaves the function base64-encoded, never
// as a JSON string in which every control byte of the framing takes six; other answers
// keep core's rule (text as is).
func TestBinaryAnswerAlwaysBase64(t *testing.T) {
	body := "AGPB\x02\x00\x01p" + strings.Repeat("\x00", 40) // valid UTF-8, mostly control bytes
	for _, tc := range []struct {
		ctype string
		b64   bool
	}{{padwire.MediaType, true}, {"application/json", false}} {
		h := proxy(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", tc.ctype)
			_, _ = w.Write([]byte(body))
		}), slog.New(slog.DiscardHandler))
		resp, err := awstest.LambdaHTTP(awstest.HTTPFunc(h))(t.Context(), loadEvent(t, "blocks.json"))
		if err != nil || resp.IsBase64Encoded != tc.b64 {
			t.Fatalf("%s: base64 %v (%v), want %v", tc.ctype, resp.IsBase64Encoded, err, tc.b64)
		}
		got := resp.Body
		if tc.b64 {
			b, err := base64.StdEncoding.DecodeString(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		}
		if got != body {
			t.Fatalf("%s: the body changed", tc.ctype)
		}
	}
	if !utf8.ValidString(body) {
		t.Fatal("the body must be valid UTF-8: the case this guards")
	}
}
