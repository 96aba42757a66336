package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// lambdaFunction cold-starts the function as main does and returns it as lambda.Start
// runs it: raw event bytes in, raw response bytes out (lambda.NewHandler's Invoke), so the
// event is decoded exactly where Lambda decodes it. Its log lines go to logs.
func lambdaFunction(t *testing.T, st stack, logs *bytes.Buffer) lambda.Handler {
	t.Helper()
	cfg := st.cfg.Copy()
	env := map[string]string{"PADS_TABLE": st.table}
	f, err := newHandler(t.Context(), func(k string) string { return env[k] }, &cfg, new(slog.LevelVar), slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	return lambda.NewHandler(f)
}

// eventJSON is a committed sample event (events/name) as a generic JSON object, for edits
// that give members the wrong JSON type.
func eventJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(testenv.Event(t, name), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func rawEvent(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns events/name with fn applied to its JSON object, marshalled.
func edit(t *testing.T, name string, fn func(ev, rc, httpCtx, headers map[string]any)) []byte {
	t.Helper()
	m := eventJSON(t, name)
	rc := m["requestContext"].(map[string]any)
	fn(m, rc, rc["http"].(map[string]any), m["headers"].(map[string]any))
	return rawEvent(t, m)
}

// secretKey is put in every malformed event's Authorization header: no answer or log line
// may echo it.
const secretKey = "Bearer sEcReT-wRiTe-KeY-0123456789abcdefghijklmnopqrstuvw"

// TestMalformedEvents: every event the function cannot read as an HTTP API request is
// answered 400 with the Padlock error body — never an invocation error, which API Gateway
// turns into a 500 — naming what is wrong and quoting none of the event.
func TestMalformedEvents(t *testing.T) {
	st := newStack(t)
	var logs bytes.Buffer
	h := lambdaFunction(t, st, &logs)
	withKey := func(name string, fn func(ev, rc, httpCtx, headers map[string]any)) []byte {
		return edit(t, name, func(ev, rc, hc, hd map[string]any) {
			hd["authorization"] = secretKey
			fn(ev, rc, hc, hd)
		})
	}
	health := string(testenv.Event(t, "health.json"))
	const pre = "invalid API Gateway event: "
	tests := []struct {
		name   string
		event  []byte
		detail string
	}{
		{"not JSON", []byte("GET /health HTTP/1.1\r\nAuthorization: " + secretKey), pre + "not JSON"},
		{"truncated", []byte(health[:len(health)/2]), pre + "not JSON"},
		{"empty", []byte(""), pre + "not JSON"},
		{"an array", []byte(`[{"version":"2.0"}]`), pre + "a JSON array, not an object"},
		{"a string", []byte(`"GET /health"`), pre + "a JSON string, not an object"},
		{"null", []byte(`null`), pre + "version must be '2.0' (an HTTP API event, payload format 2.0)"},
		{"body a number", withKey("append.json", func(ev, _, _, _ map[string]any) { ev["body"] = 5 }),
			pre + "a number in 'body' where a string belongs"},
		{"body an object", withKey("append.json", func(ev, _, _, _ map[string]any) { ev["body"] = map[string]any{"schema": "x"} }),
			pre + "an object in 'body' where a string belongs"},
		{"isBase64Encoded a string", withKey("append.json", func(ev, _, _, _ map[string]any) { ev["isBase64Encoded"] = "true" }),
			pre + "a string in 'isBase64Encoded' where a boolean belongs"},
		{"headers an array", edit(t, "health.json", func(ev, _, _, _ map[string]any) { ev["headers"] = []any{"authorization: " + secretKey} }),
			pre + "an array in 'headers' where an object belongs"},
		{"a header value a number", withKey("health.json", func(_, _, _, hd map[string]any) { hd["x-forwarded-port"] = 443 }),
			pre + "a number in 'headers' where a string belongs"},
		{"requestContext a string", withKey("health.json", func(ev, _, _, _ map[string]any) { ev["requestContext"] = "GET /health" }),
			pre + "a string in 'requestContext' where an object belongs"},
		{"method a number", withKey("health.json", func(_, _, hc, _ map[string]any) { hc["method"] = 7 }),
			pre + "a number in 'requestContext.http.method' where a string belongs"},
		{"timeEpoch a string", withKey("health.json", func(_, rc, _, _ map[string]any) { rc["timeEpoch"] = "1796230800000" }),
			pre + "a string in 'requestContext.timeEpoch' where a number belongs"},
		{"cookies a string", withKey("health.json", func(ev, _, _, _ map[string]any) { ev["cookies"] = "a=b" }),
			pre + "a string in 'cookies' where an array belongs"},
		{"pathParameters a list", withKey("manifest.json", func(ev, _, _, _ map[string]any) { ev["pathParameters"] = []any{"demo-pad-v1"} }),
			pre + "an array in 'pathParameters' where an object belongs"},
		{"no version", withKey("health.json", func(ev, _, _, _ map[string]any) { delete(ev, "version") }),
			pre + "version must be '2.0' (an HTTP API event, payload format 2.0)"},
		{"payload format 1.0", withKey("health.json", func(ev, _, _, _ map[string]any) { ev["version"] = "1.0" }),
			pre + "version must be '2.0' (an HTTP API event, payload format 2.0)"},
		{"a REST API (v1) event", []byte(`{"resource":"/health","path":"/health","httpMethod":"GET","headers":{"authorization":"` + secretKey + `"},` +
			`"multiValueHeaders":{},"queryStringParameters":null,"pathParameters":null,"stageVariables":null,` +
			`"requestContext":{"resourcePath":"/health","httpMethod":"GET","path":"/prod/health","stage":"prod","requestId":"r-1","identity":{"sourceIp":"203.0.113.7"}},` +
			`"body":null,"isBase64Encoded":false}`),
			pre + "version must be '2.0' (an HTTP API event, payload format 2.0)"},
		{"no method", withKey("health.json", func(_, _, hc, _ map[string]any) { delete(hc, "method") }),
			pre + "requestContext.http.method is missing"},
		{"method not a token", withKey("health.json", func(_, _, hc, _ map[string]any) { hc["method"] = "GET /health" }),
			pre + "requestContext.http.method is not an HTTP method"},
		{"no http context", withKey("health.json", func(_, rc, _, _ map[string]any) { delete(rc, "http") }),
			pre + "requestContext.http.method is missing"},
		{"no path", withKey("health.json", func(ev, _, hc, _ map[string]any) { delete(ev, "rawPath"); delete(hc, "path") }),
			pre + "rawPath is missing"},
		{"relative path", withKey("health.json", func(ev, _, hc, _ map[string]any) { ev["rawPath"], hc["path"] = "health", "health" }),
			pre + "rawPath must start with '/'"},
		{"path with a bad escape", withKey("manifest.json", func(ev, _, _, _ map[string]any) { ev["rawPath"] = "/v1/pads/%zz/manifest" }),
			pre + "requestContext.domainName, rawPath and rawQueryString do not form a URL"},
		{"control byte in the query", withKey("blocks.json", func(ev, _, _, _ map[string]any) { ev["rawQueryString"] = "ticket=" + secretKey + "\x01" }),
			pre + "requestContext.domainName, rawPath and rawQueryString do not form a URL"},
		{"domain name with a space", withKey("health.json", func(_, rc, _, _ map[string]any) { rc["domainName"] = "abc 123" }),
			pre + "requestContext.domainName, rawPath and rawQueryString do not form a URL"},
		{"bad base64 body", withKey("append.json", func(ev, _, _, _ map[string]any) { ev["body"], ev["isBase64Encoded"] = "not base64!", true }),
			pre + "the body is marked isBase64Encoded but is not base64"},
		{"bad base64 create", withKey("create.json", func(ev, _, _, _ map[string]any) { ev["body"], ev["isBase64Encoded"] = "e30=\x00!", true }),
			pre + "the body is marked isBase64Encoded but is not base64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			out, err := h.Invoke(t.Context(), tc.event)
			if err != nil {
				t.Fatalf("invocation error %v: API Gateway would answer 500", err)
			}
			var resp events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("result %s is not an API Gateway response: %v", out, err)
			}
			wantBody := `{"error":"bad_request","detail":"` + tc.detail + `"}`
			if resp.StatusCode != 400 || resp.Body != wantBody || resp.IsBase64Encoded {
				t.Errorf("answer %d %s, want 400 %s", resp.StatusCode, resp.Body, wantBody)
			}
			if ct := resp.Headers["Content-Type"]; ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if strings.Contains(string(out), "sEcReT") || strings.Contains(logs.String(), "sEcReT") {
				t.Errorf("the write key was echoed:\nresult %s\nlogs %s", out, logs.String())
			}
			if !strings.Contains(logs.String(), `"detail":"`+tc.detail+`"`) {
				t.Errorf("no log line gives the reason; logs: %s", logs.String())
			}
		})
	}

	// The function still serves well-formed events through the same path, and the
	// refused ones stored nothing: no pad was created, demo-pad-v1 is as seeded.
	out, err := h.Invoke(t.Context(), testenv.Event(t, "health.json"))
	var resp events.APIGatewayV2HTTPResponse
	if err != nil || json.Unmarshal(out, &resp) != nil || resp.StatusCode != 200 {
		t.Fatalf("health.json through Invoke: %s %v", out, err)
	}
	if !strings.Contains(resp.Body, `"pads":{"total":1,"unsealed":0,"sealed":1}`) {
		t.Errorf("after the refused events, health = %s: want only the demo pad", resp.Body)
	}
}
