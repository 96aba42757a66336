package mcpproxy

import (
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// envelope is one JSON-RPC message, read strictly and left as bytes: the proxy decides on
// the same bytes it forwards, so a member it cannot read exactly once (a duplicate "method"
// or "name", invalid UTF-8, a lone surrogate) is refused rather than read one way here and
// another way by the upstream.
type envelope struct {
	raw    []byte
	id     []byte // the raw "id" token; nil when absent
	method string
	// hasMethod: a request or notification; else a response (result or error).
	hasMethod bool
	params    span // the raw params; zero when absent
	result    span // the raw result; zero when absent
	hasError  bool
}

type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

// maxDepth bounds nesting in what the proxy reads, as the decision core bounds it.
const maxDepth = jsontok.DefaultMaxDepth

var errNotMessage = errors.New("not a JSON-RPC message")

// parseEnvelope reads one JSON-RPC message.
func parseEnvelope(b []byte) (envelope, error) {
	e := envelope{raw: b}
	s := jsontok.NewScanner(b, maxDepth, 0)
	if s.Peek() != jsontok.Object {
		return e, errNotMessage
	}
	seen := map[string]bool{}
	err := s.Object(func(name jsontok.Token) error {
		key, err := jsontok.Unquote(b[name.Start+1:name.End-1], 0)
		if err != nil {
			return err
		}
		switch key {
		case "jsonrpc", "id", "method", "params", "result", "error":
			if seen[key] {
				return fmt.Errorf("the member %q appears twice", key)
			}
			seen[key] = true
		}
		t, err := s.RawValue()
		if err != nil {
			return err
		}
		switch key {
		case "id":
			e.id = b[t.Start:t.End]
		case "method":
			if t.Kind != jsontok.String {
				return errors.New(`"method" is not a string`)
			}
			if e.method, err = jsontok.Unquote(b[t.Start+1:t.End-1], 0); err != nil {
				return err
			}
			e.hasMethod = true
		case "params":
			e.params = span{t.Start, t.End}
		case "result":
			e.result = span{t.Start, t.End}
		case "error":
			e.hasError = true
		}
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return e, fmt.Errorf("%w: %v", errNotMessage, err)
	}
	if !e.hasMethod && e.id == nil {
		return e, fmt.Errorf("%w: neither a method nor an id", errNotMessage)
	}
	return e, nil
}

// isRequest reports a request (a method and an id); a notification has a method only.
func (e envelope) isRequest() bool { return e.hasMethod && e.id != nil }

// paramsBytes returns the raw params (nil when absent).
func (e envelope) paramsBytes() []byte {
	if !e.params.ok() {
		return nil
	}
	return e.raw[e.params.start:e.params.end]
}

// resultBytes returns the raw result (nil when absent).
func (e envelope) resultBytes() []byte {
	if !e.result.ok() {
		return nil
	}
	return e.raw[e.result.start:e.result.end]
}

// withResult returns the message with its result replaced, every other byte kept.
func (e envelope) withResult(result []byte) []byte {
	out := make([]byte, 0, len(e.raw)-(e.result.end-e.result.start)+len(result))
	out = append(out, e.raw[:e.result.start]...)
	out = append(out, result...)
	return append(out, e.raw[e.result.end:]...)
}

// splitBatch returns the messages of a JSON-RPC batch (an array; MCP 2025-03-26 allows
// them), or of a single message.
func splitBatch(b []byte) ([][]byte, bool, error) {
	s := jsontok.NewScanner(b, maxDepth, 0)
	if s.Peek() != jsontok.Array {
		return [][]byte{b}, false, nil
	}
	var out [][]byte
	err := s.Array(func() error {
		t, err := s.RawValue()
		if err == nil {
			out = append(out, b[t.Start:t.End])
		}
		return err
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, true, fmt.Errorf("%w: %v", errNotMessage, err)
	}
	if len(out) == 0 {
		return nil, true, fmt.Errorf("%w: an empty batch", errNotMessage)
	}
	return out, true, nil
}

// stringMember returns the string member name of a params object, read strictly: ok only
// when params is an object with exactly one such member and it is a string.
func stringMember(params []byte, name string) (string, bool) {
	if params == nil {
		return "", false
	}
	s := jsontok.NewScanner(params, maxDepth, 0)
	if s.Peek() != jsontok.Object {
		return "", false
	}
	var tok jsontok.Token
	n := 0
	err := s.Object(func(member jsontok.Token) error {
		t, err := s.Skip()
		if err == nil && jsontok.Equal(params[member.Start+1:member.End-1], name) {
			tok, n = t, n+1
		}
		return err
	})
	if err != nil || n != 1 || tok.Kind != jsontok.String {
		return "", false
	}
	v, err := jsontok.Unquote(params[tok.Start+1:tok.End-1], 0)
	return v, err == nil
}

// hasToolsArray reports whether result is an object with a "tools" member that is an
// array: a tools/list result, whatever request it answers.
func hasToolsArray(result []byte) bool {
	s := jsontok.NewScanner(result, maxDepth, jsontok.AllowLoneSurrogates|jsontok.AllowInvalidUTF8)
	if s.Peek() != jsontok.Object {
		return false
	}
	found := false
	_ = s.Object(func(member jsontok.Token) error {
		if jsontok.Equal(result[member.Start+1:member.End-1], "tools") && s.Peek() == jsontok.Array {
			found = true
		}
		_, err := s.Skip()
		return err
	})
	return found
}

// errorResponse is a JSON-RPC error answer to the request whose raw id is id (null when
// nil).
func errorResponse(id []byte, code int64, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = fmt.Appendf(out, `,"error":{"code":%d,"message":`, code)
	out, _ = jsontok.AppendQuote(out, message, jsontok.AllowInvalidUTF8)
	return append(out, "}}"...)
}
