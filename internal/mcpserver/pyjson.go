package mcpserver

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// Tool arguments are re-encoded byte for byte as the Python peer's json.dumps defaults
// encode them (ensure_ascii, ", " and ": " separators, key order as given), because the
// bytes are what the chain hashes: the same handoff must give the same head through either
// lockermcp. Go maps would lose key order, so arguments are parsed into this ordered tree.

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is one parsed JSON value. Strings keep lone surrogates (as their code points), as
// Python strings do.
type value struct {
	kind    kind
	b       bool
	num     string // number literal as sent
	str     []rune // string content
	items   []*value
	members []member // object members in first-seen order; a repeated key keeps its first
	// position and takes the last value, as Python's dict does
}

type member struct {
	key []rune
	enc string // the key as Python encodes it (also its identity)
	val *value
}

// typeName names a value's type the way the tool errors describe it.
func (v *value) typeName() string {
	switch v.kind {
	case kNull:
		return "null"
	case kBool:
		return "boolean"
	case kNumber:
		return "number"
	case kString:
		return "string"
	case kArray:
		return "list"
	}
	return "object"
}

// maxNesting bounds argument nesting, in arrays and objects (Python's json gives up near
// its recursion limit).
const maxNesting = 501

// parser builds the ordered tree from what a jsontok.Scanner reads.
type parser struct {
	b []byte
	s jsontok.Scanner
}

// parseJSON parses one complete JSON document strictly (RFC 8259). As Python's json.loads
// of a str does, it keeps lone surrogate escapes (as their code points) and reads raw
// bytes that are not valid UTF-8 as U+FFFD.
func parseJSON(b []byte) (*value, error) {
	p := &parser{b: b, s: jsontok.NewScanner(b, maxNesting, jsontok.AllowLoneSurrogates|jsontok.AllowInvalidUTF8)}
	v, err := p.value()
	if err == nil {
		err = p.s.End()
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (p *parser) value() (*value, error) {
	switch p.s.Peek() {
	case jsontok.Object:
		v := &value{kind: kObject}
		index := map[string]int{}
		err := p.s.Object(func(name jsontok.Token) error {
			k := p.runes(name)
			val, err := p.value()
			if err != nil {
				return err
			}
			enc := string(appendPyString(nil, k))
			if at, dup := index[enc]; dup {
				v.members[at].val = val
			} else {
				index[enc] = len(v.members)
				v.members = append(v.members, member{key: k, enc: enc, val: val})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return v, nil
	case jsontok.Array:
		v := &value{kind: kArray, items: []*value{}}
		err := p.s.Array(func() error {
			item, err := p.value()
			v.items = append(v.items, item)
			return err
		})
		if err != nil {
			return nil, err
		}
		return v, nil
	case jsontok.String:
		t, err := p.s.ReadString()
		if err != nil {
			return nil, err
		}
		return &value{kind: kString, str: p.runes(t)}, nil
	case jsontok.Number:
		t, err := p.s.ReadNumber()
		if err != nil {
			return nil, err
		}
		return &value{kind: kNumber, num: string(p.b[t.Start:t.End])}, nil
	}
	t, err := p.s.ReadLiteral()
	if err != nil {
		return nil, err
	}
	switch t.Kind {
	case jsontok.True:
		return &value{kind: kBool, b: true}, nil
	case jsontok.False:
		return &value{kind: kBool}, nil
	}
	return &value{kind: kNull}, nil
}

// runes decodes a string the scanner has checked, as Python does: escapes joined into
// surrogate pairs where they pair up and kept as lone surrogates where they do not, and
// each byte of invalid UTF-8 as U+FFFD.
func (p *parser) runes(t jsontok.Token) []rune {
	s := p.b[t.Start+1 : t.End-1]
	out := []rune{}
	for len(s) > 0 {
		if s[0] == '\\' {
			r, n, _ := jsontok.UnescapeAt(s)
			out = append(out, r)
			s = s[n:]
			continue
		}
		r, n := utf8.DecodeRune(s)
		out = append(out, r)
		s = s[n:]
	}
	return out
}

// pyDumps encodes v as Python's json.dumps(v) with default arguments.
func pyDumps(v *value) ([]byte, error) { return appendPy(nil, v) }

func appendPy(dst []byte, v *value) ([]byte, error) {
	var err error
	switch v.kind {
	case kNull:
		return append(dst, "null"...), nil
	case kBool:
		if v.b {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case kNumber:
		return appendPyNumber(dst, v.num)
	case kString:
		return appendPyString(dst, v.str), nil
	case kArray:
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			if dst, err = appendPy(dst, it); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	dst = append(dst, '{')
	for i, m := range v.members {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, m.enc...)
		dst = append(dst, ": "...)
		if dst, err = appendPy(dst, m.val); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// maxIntDigits is CPython's default int/str conversion limit; json.loads refuses longer
// integers, so the peer could not have received one.
const maxIntDigits = 4300

var errIntTooLong = errors.New("an integer has more than 4300 digits")

// appendPyNumber encodes a JSON number literal as Python would after json.loads: integers
// stay exact (with "-0" becoming 0), anything with a fraction or exponent becomes a float
// and is written with repr (shortest round-trip digits, exponent form below 1e-4 and from
// 1e16, "Infinity" on overflow).
func appendPyNumber(dst []byte, lit string) ([]byte, error) {
	if !strings.ContainsAny(lit, ".eE") {
		digits := strings.TrimPrefix(lit, "-")
		if len(digits) > maxIntDigits {
			return nil, errIntTooLong
		}
		if digits == "0" {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %q: %w", lit, err)
	}
	return appendPyFloat(dst, f), nil
}

// appendPyFloat writes repr(f) as CPython does.
func appendPyFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	}
	if math.Signbit(f) {
		dst = append(dst, '-')
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX, shortest digits
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1 // value = 0.DIGITS × 10^decpt
	if decpt <= -4 || decpt > 16 {
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		} else {
			dst = append(dst, '+')
		}
		if x < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(x), 10)
	}
	switch {
	case decpt <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -decpt)...)
		return append(dst, digits...)
	case decpt >= len(digits):
		dst = append(dst, digits...)
		dst = append(dst, strings.Repeat("0", decpt-len(digits))...)
		return append(dst, ".0"...)
	}
	dst = append(dst, digits[:decpt]...)
	dst = append(dst, '.')
	return append(dst, digits[decpt:]...)
}

const hexDigits = "0123456789abcdef"

// pyShortEscapes are the characters json.dumps writes as a backslash and a letter, by the
// letter.
var pyShortEscapes = [...]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'}

// appendPyString writes s as json.dumps does with ensure_ascii: printable ASCII as is, the
// short escapes, everything else as lowercase \uXXXX (surrogate pairs above the BMP).
func appendPyString(dst []byte, s []rune) []byte {
	dst = append(dst, '"')
	u := func(r rune) {
		dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	for _, r := range s {
		switch {
		case 0 <= r && int(r) < len(pyShortEscapes) && pyShortEscapes[r] != 0:
			dst = append(dst, '\\', pyShortEscapes[r])
		case 0x20 <= r && r <= 0x7e:
			dst = append(dst, byte(r))
		case r < 0x10000:
			u(r)
		default:
			r1, r2 := utf16.EncodeRune(r)
			u(r1)
			u(r2)
		}
	}
	return append(dst, '"')
}

var errLoneSurrogate = errors.New("the string holds a lone surrogate, which has no UTF-8 encoding")

// utf8Bytes encodes a string payload as Python's str.encode() does: UTF-8, refusing lone
// surrogates.
func utf8Bytes(s []rune) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if 0xD800 <= r && r <= 0xDFFF {
			return nil, errLoneSurrogate
		}
		out = utf8.AppendRune(out, r)
	}
	return out, nil
}
