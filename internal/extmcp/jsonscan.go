package extmcp

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// The processor edits JSON the gateway sends without decoding it into Go values: a
// decode/encode round trip would reorder members, reformat numbers and drop fields, and
// the contract is that everything but the dropped tools stays byte-identical. These
// helpers walk JSON text that encoding/json.Valid has already accepted; they never read
// past the end of their input even if that promise is broken (they report errMalformed).

var errMalformed = errors.New("malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that opens at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	i++
	for i < len(b) {
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return 0, errMalformed
}

// skipValue returns the index just past the value that starts at b[i] (no leading space).
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errMalformed
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errMalformed
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, nil
			}
			i++
		}
		return i, nil
	}
}

// span is b[start:end] of some input.
type span struct{ start, end int }

// member is one object member: the raw name token (quotes included) and the raw value.
type member struct {
	name, value span
}

// members calls fn for each member of the object at b[i] ('{'), in order, and returns the
// index just past the object. fn returning false stops the walk (and members returns 0).
func members(b []byte, i int, fn func(m member) bool) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, errMalformed
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return 0, errMalformed
		}
		ne, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		m := member{name: span{i, ne}}
		i = skipSpace(b, ne)
		if i >= len(b) || b[i] != ':' {
			return 0, errMalformed
		}
		i = skipSpace(b, i+1)
		ve, err := skipValue(b, i)
		if err != nil {
			return 0, err
		}
		m.value = span{i, ve}
		if !fn(m) {
			return 0, nil
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return 0, errMalformed
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, errMalformed
		}
	}
	return 0, errMalformed
}

// elements calls fn for each element of the array at b[i] ('['), in order, and returns
// the index just past the array.
func elements(b []byte, i int, fn func(e span) error) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return 0, errMalformed
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for i < len(b) {
		e, err := skipValue(b, i)
		if err != nil {
			return 0, err
		}
		if err := fn(span{i, e}); err != nil {
			return 0, err
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return 0, errMalformed
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, errMalformed
		}
	}
	return 0, errMalformed
}

// nameIs reports whether the raw string token tok (quotes included) decodes to want.
func nameIs(tok []byte, want string) bool {
	if len(tok) == len(want)+2 && string(tok[1:len(tok)-1]) == want {
		return true
	}
	for _, c := range tok {
		if c == '\\' {
			s, err := decodeString(tok)
			return err == nil && s == want
		}
	}
	return false
}

// decodeString decodes the raw string token tok (quotes included) strictly: invalid
// UTF-8 and unpaired surrogate escapes are errors, never replaced with U+FFFD, so that
// two different byte strings can never decode to the same name.
func decodeString(tok []byte) (string, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", errMalformed
	}
	in := tok[1 : len(tok)-1]
	plain := true
	for _, c := range in {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		if !utf8.Valid(in) {
			return "", errors.New("invalid UTF-8 in string")
		}
		return string(in), nil
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c < 0x20:
			return "", errMalformed
		case c != '\\':
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n <= 1 {
				return "", errors.New("invalid UTF-8 in string")
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		if i+1 >= len(in) {
			return "", errMalformed
		}
		switch in[i+1] {
		case '"', '\\', '/':
			out = append(out, in[i+1])
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
			r, ok := hex4(in, i+2)
			if !ok {
				return "", errMalformed
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
					return "", errors.New("lone surrogate escape in string")
				}
				lo, ok := hex4(in, i+2)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return "", errors.New("lone surrogate escape in string")
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", errMalformed
		}
		i += 2
	}
	return string(out), nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
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

// maxDepth bounds nesting in validValue, as canon.MaxDepth bounds it in canonicalization.
const maxDepth = 1000

// validValue checks, strictly (RFC 8259 plus valid UTF-8), the JSON value that starts at
// b[i] and returns the index just past it. It is the validator for the parts of a message
// the processor passes through without canonicalizing them.
func validValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errMalformed
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, errMalformed
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, errMalformed
				}
				if i, err = validString(b, i); err != nil {
					return 0, err
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return 0, errMalformed
				}
				i = skipSpace(b, i+1)
			}
			if i, err = validValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, errMalformed
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closer:
				return i + 1, nil
			default:
				return 0, errMalformed
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	default:
		return validNumber(b, i)
	}
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errMalformed
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func validNumber(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, errMalformed
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, errMalformed
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, errMalformed
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

// validString checks the string token at b[i] ('"'): no raw control characters, only
// JSON escapes, valid UTF-8. Lone surrogate escapes are allowed here, as JSON allows them;
// wherever a string is decoded (names), decodeString refuses them.
func validString(b []byte, i int) (int, error) {
	start := i + 1
	i++
	ascii := true
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:i]) {
				return 0, errMalformed
			}
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return 0, errMalformed
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return 0, errMalformed
				}
				i += 6
			default:
				return 0, errMalformed
			}
		case c < 0x20:
			return 0, errMalformed
		default:
			if c >= 0x80 {
				ascii = false
			}
			i++
		}
	}
	return 0, errMalformed
}
