package jsontok

import "unicode/utf8"

const lowerHex = "0123456789abcdef"

// AppendQuote appends s to dst as a JSON string: a quote, then s with '"' and '\\'
// escaped as \" and \\, the control characters U+0008, U+0009, U+000A, U+000C and U+000D
// as \b, \t, \n, \f and \r, the other control characters below U+0020 as \u00xx with
// lowercase hex digits, every other code point as its raw UTF-8 bytes (but see
// EscapeLineSeparators), then a quote. That is RFC 8785's form (ECMAScript's
// JSON.stringify), and with EscapeLineSeparators|AllowInvalidUTF8 it is encoding/json's
// with HTML escaping off.
//
// If s is not valid UTF-8 and flags lack AllowInvalidUTF8, AppendQuote returns dst
// unchanged and an [*Error] whose Offset is the byte offset in s of the first invalid
// sequence.
func AppendQuote[T ~string | ~[]byte](dst []byte, s T, flags Flags) ([]byte, error) {
	n0 := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		i = skipPlain(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			dst = appendEscaped(dst, c)
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if flags&AllowInvalidUTF8 == 0 {
				return dst[:n0], &Error{Offset: i, Reason: ReasonUTF8}
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case (r == '\u2028' || r == '\u2029') && flags&EscapeLineSeparators != 0:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// le64 is the eight bytes of s at i as a little-endian word (the compiler makes it one
// load).
func le64[T ~string | ~[]byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// decodeRune is utf8.DecodeRune for either kind of text.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	var b [utf8.UTFMax]byte
	return utf8.DecodeRune(b[:copy(b[:], s)])
}

// appendEscaped appends the escape for c, which is '"', '\\' or below 0x20.
func appendEscaped(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
}
