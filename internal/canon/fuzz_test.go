package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// stricterReasons are the refusals of input that encoding/json accepts: the rules by which
// canon is deliberately stricter than RFC 8259 parsers (see the package documentation).
var stricterReasons = map[string]bool{
	reasonUTF8:      true, // encoding/json replaces invalid UTF-8 with U+FFFD
	reasonLoneHigh:  true, // … and lone surrogates too
	reasonLoneLow:   true,
	reasonDuplicate: true, // encoding/json keeps the last value
	reasonOverflow:  true, // json.Valid checks syntax only
	reasonDepth:     true, // encoding/json allows 10000 levels
}

func FuzzTransform(f *testing.F) {
	for _, d := range append(toolDocs(f), rfcDocs(f)...) {
		f.Add(d.json)
	}
	for _, tc := range transformCases() {
		f.Add([]byte(tc.in))
	}
	for _, tc := range refusalCases() {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Transform(in)
		valid := json.Valid(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, want *Error", err, err)
			}
			if e.Offset < 0 || e.Offset > int64(len(in)) {
				t.Fatalf("error offset %d outside input of %d bytes", e.Offset, len(in))
			}
			if valid && !stricterReasons[e.Reason] {
				t.Fatalf("encoding/json accepts %q but Transform refuses it for a reason outside the documented stricter rules: %v", in, err)
			}
			if out != nil {
				t.Fatalf("output %q returned with error", out)
			}
			return
		}
		if !valid {
			t.Fatalf("Transform accepts %q, which encoding/json refuses", in)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("output %q is not valid UTF-8 JSON", out)
		}
		again, err := Transform(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: Transform(%q) = %q, %v", out, again, err)
		}
		// The canonical form means what the input meant.
		var vin, vout any
		if err := json.Unmarshal(in, &vin); err != nil {
			t.Fatalf("encoding/json cannot decode accepted input %q: %v", in, err)
		}
		if err := json.Unmarshal(out, &vout); err != nil {
			t.Fatalf("encoding/json cannot decode output %q: %v", out, err)
		}
		// reflect.DeepEqual first: cmp.Diff is very slow on deeply nested slices, and
		// both treat -0 and 0 as equal, as the canonical form does.
		if !reflect.DeepEqual(vin, vout) {
			t.Fatalf("output changes the value of %q (-in +out):\n%s", in, cmp.Diff(vin, vout))
		}
		// Uniqueness: another spelling of the same value has the same canonical form.
		remarshaled, err := json.Marshal(vin)
		if err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		if got, err := Transform(remarshaled); err != nil || !bytes.Equal(got, out) {
			t.Fatalf("encoding/json's spelling %q canonicalizes to %q, %v; want %q", remarshaled, got, err, out)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, in, "\t", " "); err == nil {
			if got, err := Transform(indented.Bytes()); err != nil || !bytes.Equal(got, out) {
				t.Fatalf("indented input canonicalizes to %q, %v; want %q", got, err, out)
			}
		}
		// Append agrees with Transform, and leaves the prefix alone.
		if got, err := Append([]byte("{]"), in); err != nil || string(got) != "{]"+string(out) {
			t.Fatalf("Append = %q, %v; want prefix then %q", got, err, out)
		}
	})
}

func FuzzAppendNumber(f *testing.F) {
	a := readArchive(f, "testdata/rfc8785.txtar")
	for _, line := range bytes.Split(a.files["numbers"], []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) == 0 || fields[0][0] == '#' {
			continue
		}
		bits, err := strconv.ParseUint(string(fields[0]), 16, 64)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bits)
	}
	for _, x := range []float64{1e21, 1e-7, 1e-6, math.Nextafter(1e21, 0), 1 << 53, 0.1, 100} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		out, err := AppendNumber(nil, x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			var e *Error
			if !errors.As(err, &e) || e.Offset != -1 || len(out) != 0 {
				t.Fatalf("AppendNumber(%v) = %q, %v; want *Error with Offset -1", x, out, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendNumber(%v): %v", x, err)
		}
		y, err := strconv.ParseFloat(string(out), 64)
		if err != nil {
			t.Fatalf("AppendNumber(%v) = %q, which does not parse: %v", x, out, err)
		}
		if x == 0 {
			if string(out) != "0" {
				t.Fatalf("AppendNumber(%v) = %q, want 0", x, out)
			}
		} else if math.Float64bits(y) != bits {
			t.Fatalf("AppendNumber(%016x) = %q, which reads back as %016x", bits, out, math.Float64bits(y))
		}
		// Shortest: no fewer digits than strconv's shortest form.
		if want := len(strconv.FormatFloat(math.Abs(x), 'e', -1, 64)); significantDigits(out) > want {
			t.Fatalf("AppendNumber(%v) = %q is longer than the shortest digits", x, out)
		}
		if got, err := Transform(out); err != nil || !bytes.Equal(got, out) {
			t.Fatalf("Transform(%q) = %q, %v; want it unchanged", out, got, err)
		}
	})
}

// significantDigits counts the digits of a number's mantissa without leading or trailing
// zeros.
func significantDigits(num []byte) int {
	if i := bytes.IndexByte(num, 'e'); i >= 0 {
		num = num[:i]
	}
	num = bytes.TrimLeft(num, "-0.")
	num = bytes.ReplaceAll(num, []byte("."), nil)
	num = bytes.TrimRight(num, "0")
	return len(num)
}

func FuzzAppendString(f *testing.F) {
	for _, tc := range []string{"", "plain", "\"\\/\b\f\n\r\t\x00\x1f\x7f", "\u2028\U0001F600", "\xff", "a\xed\xa0\x80"} {
		f.Add(tc)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := AppendString(nil, s)
		if !utf8.ValidString(s) {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("AppendString(%q) = %q, %v; want *Error", s, out, err)
			}
			first := 0
			for first < len(s) {
				r, size := utf8.DecodeRuneInString(s[first:])
				if r == utf8.RuneError && size == 1 {
					break
				}
				first += size
			}
			if e.Offset != int64(first) {
				t.Fatalf("AppendString(%q) error at %d, first invalid byte is at %d", s, e.Offset, first)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendString(%q): %v", s, err)
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("AppendString(%q) = %q, which decodes to %q, %v", s, out, back, err)
		}
		if got, err := Transform(out); err != nil || !bytes.Equal(got, out) {
			t.Fatalf("Transform(%q) = %q, %v; want it unchanged", out, got, err)
		}
	})
}
