package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/agentgate-dev/agentgate/internal/padwire"
)

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
// API Gateway never sends malformed base64; if it did, a handler that read the body fails
// the invocation with the decode error (as httpadapter did for every route), and nothing
// was stored: the handler refuses a body it could not read before touching the store.
func proxy(h http.Handler) handlerFunc {
	var ra core.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		body, encoded := ev.Body, ev.IsBase64Encoded
		ev.Body, ev.IsBase64Encoded = "", false
		req, err := ra.EventToRequestWithContext(ctx, ev)
		if err != nil {
			return core.GatewayTimeoutV2(), core.NewLoggedError("Could not convert proxy event to request: %v", err)
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
			return core.GatewayTimeoutV2(), fmt.Errorf("request body: %w", eb.err)
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
