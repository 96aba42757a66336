package jsontok

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzScanner is the tokenizer's fuzz target. For any input:
//   - With AllowLoneSurrogates it accepts exactly what encoding/json.Valid accepts,
//     restricted to valid UTF-8 (encoding/json would replace invalid bytes, not refuse).
//   - Each flag only relaxes: strict acceptance implies acceptance with either flag.
//   - A refusal is an *Error with an offset inside the input.
//   - What it accepts strictly, walked token by token, is the value encoding/json decodes
//     (strings decoded by AppendUnquote and matched by Equal), and every token's span is
//     the exact text of its value: it reads back alone, and RawValue finds the same span.
//   - AppendQuote writes each decoded string back so that it reads the same, and as
//     encoding/json writes it given encoding/json's flags.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{}`, `[1,-0.5e+3,"a\u00e9\n",true,false,null]`, `{"a":{"b":[]},"a":1}`, `"\ud800"`,
		`"\ud83d\ude00\/"`, "\"\xff\"", `01`, `1.`, `-`, `[1,]`, `{"a" 1}`, ` 7 `, `"\x"`, `NaN`,
		`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) >= DefaultMaxDepth {
			return // encoding/json nests deeper
		}
		lenient := Valid(in, 0, AllowLoneSurrogates)
		if want := json.Valid(in) && utf8.Valid(in); lenient != want {
			t.Fatalf("Valid(%q, AllowLoneSurrogates) = %v, encoding/json and UTF-8 say %v", in, lenient, want)
		}
		s := NewScanner(in, 0, 0)
		got, err := walk(t, &s, in)
		if err == nil {
			err = s.End()
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(in) {
				t.Fatalf("refusal %v of %q: want *Error with an offset in 0..%d", err, in, len(in))
			}
			return
		}
		if !lenient || !Valid(in, 0, AllowInvalidUTF8) {
			t.Fatalf("%q accepted strictly but refused with a relaxing flag", in)
		}
		d := json.NewDecoder(bytes.NewReader(in))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatalf("encoding/json cannot decode accepted %q: %v", in, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("walk(%q) = %#v, encoding/json decodes %#v", in, got, want)
		}
	})
}

// walk reads one value into what encoding/json decodes (with UseNumber), checking each
// token's span on the way.
func walk(t *testing.T, s *Scanner, in []byte) (any, error) {
	t.Helper()
	start := s.Pos()
	switch s.Peek() {
	case Object:
		m := map[string]any{}
		err := s.Object(func(name Token) error {
			k, err := unquote(t, in, name)
			if err != nil {
				return err
			}
			m[k], err = walk(t, s, in)
			return err
		})
		checkSpan(t, s, in, start)
		return m, err
	case Array:
		a := []any{}
		err := s.Array(func() error {
			v, err := walk(t, s, in)
			a = append(a, v)
			return err
		})
		checkSpan(t, s, in, start)
		return a, err
	}
	tok, err := s.Skip()
	if err != nil {
		return nil, err
	}
	checkSpan(t, s, in, start)
	text := in[tok.Start:tok.End]
	switch tok.Kind {
	case String:
		return unquote(t, in, tok)
	case Number:
		return json.Number(text), nil
	case Null:
		return nil, nil
	}
	return tok.Kind == True, nil
}

func unquote(t *testing.T, in []byte, tok Token) (string, error) {
	t.Helper()
	content := in[tok.Start+1 : tok.End-1]
	if tok.Escaped != bytes.Contains(content, []byte{'\\'}) {
		t.Fatalf("token %q: Escaped = %v", in[tok.Start:tok.End], tok.Escaped)
	}
	v, err := AppendUnquote(nil, content, 0)
	if err != nil {
		t.Fatalf("AppendUnquote(%q) of a checked string: %v", content, err)
	}
	if !Equal(content, v) || !Equal(content, string(v)) {
		t.Fatalf("Equal(%q, %q) = false", content, v)
	}
	// AppendQuote writes it back as a string that reads as v, and as encoding/json
	// writes it with EscapeLineSeparators|AllowInvalidUTF8.
	q, err := AppendQuote(nil, v, 0)
	if back, uerr := AppendUnquote(nil, q[1:len(q)-1], 0); err != nil || uerr != nil || string(back) != string(v) {
		t.Fatalf("AppendQuote(%q) = %q, %v, which reads back as %q, %v", v, q, err, back, uerr)
	}
	var std bytes.Buffer
	enc := json.NewEncoder(&std)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(v)); err != nil {
		t.Fatal(err)
	}
	if q, _ := AppendQuote(nil, string(v), EscapeLineSeparators|AllowInvalidUTF8); string(q)+"\n" != std.String() {
		t.Fatalf("AppendQuote(%q, EscapeLineSeparators|AllowInvalidUTF8) = %s, encoding/json writes %s", v, q, std.String())
	}
	return string(v), nil
}

// checkSpan checks, once the value that began at or after start has been read without
// error, that its text reads back alone and that RawValue finds the same end.
func checkSpan(t *testing.T, s *Scanner, in []byte, start int) {
	t.Helper()
	end := s.Pos()
	text := strings.TrimLeft(string(in[start:end]), " \t\r\n")
	if text == "" || !Valid([]byte(text), 0, 0) {
		return // the value was refused; the caller reports that
	}
	r := NewScanner(in[:end], 0, 0)
	r.pos = start
	tok, err := r.RawValue()
	if err != nil || tok.End != end || string(in[tok.Start:tok.End]) != text {
		t.Fatalf("RawValue at %d of %q = %+v, %v; the value's text is %q", start, in, tok, err, text)
	}
}
