package lockerclient

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting in skipped values, so a hostile body cannot exhaust the stack.
const maxDepth = 64

// scanner is a strict RFC 8259 reader over one complete body. It never allocates for what it
// skips and hands out raw string spans, so the page decoder can take payloads straight from
// the response bytes.
type scanner struct {
	b []byte
	i int
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.off, e.msg)
}

func (s *scanner) fail(msg string) error { return &syntaxError{off: s.i, msg: msg} }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail("expected " + strconv.QuoteRune(rune(c)))
	}
	s.i++
	return nil
}

// end checks that nothing but white space follows the top-level value.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.fail("data after the top-level value")
	}
	return nil
}

// literal consumes one of null, true, false.
func (s *scanner) literal(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// stringSpan consumes a string and returns its raw content (between the quotes, escapes not
// decoded). It finds the closing quote with IndexByte and does not look at the content:
// callers decode the span strictly (decodeString, matchText, base64) or call checkString.
// Whether a span holds escapes is left to them, so big payload spans are not scanned twice.
func (s *scanner) stringSpan() (span []byte, err error) {
	if s.peek() != '"' {
		return nil, s.fail("expected a string")
	}
	start := s.i + 1
	j := start
	for {
		q := bytes.IndexByte(s.b[j:], '"')
		if q < 0 {
			s.i = len(s.b)
			return nil, s.fail("unterminated string")
		}
		k := j + q
		// A quote preceded by an odd number of backslashes is escaped.
		n := 0
		for m := k - 1; m >= start && s.b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			s.i = k + 1
			return s.b[start:k], nil
		}
		j = k + 1
	}
}

// hasControl reports whether p holds a byte below 0x20, sixteen bytes at a time.
func hasControl(p []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	const ctl = lo * 0x20
	i := 0
	for ; i+16 <= len(p); i += 16 {
		x := binary.LittleEndian.Uint64(p[i:])
		y := binary.LittleEndian.Uint64(p[i+8:])
		if ((x-ctl)&^x|(y-ctl)&^y)&hi != 0 {
			return true
		}
	}
	for ; i < len(p); i++ {
		if p[i] < 0x20 {
			return true
		}
	}
	return false
}

var errBadString = errors.New("invalid string")

// printableASCII is the fast check for the short keys and hashes of a page.
func printableASCII(p []byte) bool {
	for _, c := range p {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// decodeString appends the decoded content of a raw span to dst. It refuses raw control
// characters, unknown escapes and invalid UTF-8; a lone surrogate escape decodes to U+FFFD
// (it cannot be represented in UTF-8 and never equals verified text).
func decodeString(dst, span []byte) ([]byte, error) {
	if hasControl(span) {
		return dst, errBadString
	}
	for len(span) > 0 {
		bs := bytes.IndexByte(span, '\\')
		if bs < 0 {
			if !utf8.Valid(span) {
				return dst, errBadString
			}
			return append(dst, span...), nil
		}
		if !utf8.Valid(span[:bs]) {
			return dst, errBadString
		}
		dst = append(dst, span[:bs]...)
		r, n, ok := unescape(span[bs:])
		if !ok {
			return dst, errBadString
		}
		if r < 0 {
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
		span = span[bs+n:]
	}
	return dst, nil
}

// unescape decodes the escape at the start of p (p[0] == '\\'), joining a surrogate pair.
// It returns the rune and the bytes consumed; a lone surrogate is returned as -1.
func unescape(p []byte) (rune, int, bool) {
	if len(p) < 2 {
		return 0, 0, false
	}
	switch p[1] {
	case '"':
		return '"', 2, true
	case '\\':
		return '\\', 2, true
	case '/':
		return '/', 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r, ok := hex4(p[2:])
		if !ok {
			return 0, 0, false
		}
		if utf16.IsSurrogate(r) {
			if r < 0xDC00 && len(p) >= 12 && p[6] == '\\' && p[7] == 'u' {
				if r2, ok := hex4(p[8:]); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
					return utf16.DecodeRune(r, r2), 12, true
				}
			}
			return -1, 6, true
		}
		return r, 6, true
	}
	return 0, 0, false
}

func hex4(p []byte) (rune, bool) {
	if len(p) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// checkString validates a span as strict JSON string content without keeping the result.
func checkString(span []byte) error {
	if !bytes.ContainsRune(span, '\\') {
		if hasControl(span) || !utf8.Valid(span) {
			return errBadString
		}
		return nil
	}
	var scratch [64]byte
	_, err := decodeString(scratch[:0], span)
	return err
}

// number consumes a JSON number and returns its raw text.
func (s *scanner) number() ([]byte, error) {
	s.ws()
	start := s.i
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, s.fail("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			s.i = i
			return nil, s.fail("invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			s.i = i
			return nil, s.fail("invalid number")
		}
	}
	s.i = i
	return b[start:i], nil
}

// intValue is the result of reading a value that should be an integer.
type intValue struct {
	n     int64
	isInt bool // a JSON integer literal that fits int64
	kind  byte // first byte of the value: '"', '{', '[', 'n', 't', 'f', or '0' for numbers
}

// integer consumes any value and reports whether it is an integer literal. Fractions and
// exponents are not integers here, even when integral: the contract's integers are integers.
func (s *scanner) integer() (intValue, error) {
	c := s.peek()
	if c == '-' || ('0' <= c && c <= '9') {
		raw, err := s.number()
		if err != nil {
			return intValue{}, err
		}
		if bytes.ContainsAny(raw, ".eE") {
			return intValue{kind: '0'}, nil
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return intValue{n: n, isInt: err == nil, kind: '0'}, nil
	}
	if err := s.skipValue(0); err != nil {
		return intValue{}, err
	}
	return intValue{kind: c}, nil
}

// skipValue consumes one value of any kind, validating it.
func (s *scanner) skipValue(depth int) error {
	if depth > maxDepth {
		return s.fail("nesting too deep")
	}
	switch c := s.peek(); c {
	case '"':
		span, err := s.stringSpan()
		if err != nil {
			return err
		}
		if checkString(span) != nil {
			return s.fail("invalid string content")
		}
		return nil
	case '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if err := s.skipValue(depth + 1); err != nil { // the key
				return err
			}
			if s.b[s.i-1] != '"' {
				return s.fail("object key is not a string")
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return s.fail("expected ',' or '}'")
			}
		}
	case '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.fail("expected ',' or ']'")
			}
		}
	case 'n':
		if s.literal("null") {
			return nil
		}
	case 't':
		if s.literal("true") {
			return nil
		}
	case 'f':
		if s.literal("false") {
			return nil
		}
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			_, err := s.number()
			return err
		}
	}
	return s.fail("expected a value")
}

// key reads an object key into scratch (decoded) and the following colon.
func (s *scanner) key(scratch []byte) ([]byte, error) {
	span, err := s.stringSpan()
	if err != nil {
		return nil, err
	}
	k := span
	if bytes.IndexByte(span, '\\') >= 0 {
		if k, err = decodeString(scratch[:0], span); err != nil {
			return nil, s.fail("invalid key")
		}
	} else if !printableASCII(span) && checkString(span) != nil {
		return nil, s.fail("invalid key")
	}
	if err := s.expect(':'); err != nil {
		return nil, err
	}
	return k, nil
}

// members iterates over an object: fn is called with each key, positioned at its value, and
// must consume the value.
func (s *scanner) members(fn func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	var scratch [64]byte
	for {
		k, err := s.key(scratch[:])
		if err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// rawValue consumes a value and returns its exact bytes.
func (s *scanner) rawValue() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skipValue(0); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// stringValue consumes a value; ok is false when it is not a string.
func (s *scanner) stringValue() (string, bool, error) {
	if s.peek() != '"' {
		return "", false, s.skipValue(0)
	}
	span, err := s.stringSpan()
	if err != nil {
		return "", false, err
	}
	v, err := decodeString(nil, span)
	if err != nil {
		return "", false, s.fail("invalid string content")
	}
	return string(v), true, nil
}
