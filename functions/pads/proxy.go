package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// function is what lambda.Start runs: Invoke takes each invocation's raw event, so that an
// event this function cannot read — not JSON, a member of the wrong JSON type, no method or
// path, a body marked isBase64Encoded that is not base64 — is answered 400 with the Padlock
// error body ({"error":"bad_request","detail":...}) instead of failing the invocation,
// which API Gateway would turn into a 500 of its own. Only a failure of this function itself
// is an invocation error.
type function struct {
	serve handlerFunc // a decoded event
	log   *slog.Logger
}

// Invoke implements lambda.Handler: the event is decoded as aws-lambda-go decodes a typed
// handler's (encoding/json; unknown members ignored), the answer encoded as it encodes one
// (HTML characters unescaped).
func (f *function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var ev events.APIGatewayV2HTTPRequest
	var resp events.APIGatewayV2HTTPResponse
	var err error
	if derr := json.Unmarshal(payload, &ev); derr != nil {
		resp, err = badEvent(ctx, f.log, "", decodeDetail(derr))
	} else {
		resp, err = f.serve(ctx, ev)
	}
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, fmt.Errorf("encode the response: %w", err)
	}
	return out.Bytes(), nil
}

// eventError prefixes every detail of a refused event.
const eventError = "invalid API Gateway event: "

// decodeDetail says why the event did not decode, naming the member but never quoting a
// value (encoding/json's own messages can quote the input).
func decodeDetail(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return eventError + "a JSON " + jsonWord(te.Value) + ", not an object"
	case errors.As(err, &te):
		return eventError + withArticle(jsonWord(te.Value)) + " in '" + te.Field + "' where " + jsonKind(te.Type) + " belongs"
	}
	return eventError + "not JSON"
}

// jsonWord is the JSON type encoding/json names ("number", "string", …), its first word only.
func jsonWord(v string) string {
	w, _, _ := strings.Cut(v, " ")
	return w
}

// withArticle puts "a" or "an" before a JSON type's name.
func withArticle(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

// checkEvent refuses an event that does not name a request: another payload format, no
// or no valid method, no absolute path, or a domain name, path and query that do not form
// the URL core builds of them (so core.EventToRequest, which would print the URL, query
// and any ticket in it included, on failure, never fails on input). "" means it is fine.
func checkEvent(ev *events.APIGatewayV2HTTPRequest) string {
	if ev.Version != "2.0" {
		return eventError + "version must be '2.0' (an HTTP API event, payload format 2.0)"
	}
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return eventError + "requestContext.http.method is missing"
	}
	if !isToken(method) {
		return eventError + "requestContext.http.method is not an HTTP method"
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if path == "" {
		return eventError + "rawPath is missing"
	}
	if path[0] != '/' {
		return eventError + "rawPath must start with '/'"
	}
	u := "https://" + ev.RequestContext.DomainName + path
	if ev.RawQueryString != "" {
		u += "?" + ev.RawQueryString
	}
	if _, err := url.Parse(u); err != nil {
		return eventError + "requestContext.domainName, rawPath and rawQueryString do not form a URL"
	}
	return ""
}

// isToken reports whether s is an RFC 9110 token, what net/http accepts as a method.
func isToken(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// badEvent is the 400 answer to a malformed event, logged with the reason (never the event).
func badEvent(ctx context.Context, log *slog.Logger, apiRequestID, detail string) (events.APIGatewayV2HTTPResponse, error) {
	log.WarnContext(ctx, "pads: malformed API Gateway event", slog.String("api_request_id", apiRequestID), slog.String("detail", detail))
	w := core.NewProxyResponseWriterV2()
	httpapi.WriteBadRequest(w, detail)
	return w.GetProxyResponse()
}

// proxy serves h for API Gateway HTTP API events (payload format 2.0), as
// httpadapter.NewV2(h).ProxyWithContext does, except for the body: httpadapter decodes the
// whole event body (base64 when API Gateway encoded it) into a new byte slice before the
// handler runs, so a 4 MB body cost 3 MB more memory and a decode even on routes that never
// read it, and even though the handler refuses anything over 64 KiB. Here the body is
// streamed from the event's own string, decoded as the handler reads it: the handler's
// capped reads (413 past 64 KiB or 4 KiB, bodyless routes never read) bound what is decoded,
// as they bound what lockerd reads from a socket. ContentLength is the decoded length when
// it follows from the encoded one (the handler then refuses an oversized body unread),
// otherwise unknown (-1).
//
// An event that does not name a request (checkEvent) is answered 400 before the handler
// runs. A body marked isBase64Encoded that is not base64 is found as the handler reads it
// (routes that never read their body ignore it, as they ignore any body): the handler
// refuses a body it could not read before touching the store, and the answer is 400, so
// nothing was stored.
func proxy(h http.Handler, log *slog.Logger) handlerFunc {
	var ra core.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if detail := checkEvent(&ev); detail != "" {
			return badEvent(ctx, log, ev.RequestContext.RequestID, detail)
		}
		body, encoded := ev.Body, ev.IsBase64Encoded
		ev.Body, ev.IsBase64Encoded = "", false
		req, err := ra.EventToRequestWithContext(ctx, ev)
		if err != nil {
			// checkEvent refuses all that core does; should core refuse more, it is still
			// the event's fault.
			return badEvent(ctx, log, ev.RequestContext.RequestID, eventError+"it does not form an HTTP request")
		}
		eb := &eventBody{}
		if encoded {
			eb.r = base64.NewDecoder(base64.StdEncoding, strings.NewReader(body))
			req.ContentLength = decodedLen(body)
		} else {
			eb.r = strings.NewReader(body)
			req.ContentLength = int64(len(body))
		}
		req.Body = eb
		w := core.NewProxyResponseWriterV2()
		h.ServeHTTP(w, req)
		if eb.err != nil {
			return badEvent(ctx, log, ev.RequestContext.RequestID, eventError+"the body is marked isBase64Encoded but is not base64")
		}
		resp, err := w.GetProxyResponse()
		if err != nil {
			return core.GatewayTimeoutV2(), core.NewLoggedError("Error while generating proxy response: %v", err)
		}
		if !resp.IsBase64Encoded && isPadwire(resp.Headers) {
			// core sends a body that happens to be valid UTF-8 as a JSON string, where each
			// control byte (the binary form's lengths are full of them) takes six: base64
			// keeps the result at 4/3 of the answer, which httpapi.DefaultMaxWireBytes bounds
			// to fit Lambda's 6 MB result.
			resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(resp.Body)), true
		}
		return resp, nil
	}
}

// isPadwire reports whether a response is the binary form of /blocks.
func isPadwire(h map[string]string) bool {
	for k, v := range h {
		if strings.EqualFold(k, "Content-Type") {
			return strings.HasPrefix(v, padwire.MediaType)
		}
	}
	return false
}

// eventBody is a request body read from the event, remembering a decode error.
type eventBody struct {
	r   io.Reader
	err error
}

func (b *eventBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *eventBody) Close() error { return nil }

// decodedLen is the length of standard, padded base64 s once decoded, or -1 (unknown) when s
// is not in the canonical shape API Gateway sends (a multiple of 4 characters, no line
// breaks): the handler then reads up to its cap and the decoder has the last word.
func decodedLen(s string) int64 {
	if len(s)%4 != 0 || strings.ContainsAny(s, "\r\n") {
		return -1
	}
	n := int64(len(s)) / 4 * 3
	if strings.HasSuffix(s, "==") {
		n -= 2
	} else if strings.HasSuffix(s, "=") {
		n--
	}
	return n
}
