package canon

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestRFC8785Numbers(t *testing.T) {
	a := readArchive(t, "testdata/rfc8785.txtar")
	lines := strings.Split(string(a.files["numbers"]), "\n")
	n := 0
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		n++
		bits, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		f := math.Float64frombits(bits)
		want := fields[1]
		got, err := AppendNumber(nil, f)
		if want == "error" {
			var e *Error
			if !errors.As(err, &e) || e.Offset != -1 {
				t.Errorf("AppendNumber(%s) = %q, %v; want *Error with Offset -1", fields[0], got, err)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("AppendNumber(%s) = %q, %v; want %q", fields[0], got, err, want)
		}
		// The expected text is itself canonical.
		if got, err := Transform([]byte(want)); err != nil || string(got) != want {
			t.Errorf("Transform(%q) = %q, %v; want it unchanged", want, got, err)
		}
	}
	if n < 26 {
		t.Fatalf("read %d number samples; the archive has 26", n)
	}
}

func TestRFC8785Examples(t *testing.T) {
	a := readArchive(t, "testdata/rfc8785.txtar")
	n := 0
	for _, name := range a.names {
		base, ok := strings.CutSuffix(name, ".input.json")
		if !ok {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			var want []byte
			if w, ok := a.files[base+".output.json"]; ok {
				want = trimNewline(w)
			} else if h, ok := a.files[base+".output.hex"]; ok {
				var err error
				if want, err = hex.DecodeString(strings.Join(strings.Fields(string(h)), "")); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Fatalf("no expected output for %s", name)
			}
			got, err := Transform(a.files[name])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Transform mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if n < 6 {
		t.Fatalf("found %d examples; the archive has 6", n)
	}
}

// transformCase is an accepted input and its canonical form.
type transformCase struct {
	name, in, want string
}

// transformCases are shared by TestTransform and the fuzz seeds.
func transformCases() []transformCase {
	return []transformCase{
		{"literals", ` [ true , false , null ] `, `[true,false,null]`},
		{"top-level string", "\t\"x\"\r\n", `"x"`},
		{"top-level number", `1.50`, `1.5`},
		{"empty object", `{ }`, `{}`},
		{"empty array", `[ ]`, `[]`},
		{"nested empty", `[{},[],{"a":[]}]`, `[{},[],{"a":[]}]`},
		{"integers pass through", `[0,-1,7,123456789012345,-999999999999999]`, `[0,-1,7,123456789012345,-999999999999999]`},
		{"minus zero", `[-0,-0.0,-0e5,0.0,0e-9]`, `[0,0,0,0,0]`},
		{"16-digit integers round", `[9007199254740993,12345678901234567890]`, `[9007199254740992,12345678901234567000]`},
		{"exponents", `[1E2,1e+2,1e-2,100e-2,1E21,1e20,1e-6,1e-7,0.0000001]`, `[100,100,0.01,1,1e+21,100000000000000000000,0.000001,1e-7,1e-7]`},
		{"fraction", `[4.50,0.1,-2.5e-3,123.456e3]`, `[4.5,0.1,-0.0025,123456]`},
		{"underflow is zero", `[1e-400,-1e-400,2.4703282292062328e-324]`, `[0,0,5e-324]`},
		{"largest double", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"long mantissa", `0.1000000000000000055511151231257827021181583404541015625`, `0.1`},
		{"solidus unescaped", `"\/a\/"`, `"/a/"`},
		{"short escapes kept", `"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
		{"unicode escapes decoded", `"\u0041\u00e9\u20AC\ud83d\ude00"`, "\"A\u00e9\u20ac\U0001F600\""},
		{"control escapes canonical", `"\u0000\u0008\u000A\u001F\u007f"`, "\"\\u0000\\b\\n\\u001f\u007f\""},
		{"quote and backslash escapes", `"\u0022\u005C"`, `"\"\\"`},
		{"line separators raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"raw UTF-8 kept", "\"\u00e9\U0001F600\uFFFD\"", "\"\u00e9\U0001F600\uFFFD\""},
		{"sorted by code unit", `{"b":1,"a":2,"ab":3,"":4,"B":5}`, `{"":4,"B":5,"a":2,"ab":3,"b":1}`},
		{"supplementary before U+E000", "{\"\uE000\":1,\"\U00010000\":2,\"\uFFFF\":3,\"\uD7FF\":4}", "{\"\uD7FF\":4,\"\U00010000\":2,\"\uE000\":1,\"\uFFFF\":3}"},
		{"escaped names sort decoded", `{"#":1,"\"":2,"!":3,"\u0001":4,"\n":5}`, `{"\u0001":4,"\n":5,"!":3,"\"":2,"#":1}`},
		{"escaped and plain names equal order", `{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested sorting", `{"z":{"y":1,"x":[{"b":1,"a":2}]},"a":null}`, `{"a":null,"z":{"x":[{"a":2,"b":1}],"y":1}}`},
		{"prefix sorts first", `{"aa":1,"a":2,"aaa":3}`, `{"a":2,"aa":1,"aaa":3}`},
		{"arrays keep order", `[3,1,2,"b","a"]`, `[3,1,2,"b","a"]`},
		{"whitespace everywhere", " {\n\t\"a\" :\r [ 1 ,\n2 ] , \"b\" : { } } ", `{"a":[1,2],"b":{}}`},
		{"same names in different objects", `[{"a":1},{"a":2}]`, `[{"a":1},{"a":2}]`},
		{"depth limit", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)},
	}
}

func TestTransform(t *testing.T) {
	for _, tc := range transformCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Transform([]byte(tc.in))
			if err != nil {
				t.Fatalf("Transform(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("Transform(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// refusalCase is a refused input with the offset and reason its error must carry.
type refusalCase struct {
	name   string
	in     string
	offset int64
	reason string
}

// refusalCases are shared by TestTransformRefusals and the fuzz seeds.
func refusalCases() []refusalCase {
	deepArray := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	deepObject := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	return []refusalCase{
		// Unterminated input: the offset is the length.
		{"empty", ``, 0, reasonEOF},
		{"only whitespace", "  \n", 3, reasonEOF},
		{"open object", `{`, 1, reasonEOF},
		{"open array", `[1,2`, 4, reasonEOF},
		{"open array after comma", `[1,`, 3, reasonEOF},
		{"open string", `"abc`, 4, reasonEOF},
		{"open string after backslash", `"a\`, 3, reasonEOF},
		{"object without value", `{"a":`, 5, reasonEOF},
		{"object after value", `{"a":1`, 6, reasonEOF},
		{"object after name", `{"a"`, 4, reasonEOF},
		{"truncated unicode escape", `"\u00`, 5, reasonEOF},
		{"truncated literal", `tru`, 3, reasonEOF},
		{"truncated fraction", `1.`, 2, reasonEOF},
		{"truncated exponent", `1e`, 2, reasonEOF},
		{"truncated exponent sign", `1e+`, 3, reasonEOF},
		{"lone minus", `-`, 1, reasonEOF},

		// Trailing garbage.
		{"two values", `1 2`, 2, reasonTrailing},
		{"object then text", `{}x`, 2, reasonTrailing},
		{"two literals", `nullnull`, 4, reasonTrailing},
		{"extra bracket", `[]]`, 2, reasonTrailing},
		{"NUL after value", "0\x00", 1, reasonTrailing},
		{"invalid UTF-8 after value", "1 \xff", 2, reasonUTF8},

		// Numbers.
		{"leading zero", `01`, 1, reasonLeadingZero},
		{"negative leading zero", `-01`, 2, reasonLeadingZero},
		{"double zero", `00`, 1, reasonLeadingZero},
		{"leading zero in array", `[1,007]`, 4, reasonLeadingZero},
		{"leading zero with fraction", `00.5`, 1, reasonLeadingZero},
		{"fraction without digits", `1.e5`, 2, reasonDigit + `, found 'e'`},
		{"exponent without digits", `1ex`, 2, reasonDigit + `, found 'x'`},
		{"minus without digits", `-a`, 1, reasonDigit + `, found 'a'`},
		{"leading dot", `.5`, 0, reasonValue + `, found '.'`},
		{"leading plus", `+1`, 0, reasonValue + `, found '+'`},
		{"hex number", `0x10`, 1, reasonTrailing},
		{"NaN", `NaN`, 0, reasonNaN},
		{"NaN in array", `[1,NaN]`, 3, reasonNaN},
		{"negative NaN", `-NaN`, 1, reasonDigit + `, found 'N'`},
		{"Infinity", `Infinity`, 0, reasonInfinity},
		{"negative Infinity", `-Infinity`, 0, reasonInfinity},
		{"Infinity in object", `{"a":-Infinity}`, 5, reasonInfinity},
		{"overflow", `1e400`, 0, reasonOverflow},
		{"negative overflow", `[-1e400]`, 1, reasonOverflow},
		{"overflow just past max", `1.7976931348623159e308`, 0, reasonOverflow},
		{"overflow by digits", "1" + strings.Repeat("0", 400), 0, reasonOverflow},
		{"overflow in object", `{"a":1e309}`, 5, reasonOverflow},

		// Duplicate names: the offset is the second occurrence's opening quote.
		{"duplicate", `{"a":1,"a":2}`, 7, reasonDuplicate},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, 7, reasonDuplicate},
		{"duplicate not adjacent", `{"b":1,"a":2,"b":3}`, 13, reasonDuplicate},
		{"duplicate thrice", `{"a":1,"a":2,"a":3}`, 7, reasonDuplicate},
		{"first repeat is reported", `{"b":1,"a":2,"b":3,"a":4}`, 13, reasonDuplicate},
		{"duplicate nested", `{"a":{"x":1,"x":2}}`, 12, reasonDuplicate},
		{"duplicate escaped names", `{"\n":1,"\u000a":2}`, 8, reasonDuplicate},
		{"duplicate empty names", `{"":1,"":2}`, 6, reasonDuplicate},
		{"duplicate supplementary", `{"\ud83d\ude00":1,"` + "\U0001F600" + `":2}`, 18, reasonDuplicate},

		// Surrogates: the offset is the backslash of the offending escape.
		{"lone high", `"\ud800"`, 1, reasonLoneHigh},
		{"high then text", `"\ud800x"`, 1, reasonLoneHigh},
		{"high then BMP escape", `"\ud800\u0041"`, 1, reasonLoneHigh},
		{"high then high", `"a\ud83d\ud83d\ude00"`, 2, reasonLoneHigh},
		{"high at end of input", `"\udbff`, 1, reasonLoneHigh},
		{"high then short escape", `"\ud800\n"`, 1, reasonLoneHigh},
		{"lone low", `"\udc00"`, 1, reasonLoneLow},
		{"reversed pair", `"\ude00\ud83d"`, 1, reasonLoneLow},
		{"lone low after text", `"ab\udfff"`, 3, reasonLoneLow},
		{"lone surrogate in name", `{"\ud800":1}`, 2, reasonLoneHigh},

		// Invalid UTF-8: the offset is the first byte of the bad sequence.
		{"invalid byte", "\"\xff\"", 1, reasonUTF8},
		{"truncated sequence", "\"a\xc3", 2, reasonUTF8},
		{"truncated sequence before quote", "\"a\xe2\x82\"", 2, reasonUTF8},
		{"bad continuation", "\"\xc3\x28\"", 1, reasonUTF8},
		{"overlong slash", "\"\xc0\xaf\"", 1, reasonUTF8},
		{"overlong NUL", "\"\xe0\x80\x80\"", 1, reasonUTF8},
		{"encoded surrogate", "\"\xed\xa0\x80\"", 1, reasonUTF8},
		{"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", 1, reasonUTF8},
		{"stray continuation", "\"ok\x80\"", 3, reasonUTF8},
		{"invalid UTF-8 in name", "{\"\xff\":1}", 2, reasonUTF8},
		{"invalid UTF-8 outside strings", "[1,\xff]", 3, reasonUTF8},
		{"invalid UTF-8 at start", "\xfe", 0, reasonUTF8},
		{"byte order mark", "\ufeff{}", 0, reasonValue + ", found U+FEFF"},

		// Strings.
		{"raw newline", "\"a\nb\"", 2, "unescaped control character U+000A in string"},
		{"raw NUL", "\"\x00\"", 1, "unescaped control character U+0000 in string"},
		{"raw tab", "\"\t\"", 1, "unescaped control character U+0009 in string"},
		{"unknown escape", `"\x41"`, 1, reasonEscape},
		{"capital U escape", `"\U0041"`, 1, reasonEscape},
		{"single quote escape", `"\'"`, 1, reasonEscape},
		{"bad hex", `"\u00g0"`, 1, reasonHexEscape},
		{"short hex", `"\u12"`, 1, reasonHexEscape},
		{"single-quoted string", `'a'`, 0, reasonValue + `, found '\''`},

		// Structure.
		{"trailing comma in array", `[1,]`, 3, reasonValue + `, found ']'`},
		{"trailing comma in object", `{"a":1,}`, 7, reasonName + `, found '}'`},
		{"leading comma", `{,}`, 1, reasonName + `, found ','`},
		{"unquoted name", `{a:1}`, 1, reasonName + `, found 'a'`},
		{"number name", `{1:1}`, 1, reasonName + `, found '1'`},
		{"missing colon", `{"a" 1}`, 5, reasonColon + `, found '1'`},
		{"double colon", `{"a"::1}`, 5, reasonValue + `, found ':'`},
		{"missing comma in object", `{"a":1 "b":2}`, 7, reasonObjectNext + `, found '"'`},
		{"missing comma in array", `[1 2]`, 3, reasonArrayNext + `, found '2'`},
		{"mismatched bracket", `[1}`, 2, reasonArrayNext + `, found '}'`},
		{"comment", `/* */ 1`, 0, reasonValue + `, found '/'`},
		{"misspelled literal", `trUe`, 2, reasonLiteral + ` (expected true), found 'U'`},
		{"capitalized literal", `True`, 0, reasonValue + `, found 'T'`},
		{"form feed is not whitespace", "\f1", 0, reasonValue + ", found byte 0x0c"},
		{"undefined", `[undefined]`, 1, reasonValue + `, found 'u'`},
		{"misspelled null", `[nil]`, 2, reasonLiteral + ` (expected null), found 'i'`},

		// Depth: the offset is the bracket that goes one level too deep.
		{"deep array", deepArray, MaxDepth, reasonDepth},
		{"deep object", deepObject, 5 * MaxDepth, reasonDepth},
	}
}

func TestTransformRefusals(t *testing.T) {
	for _, tc := range refusalCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Transform([]byte(tc.in))
			if err == nil {
				t.Fatalf("Transform(%q) = %q, want error", tc.in, got)
			}
			if got != nil {
				t.Errorf("Transform(%q) returned %q with its error; want nil", tc.in, got)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Transform(%q) error %v is %T, want *Error", tc.in, err, err)
			}
			want := &Error{Offset: tc.offset, Reason: tc.reason}
			if diff := cmp.Diff(want, e); diff != "" {
				t.Errorf("Transform(%q) error mismatch (-want +got):\n%s", tc.in, diff)
			}
			if !strings.Contains(err.Error(), "offset "+strconv.FormatInt(tc.offset, 10)+":") {
				t.Errorf("error message %q does not name offset %d", err, tc.offset)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Offset: 7, Reason: reasonDuplicate}, "canon: offset 7: duplicate object member name"},
		{&Error{Offset: -1, Reason: reasonNumberNaN}, "canon: NaN cannot be serialized as JSON"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
			t.Errorf("Error() mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestDepthReasonNamesLimit(t *testing.T) {
	if !strings.Contains(reasonDepth, strconv.Itoa(MaxDepth)) {
		t.Errorf("reason %q does not name MaxDepth %d", reasonDepth, MaxDepth)
	}
}

func TestAppend(t *testing.T) {
	dst := []byte("prefix:")
	got, err := Append(dst, []byte(` {"b":[2, 1],"a":"x"} `))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`prefix:{"a":"x","b":[2,1]}`, string(got)); diff != "" {
		t.Errorf("Append mismatch (-want +got):\n%s", diff)
	}
	// An object whose members are reordered sits after the prefix; the prefix is untouched.
	got, err = Append([]byte(`{"z":`), []byte(`{"y":1,"x":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"z":{"x":2,"y":1}`, string(got)); diff != "" {
		t.Errorf("Append mismatch (-want +got):\n%s", diff)
	}
	got, err = Append(dst, []byte(`{"a":1,"a":2}`))
	if err == nil {
		t.Fatalf("Append of a duplicate name succeeded: %q", got)
	}
	if diff := cmp.Diff("prefix:", string(got)); diff != "" {
		t.Errorf("Append on error must return dst unchanged (-want +got):\n%s", diff)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", `""`},
		{"plain", "hello, world", `"hello, world"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"other controls", "\x00\x01\x0b\x0e\x1f", `"\u0000\u0001\u000b\u000e\u001f"`},
		{"DEL and C1 raw", "\x7f\u0080\u009f", "\"\x7f\u0080\u009f\""},
		{"solidus raw", "</script>", `"</script>"`},
		{"html characters raw", "<>&", `"<>&"`},
		{"non-ASCII raw", "\u00e9\u20ac\U0001F600\u2028\uFEFF", "\"\u00e9\u20ac\U0001F600\u2028\uFEFF\""},
		{"replacement character is valid", "\uFFFD", "\"\uFFFD\""},
		{"no normalization", "A\u030a", "\"A\u030a\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendString([]byte("x"), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("x"+tc.want, string(got)); diff != "" {
				t.Errorf("AppendString(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
			// What AppendString writes, Transform keeps.
			if again, err := Transform(got[1:]); err != nil || !bytes.Equal(again, got[1:]) {
				t.Errorf("Transform(%q) = %q, %v; want it unchanged", got[1:], again, err)
			}
		})
	}
}

func TestAppendStringRefusals(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int64
	}{
		{"invalid byte", "\xff", 0},
		{"after text", "abc\xfe", 3},
		{"truncated", "ab\xe2\x82", 2},
		{"overlong", "\xc0\x80", 0},
		{"encoded surrogate", "x\xed\xbf\xbf", 1},
		{"after escape", "\n\"\x80", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendString(dst, tc.in)
			want := &Error{Offset: tc.offset, Reason: reasonUTF8}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("AppendString(%q) = %q, %v; want *Error", tc.in, got, err)
			}
			if diff := cmp.Diff(want, e); diff != "" {
				t.Errorf("AppendString(%q) error mismatch (-want +got):\n%s", tc.in, diff)
			}
			if string(got) != "keep" {
				t.Errorf("AppendString on error returned %q, want dst unchanged", got)
			}
		})
	}
}

var point1 = 0.1

func TestAppendNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.5, "0.5"},
		{1e21, "1e+21"},
		{math.Nextafter(1e21, 0), "999999999999999900000"},
		{math.Nextafter(1e21, math.Inf(1)), "1.0000000000000001e+21"},
		{1e-7, "1e-7"},
		{math.Nextafter(1e-7, 1), "1.0000000000000001e-7"},
		{math.Nextafter(1e-7, 0), "9.999999999999998e-8"},
		{1e-6, "0.000001"},
		{1.5e-7, "1.5e-7"},
		{123e-20, "1.23e-18"},
		{1 << 53, "9007199254740992"},
		{1<<53 - 1, "9007199254740991"},
		{1<<53 + 2, "9007199254740994"},
		{-(1<<53 + 2), "-9007199254740994"},
		{1 << 62, "4611686018427388000"},
		{1e20, "100000000000000000000"},
		{123456789012345680000, "123456789012345680000"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-math.SmallestNonzeroFloat64, "-5e-324"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"},
		{point1 + 0.2, "0.30000000000000004"}, // not constant-folded
		{100.25, "100.25"},
		{-0.001, "-0.001"},
	}
	for _, tc := range tests {
		got, err := AppendNumber([]byte("x"), tc.in)
		if err != nil {
			t.Errorf("AppendNumber(%v): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff("x"+tc.want, string(got)); diff != "" {
			t.Errorf("AppendNumber(%v) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Float64frombits(0xfff8000000000001)} {
		got, err := AppendNumber([]byte("x"), f)
		var e *Error
		if !errors.As(err, &e) || e.Offset != -1 || string(got) != "x" {
			t.Errorf("AppendNumber(%v) = %q, %v; want dst unchanged and *Error with Offset -1", f, got, err)
		}
	}
}

// TestCompareUTF16 checks the byte-level shortcut against a direct comparison of UTF-16
// code units, on strings drawn from the ranges where the orders differ.
func TestCompareUTF16(t *testing.T) {
	alphabet := []rune{'a', 'b', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xefff, 0xf000, 0xfb33, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		rs := make([]rune, r.IntN(4))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(rs)
	}
	sign := func(c int) int { return min(max(c, -1), 1) }
	for range 20000 {
		a, b := gen(), gen()
		want := 0
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		for i := 0; ; i++ {
			if i == len(ua) || i == len(ub) {
				want = sign(len(ua) - len(ub))
				break
			}
			if ua[i] != ub[i] {
				want = sign(int(ua[i]) - int(ub[i]))
				break
			}
		}
		if got := sign(compareUTF16([]byte(a), []byte(b))); got != want {
			t.Fatalf("compareUTF16(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
}

// TestConcurrent runs Transform from many goroutines, so that -race checks the buffer pool.
func TestConcurrent(t *testing.T) {
	docs := toolDocs(t)
	want := make([][]byte, len(docs))
	for i, d := range docs {
		var err error
		if want[i], err = Transform(d.json); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 50 {
				i := (g*7 + k) % len(docs)
				got, err := Transform(docs[i].json)
				if err != nil || !bytes.Equal(got, want[i]) {
					t.Errorf("%s: concurrent Transform differs: %v", docs[i].name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestTransformDoesNotAliasInput(t *testing.T) {
	in := []byte(`"abc"`)
	out, err := Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	in[1] = 'X'
	if string(out) != `"abc"` {
		t.Errorf("output changed with input: %q", out)
	}
	if !utf8.Valid(out) {
		t.Error("output is not UTF-8")
	}
}
