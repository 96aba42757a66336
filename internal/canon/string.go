package canon

import (
	"bytes"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// safeASCII[c] is true for the ASCII bytes that a JCS string carries unchanged: everything
// from 0x20 to 0x7f except '"' and '\\'. Bytes of 0x80 and above are handled as UTF-8.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const lowerHex = "0123456789abcdef"

// needsAttention reports whether any of the eight bytes packed in x is not safeASCII:
// a byte below 0x20, '"', '\\', or a byte of 0x80 or above. It uses the exact SWAR tests
// "some byte is less than n" ((x - n·0x01…01) & ^x & 0x80…80, exact for n <= 0x80) and
// "some byte is zero" (the same with n = 1) on x XOR the byte sought.
func needsAttention(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - 0x20*ones) & ^x
	quote := x ^ '"'*ones
	quote = (quote - ones) & ^quote
	backslash := x ^ '\\'*ones
	backslash = (backslash - ones) & ^backslash
	return (less|quote|backslash|x)&highs != 0
}

// AppendString appends s to dst as a JCS string literal (RFC 8785 section 3.2.2.2, which
// is ECMAScript's JSON.stringify for well-formed strings): a quote, then s with '"' and
// '\\' escaped as \" and \\, the control characters U+0008, U+0009, U+000A, U+000C and
// U+000D as \b, \t, \n, \f and \r, the other control characters below U+0020 as \u00xx
// with lowercase hex digits, every other code point as its raw UTF-8 bytes, then a quote.
// No Unicode normalization is applied.
//
// If s is not valid UTF-8, AppendString returns dst unchanged and an [*Error] whose
// Offset is the byte offset in s of the first invalid sequence. It returns no other error.
func AppendString(dst []byte, s string) ([]byte, error) {
	n0 := len(dst)
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && !needsAttention(le64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscaped(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst[:n0], &Error{Offset: int64(i), Reason: reasonUTF8}
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// le64 is the eight bytes of s at i as a little-endian word (the compiler makes it one load).
func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// appendEscaped appends the JCS escape for c, which is '"', '\\' or below 0x20.
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

// appendString appends the JCS form of the string token t, which the tokenizer has
// checked: valid UTF-8, no raw control characters, no lone surrogates. Without escapes its
// bytes are already that form; with them, each escape is decoded and written again as
// JCS writes the code point ('"', '\\' and control characters escaped, everything else
// raw).
func (p *parser) appendString(t jsontok.Token) {
	raw := p.in[t.Start:t.End]
	if !t.Escaped {
		p.out = append(p.out, raw...)
		return
	}
	out := append(p.out, '"')
	s := raw[1 : len(raw)-1]
	for {
		bs := bytes.IndexByte(s, '\\')
		if bs < 0 {
			out = append(out, s...)
			break
		}
		out = append(out, s[:bs]...)
		r, n, _ := jsontok.UnescapeAt(s[bs:])
		if r < 0x20 || r == '"' || r == '\\' {
			out = appendEscaped(out, byte(r))
		} else {
			out = utf8.AppendRune(out, r)
		}
		s = s[bs+n:]
	}
	p.out = append(out, '"')
}
