package jsontok

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		flags  Flags
		depth  int // 0: DefaultMaxDepth
		offset int
		reason string
	}{
		{"empty", ``, 0, 0, 0, ReasonEOF},
		{"open object", `{`, 0, 0, 1, ReasonEOF},
		{"open string after backslash", `"a\`, 0, 0, 3, ReasonEOF},
		{"truncated unicode escape", `"\u00`, 0, 0, 5, ReasonEOF},
		{"trailing", `1 2`, 0, 0, 2, ReasonTrailing},
		{"invalid UTF-8 after value", "1 \xff", 0, 0, 2, ReasonUTF8},
		{"leading zero", `[1,007]`, 0, 0, 4, ReasonLeadingZero},
		{"fraction without digits", `1.e5`, 0, 0, 2, ReasonDigit + `, found 'e'`},
		{"leading plus", `+1`, 0, 0, 0, ReasonValue + `, found '+'`},
		{"NaN", `[NaN]`, 0, 0, 1, ReasonNaN},
		{"minus Infinity", `-Infinity`, 0, 0, 0, ReasonInfinity},
		{"bad literal", `[nul]`, 0, 0, 4, ReasonLiteral + ` (expected null), found ']'`},
		{"trailing comma", `{"a":1,}`, 0, 0, 7, ReasonName + `, found '}'`},
		{"missing colon", `{"a" 1}`, 0, 0, 5, ReasonColon + `, found '1'`},
		{"object next", `{"a":1 "b":2}`, 0, 0, 7, ReasonObjectNext + `, found '"'`},
		{"array next", `[1 2]`, 0, 0, 3, ReasonArrayNext + `, found '2'`},
		{"raw control", "\"a\x01\"", 0, 0, 2, "unescaped control character U+0001 in string"},
		{"unknown escape", `"\x"`, 0, 0, 1, ReasonEscape},
		{"bad hex", `"\u12g4"`, 0, 0, 1, ReasonHexEscape},
		{"invalid UTF-8 in string", "\"a\xc3\x28\"", 0, 0, 2, ReasonUTF8},
		{"lone high", `"a\ud800b"`, 0, 0, 2, ReasonLoneHigh},
		{"high then non-low", `"\ud800\u0041"`, 0, 0, 1, ReasonLoneHigh},
		{"lone low", `"\udc00"`, 0, 0, 1, ReasonLoneLow},
		{"lone surrogates allowed, bad hex still refused", `"\ud800\uzzzz"`, AllowLoneSurrogates, 0, 7, ReasonHexEscape},
		{"invalid UTF-8 allowed in strings only", "\xff", AllowInvalidUTF8, 0, 0, ReasonUTF8},
		{"depth", strings.Repeat("[", 4) + strings.Repeat("]", 4), 0, 3, 3, DepthReason(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScanner([]byte(tc.in), tc.depth, tc.flags)
			_, err := s.Skip()
			if err == nil {
				err = s.End()
			}
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if diff := cmp.Diff(&Error{Offset: tc.offset, Reason: tc.reason}, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestFlagsAccept(t *testing.T) {
	tests := []struct {
		in    string
		flags Flags
	}{
		{`"\ud800"`, AllowLoneSurrogates},
		{`"\udc00\ud800x"`, AllowLoneSurrogates},
		{"\"\xff\xed\xa0\x80\"", AllowInvalidUTF8},
		{`["\ud83d\ude00", "é", -0.5e+3, true, false, null, {}]`, 0},
		{strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth), 0},
	}
	for _, tc := range tests {
		if !Valid([]byte(tc.in), 0, tc.flags) {
			t.Errorf("Valid(%.40q, %v) = false", tc.in, tc.flags)
		}
		if tc.flags != 0 && Valid([]byte(tc.in), 0, 0) {
			t.Errorf("Valid(%.40q) without flags = true", tc.in)
		}
	}
}

// TestSpans: every token names the exact bytes of its value, white space excluded.
func TestSpans(t *testing.T) {
	in := []byte(` { "a" : [ 1 , "x\"y" , {"b":null} ] , "c\u0064" : true } `)
	s := NewScanner(in, 0, 0)
	var got []string
	err := s.Object(func(name Token) error {
		got = append(got, "name "+string(in[name.Start:name.End]))
		if name.Escaped {
			got = append(got, "escaped")
		}
		if s.Peek() == Array {
			return s.Array(func() error {
				t, err := s.Skip()
				got = append(got, string(t.Kind)+" "+string(in[t.Start:t.End]))
				return err
			})
		}
		t, err := s.Skip()
		got = append(got, string(t.Kind)+" "+string(in[t.Start:t.End]))
		return err
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`name "a"`, `0 1`, `" "x\"y"`, `{ {"b":null}`, `name "c\u0064"`, "escaped", `t true`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestRawValue(t *testing.T) {
	in := []byte(`[{"a":"]\"}"}, "s\\", 12e, [[]] ]`)
	s := NewScanner(in, 0, 0)
	var got []string
	if err := s.Array(func() error {
		t, err := s.RawValue()
		got = append(got, string(in[t.Start:t.End]))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":"]\"}"}`, `"s\\"`, `12e`, `[[]]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, in := range []string{`"abc`, `"a\"`, `[[]`, ``} {
		s := NewScanner([]byte(in), 0, 0)
		if _, err := s.RawValue(); err == nil {
			t.Errorf("RawValue(%q) accepted", in)
		}
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		content string
		flags   Flags
		want    string
		err     string
	}{
		{`plain`, 0, "plain", ""},
		{`\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00`, 0, "\"\\/\b\f\n\r\té😀", ""},
		{`a\ud800`, 0, "", ReasonLoneHigh},
		{`\udc00`, 0, "", ReasonLoneLow},
		{`a\ud800b`, AllowLoneSurrogates, "a\ufffdb", ""},
		{"\xff", 0, "", ReasonUTF8},
		{"\xff", AllowInvalidUTF8, "\xff", ""},
		{"a\x1f", 0, "", "unescaped control character U+001F in string"},
		{`\q`, 0, "", ReasonEscape},
	}
	for _, tc := range tests {
		got, err := AppendUnquote([]byte("pre:"), []byte(tc.content), tc.flags)
		var e *Error
		switch {
		case tc.err == "" && (err != nil || string(got) != "pre:"+tc.want):
			t.Errorf("AppendUnquote(%q) = %q, %v; want %q", tc.content, got, err, tc.want)
		case tc.err != "" && (!errors.As(err, &e) || e.Reason != tc.err || string(got) != "pre:"):
			t.Errorf("AppendUnquote(%q) = %q, %v; want error %q", tc.content, got, err, tc.err)
		}
		if tc.flags == 0 && tc.err == "" {
			if !Equal([]byte(tc.content), tc.want) || Equal([]byte(tc.content), tc.want+"x") {
				t.Errorf("Equal(%q, %q) disagrees with AppendUnquote", tc.content, tc.want)
			}
		}
	}
}
