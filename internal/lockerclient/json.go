package lockerclient

import (
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// The daemon's answers are read with internal/jsontok, strictly: RFC 8259, valid UTF-8,
// no data after the value. A \u escape of a lone surrogate is JSON and is accepted; it
// decodes to U+FFFD, which never equals verified text. Long payload strings are taken as
// raw spans (jsontok's RawString) and checked by what consumes them: the base64 decoder
// refuses every byte outside its alphabet, and payload_utf8 must decode to exactly the
// verified bytes (jsontok.Equal).

// maxDepth bounds nesting in an answer, so a hostile body cannot exhaust the stack.
const maxDepth = 64

func newScanner(b []byte) jsontok.Scanner {
	return jsontok.NewScanner(b, maxDepth, jsontok.AllowLoneSurrogates)
}

// syntaxError is a refusal at the scanner's position, worded as the tokenizer's are.
func syntaxError(s *jsontok.Scanner, msg string) error {
	return &jsontok.Error{Offset: s.Pos(), Reason: msg}
}

// members iterates over the object in b at s: fn is called with each key, decoded, and
// positioned at its value, which it must consume.
func members(s *jsontok.Scanner, b []byte, fn func(key []byte) error) error {
	return s.Object(func(name jsontok.Token) error {
		k := b[name.Start+1 : name.End-1]
		if name.Escaped {
			k, _ = jsontok.AppendUnquote(nil, k, jsontok.AllowLoneSurrogates) // checked by Object
		}
		return fn(k)
	})
}

// intValue is the result of reading a value that should be an integer.
type intValue struct {
	n     int64
	isInt bool         // a JSON integer literal that fits int64
	kind  jsontok.Kind // the value's kind: '0' for numbers
	raw   []byte       // the value's exact text
}

// integer consumes any value and reports whether it is an integer literal. Fractions and
// exponents are not integers here, even when integral: the contract's integers are integers.
func integer(s *jsontok.Scanner, b []byte) (intValue, error) {
	k := s.Peek()
	if k != jsontok.Number {
		t, err := s.Skip()
		return intValue{kind: k, raw: b[t.Start:t.End]}, err
	}
	t, err := s.ReadNumber()
	if err != nil {
		return intValue{}, err
	}
	raw := b[t.Start:t.End]
	if !t.Integer {
		return intValue{kind: k, raw: raw}, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return intValue{n: n, isInt: err == nil, kind: k, raw: raw}, nil
}

// stringValue consumes a value; ok is false when it is not a string.
func stringValue(s *jsontok.Scanner, b []byte) (string, bool, error) {
	if s.Peek() != jsontok.String {
		_, err := s.Skip()
		return "", false, err
	}
	t, err := s.ReadString()
	if err != nil {
		return "", false, err
	}
	v, _ := jsontok.Unquote(b[t.Start+1:t.End-1], jsontok.AllowLoneSurrogates) // checked by ReadString
	return v, true, nil
}

// hasControl reports whether p holds a byte below 0x20 (jsontok.HasControl).
func hasControl(p []byte) bool { return jsontok.HasControl(p) }
