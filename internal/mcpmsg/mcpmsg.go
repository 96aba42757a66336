// Package mcpmsg reads JSON-RPC messages of MCP strictly and leaves them as bytes, for the
// enforcement transports (internal/mcpproxy, internal/agentcore): a transport decides on
// the same bytes it forwards, so a member it cannot read exactly once (a duplicate
// "method" or "name", invalid UTF-8, a lone surrogate) is refused rather than read one way
// here and another way by the upstream. encoding/json (and SDKs built on it) would take the
// last of two duplicate members and replace invalid UTF-8; a server in another language may
// take the first.
package mcpmsg

import (
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// Message is one JSON-RPC message, read strictly and left as bytes.
type Message struct {
	// Raw is the message's bytes.
	Raw []byte
	// ID is the raw "id" token (nil when absent); Method the method (HasMethod: a request or
	// a notification; otherwise a response, with a result or an error).
	ID        []byte
	Method    string
	HasMethod bool
	// HasError: a response with an "error" member.
	HasError bool
	params   span // the raw params; zero when absent
	result   span // the raw result; zero when absent
}

type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

// maxDepth bounds nesting in what is read, as the decision core bounds it.
const maxDepth = jsontok.DefaultMaxDepth

// ErrNotMessage is wrapped by every error of Parse and SplitBatch.
var ErrNotMessage = errors.New("not a JSON-RPC message")

// Parse reads one JSON-RPC message.
func Parse(b []byte) (Message, error) {
	e := Message{Raw: b}
	s := jsontok.NewScanner(b, maxDepth, 0)
	if s.Peek() != jsontok.Object {
		return e, ErrNotMessage
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
			e.ID = b[t.Start:t.End]
		case "method":
			if t.Kind != jsontok.String {
				return errors.New(`"method" is not a string`)
			}
			if e.Method, err = jsontok.Unquote(b[t.Start+1:t.End-1], 0); err != nil {
				return err
			}
			e.HasMethod = true
		case "params":
			e.params = span{t.Start, t.End}
		case "result":
			e.result = span{t.Start, t.End}
		case "error":
			e.HasError = true
		}
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return e, fmt.Errorf("%w: %v", ErrNotMessage, err)
	}
	if !e.HasMethod && e.ID == nil {
		return e, fmt.Errorf("%w: neither a method nor an id", ErrNotMessage)
	}
	return e, nil
}

// IsRequest reports a request (a method and an id); a notification has a method only.
func (e Message) IsRequest() bool { return e.HasMethod && e.ID != nil }

// Params returns the raw params (nil when absent).
func (e Message) Params() []byte {
	if !e.params.ok() {
		return nil
	}
	return e.Raw[e.params.start:e.params.end]
}

// Result returns the raw result (nil when absent).
func (e Message) Result() []byte {
	if !e.result.ok() {
		return nil
	}
	return e.Raw[e.result.start:e.result.end]
}

// AroundResult returns the bytes before and after the result: the message is
// before + result + after.
func (e Message) AroundResult() (before, after []byte) {
	return e.Raw[:e.result.start], e.Raw[e.result.end:]
}

// WithResult returns the message with its result replaced, every other byte kept.
func (e Message) WithResult(result []byte) []byte {
	out := make([]byte, 0, len(e.Raw)-(e.result.end-e.result.start)+len(result))
	out = append(out, e.Raw[:e.result.start]...)
	out = append(out, result...)
	return append(out, e.Raw[e.result.end:]...)
}

// SplitBatch returns the messages of a JSON-RPC batch (an array; MCP 2025-03-26 allows
// them), or of a single message, and whether it was a batch.
func SplitBatch(b []byte) ([][]byte, bool, error) {
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
		return nil, true, fmt.Errorf("%w: %v", ErrNotMessage, err)
	}
	if len(out) == 0 {
		return nil, true, fmt.Errorf("%w: an empty batch", ErrNotMessage)
	}
	return out, true, nil
}

// StringMember returns the string member name of a params object, read strictly: ok only
// when params is an object with exactly one such member and it is a string.
func StringMember(params []byte, name string) (string, bool) {
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

// HasToolsArray reports whether result is an object with a "tools" member that is an
// array: a tools/list result, whatever request it answers.
func HasToolsArray(result []byte) bool {
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

// ErrorResponse is a JSON-RPC error answer to the request whose raw id is id (null when
// nil).
func ErrorResponse(id []byte, code int64, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = fmt.Appendf(out, `,"error":{"code":%d,"message":`, code)
	out, _ = jsontok.AppendQuote(out, message, jsontok.AllowInvalidUTF8)
	return append(out, "}}"...)
}
