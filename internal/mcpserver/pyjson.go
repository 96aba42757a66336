package mcpserver

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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

// maxNesting bounds argument nesting (Python's json gives up near its recursion limit).
const maxNesting = 500

type parser struct {
	b []byte
	i int
}

// parseJSON parses one complete JSON document strictly (RFC 8259). Raw bytes that are not
// valid UTF-8 become U+FFFD.
func parseJSON(b []byte) (*value, error) {
	p := &parser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, p.errorf("data after the value")
	}
	return v, nil
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.i, fmt.Sprintf(format, a...))
}

func (p *parser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value(depth int) (*value, error) {
	if depth > maxNesting {
		return nil, p.errorf("nesting deeper than %d", maxNesting)
	}
	p.ws()
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		v := &value{kind: kObject}
		index := map[string]int{}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return v, nil
		}
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.errorf("expected a string key")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.errorf("expected ':'")
			}
			p.i++
			val, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			enc := string(appendPyString(nil, k))
			if at, dup := index[enc]; dup {
				v.members[at].val = val
			} else {
				index[enc] = len(v.members)
				v.members = append(v.members, member{key: k, enc: enc, val: val})
			}
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				return v, nil
			}
			return nil, p.errorf("expected ',' or '}'")
		}
	case c == '[':
		p.i++
		v := &value{kind: kArray, items: []*value{}}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return v, nil
		}
		for {
			item, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.items = append(v.items, item)
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == ']' {
				p.i++
				return v, nil
			}
			return nil, p.errorf("expected ',' or ']'")
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &value{kind: kString, str: s}, nil
	case c == 't' && strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+4)]), "true"):
		p.i += 4
		return &value{kind: kBool, b: true}, nil
	case c == 'f' && strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+5)]), "false"):
		p.i += 5
		return &value{kind: kBool}, nil
	case c == 'n' && strings.HasPrefix(string(p.b[p.i:min(len(p.b), p.i+4)]), "null"):
		p.i += 4
		return &value{kind: kNull}, nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("expected a value")
}

func (p *parser) number() (*value, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	return &value{kind: kNumber, num: string(p.b[start:p.i])}, nil
}

// str reads a string token, keeping lone surrogates.
func (p *parser) str() ([]rune, error) {
	p.i++ // opening quote
	var out []rune
	for {
		if p.i >= len(p.b) {
			return nil, p.errorf("unterminated string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if out == nil {
				out = []rune{}
			}
			return out, nil
		case c < 0x20:
			return nil, p.errorf("control character in a string")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return nil, p.errorf("unterminated escape")
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, rune(e))
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil, p.errorf("invalid \\u escape")
				}
				if 0xD800 <= r && r < 0xDC00 && p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if r2, ok := p.hex4(); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
						out = append(out, utf16.DecodeRune(r, r2))
						continue
					}
					p.i = save
				}
				out = append(out, r) // BMP character or lone surrogate
			default:
				return nil, p.errorf("invalid escape")
			}
		default:
			r, n := utf8.DecodeRune(p.b[p.i:])
			out = append(out, r) // invalid bytes decode as U+FFFD
			p.i += n
		}
	}
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
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

// appendPyString writes s as json.dumps does with ensure_ascii: printable ASCII as is, the
// short escapes, everything else as lowercase \uXXXX (surrogate pairs above the BMP).
func appendPyString(dst []byte, s []rune) []byte {
	dst = append(dst, '"')
	u := func(r rune) {
		dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	for _, r := range s {
		switch {
		case r == '"':
			dst = append(dst, '\\', '"')
		case r == '\\':
			dst = append(dst, '\\', '\\')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
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
