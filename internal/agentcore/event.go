package agentcore

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// The payload versions this interceptor reads and writes.
const (
	InputVersion  = "1.0"
	OutputVersion = "1.0"
)

// MaxEventBytes is the default bound on an event: Lambda's limit on a synchronous
// invocation's request payload. Lambda refuses larger events before they reach a function;
// the interceptor denies them too, so that what it answers never depends on who bounded it.
const MaxEventBytes = 6291456

// event is what the interceptor reads of one invocation's input. The bodies are the exact
// bytes of the event's values (sub-slices of it), so a body passed back is the body decided.
type event struct {
	version    string
	hasVersion bool
	// request is mcp.gatewayRequest.body (nil when absent or null); response is
	// mcp.gatewayResponse.body (likewise).
	request, response []byte
	// isResponse: mcp.gatewayResponse is present and not null (the RESPONSE point).
	isResponse bool
	// status is gatewayResponse.statusCode (0 when absent).
	status int
}

// strFlags are the string rules of everything read: RFC 8259 strings, lone surrogate
// escapes allowed (as the decision core allows them, and encoding/json.Valid does); invalid
// UTF-8 refused.
const strFlags = jsontok.AllowLoneSurrogates

// maxDepth bounds the event's nesting: the decision core's bound, plus the envelope's own
// three levels (event, mcp, gatewayRequest/gatewayResponse) above the bodies.
const maxDepth = jsontok.DefaultMaxDepth + 3

// errEvent wraps every reason an event is refused.
var errEvent = errors.New("not an interceptor input event")

// readEvent reads an event strictly, in one pass that validates every byte: a member the
// interceptor reads that appears twice, or any JSON the scanner refuses, is an error
// (wrapping errEvent). Members it does not read are checked and skipped, so that later
// additions to the payload do not refuse it.
func readEvent(b []byte) (event, error) {
	var ev event
	s := jsontok.NewScanner(b, maxDepth, strFlags)
	if s.Peek() != jsontok.Object {
		return ev, fmt.Errorf("%w: not a JSON object", errEvent)
	}
	err := object(&s, b, func(name string) error {
		switch name {
		case "interceptorInputVersion":
			if s.Peek() != jsontok.String {
				return errors.New(`"interceptorInputVersion" is not a string`)
			}
			t, err := s.ReadString()
			if err != nil {
				return err
			}
			ev.version, ev.hasVersion = unquote(b, t), true
			return nil
		case "mcp":
			return readMCP(&s, b, &ev)
		}
		_, err := s.Skip()
		return err
	}, "interceptorInputVersion", "mcp")
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return ev, fmt.Errorf("%w: %v", errEvent, err)
	}
	return ev, nil
}

func readMCP(s *jsontok.Scanner, b []byte, ev *event) error {
	if s.Peek() != jsontok.Object {
		return errors.New(`"mcp" is not an object`)
	}
	return object(s, b, func(name string) error {
		switch name {
		case "gatewayRequest":
			return nullable(s, func() error {
				return object(s, b, func(name string) error {
					if name == "body" {
						return body(s, b, &ev.request)
					}
					_, err := s.Skip()
					return err
				}, "body")
			})
		case "gatewayResponse":
			return nullable(s, func() error {
				ev.isResponse = true
				return object(s, b, func(name string) error {
					switch name {
					case "body":
						return body(s, b, &ev.response)
					case "statusCode":
						t, err := s.ReadNumber()
						if err != nil {
							return err
						}
						n, err := strconv.Atoi(string(b[t.Start:t.End]))
						if err != nil || !t.Integer || n < 100 || n > 599 {
							return fmt.Errorf(`"statusCode" %s is not an HTTP status`, b[t.Start:t.End])
						}
						ev.status = n
						return nil
					}
					_, err := s.Skip()
					return err
				}, "body", "statusCode")
			})
		}
		_, err := s.Skip()
		return err
	}, "gatewayRequest", "gatewayResponse")
}

// object reads an object, calling fn with each member's decoded name, and refuses a
// second member of any of the names once lists.
func object(s *jsontok.Scanner, b []byte, fn func(name string) error, once ...string) error {
	var seen uint8
	return s.Object(func(tok jsontok.Token) error {
		name := unquote(b, tok)
		for i, o := range once {
			if name == o {
				if seen&(1<<i) != 0 {
					return fmt.Errorf("the member %q appears twice", name)
				}
				seen |= 1 << i
			}
		}
		return fn(name)
	})
}

// nullable reads null (leaving the member absent) or calls read.
func nullable(s *jsontok.Scanner, read func() error) error {
	if s.Peek() == jsontok.Null {
		_, err := s.ReadLiteral()
		return err
	}
	if s.Peek() != jsontok.Object {
		return errors.New("not an object or null")
	}
	return read()
}

// body reads a body value (checking all of it) and keeps its exact bytes; null leaves it
// nil. A body of another kind than an object is kept too: it is refused later, as not a
// JSON-RPC message.
func body(s *jsontok.Scanner, b []byte, dst *[]byte) error {
	t, err := s.Skip()
	if err != nil {
		return err
	}
	if t.Kind != jsontok.Null {
		*dst = b[t.Start:t.End]
	}
	return nil
}

// unquote decodes a string token the scanner has checked (its content is valid under
// strFlags, so decoding cannot fail; a failure reads as a name that matches nothing).
func unquote(b []byte, t jsontok.Token) string {
	content := b[t.Start+1 : t.End-1]
	if !t.Escaped {
		return string(content)
	}
	v, err := jsontok.Unquote(content, strFlags)
	if err != nil {
		return "\x00invalid"
	}
	return v
}

// Outputs. Each is written by hand around the body's exact bytes: encoding/json would
// compact or re-escape them, and a body passed on must be the body decided.

// passRequest lets a request through to the target: its body, byte for byte.
func passRequest(body []byte) []byte {
	out := make([]byte, 0, len(body)+96)
	out = append(out, `{"interceptorOutputVersion":"`+OutputVersion+`","mcp":{"transformedGatewayRequest":{"body":`...)
	out = append(out, body...)
	return append(out, "}}}"...)
}

// respond answers the client with body and status: a RESPONSE passed or filtered, or a
// denial at either point (the gateway answers at once and does not call the target).
func respond(status int, body []byte) []byte {
	out := make([]byte, 0, len(body)+112)
	out = append(out, `{"interceptorOutputVersion":"`+OutputVersion+`","mcp":{"transformedGatewayResponse":{"statusCode":`...)
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, `,"body":`...)
	out = append(out, body...)
	return append(out, "}}}"...)
}
