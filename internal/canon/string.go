package canon

import (
	"encoding/binary"
	"unicode/utf8"
)

// safeASCII[c] is true for the ASCII bytes that a JCS string carries unchanged: everything
// from 0x20 to 0x7f except '"' and '\\'. Bytes of 0x80 and above are handled as UTF-8.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hexDigit maps an ASCII hexadecimal digit to its value and every other byte to 0xff.
var hexDigit = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
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

// decodeRuneOK returns the code point that starts b, which the caller knows is valid UTF-8.
func decodeRuneOK(b []byte) rune {
	r, _ := utf8.DecodeRune(b)
	return r
}

// parseString reads the JSON string literal whose opening quote is at p.pos, appends its
// JCS form to p.out and moves p.pos past the closing quote. It reports whether the JCS
// form contains a backslash, that is, whether the appended bytes between the quotes
// differ from the decoded string.
func (p *parser) parseString() (escaped bool, err error) {
	in := p.in
	out := append(p.out, '"')
	i := p.pos + 1
	for {
		// Copy the longest run of bytes that pass through unchanged in one append.
		start := i
		for i < len(in) {
			// Skip eight plain ASCII bytes at a time while there are no quotes,
			// backslashes, control characters or non-ASCII bytes among them.
			for i+8 <= len(in) && !needsAttention(binary.LittleEndian.Uint64(in[i:])) {
				i += 8
			}
			if i >= len(in) {
				break
			}
			c := in[i]
			if safeASCII[c] {
				i++
				continue
			}
			if c < utf8.RuneSelf {
				break
			}
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				p.out = out
				return false, p.errAt(i, reasonUTF8)
			}
			i += size
		}
		out = append(out, in[start:i]...)
		if i >= len(in) {
			p.out = out
			return false, p.errAt(len(in), reasonEOF)
		}
		switch c := in[i]; c {
		case '"':
			p.out = append(out, '"')
			p.pos = i + 1
			return escaped, nil
		case '\\':
			if i+1 >= len(in) {
				p.out = out
				return false, p.errAt(len(in), reasonEOF)
			}
			switch e := in[i+1]; e {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				// The short forms are their own JCS form.
				out = append(out, '\\', e)
				escaped = true
				i += 2
			case '/':
				out = append(out, '/')
				i += 2
			case 'u':
				r, n, err := p.unicodeEscape(i)
				if err != nil {
					p.out = out
					return false, err
				}
				i += n
				if r < 0x20 || r == '"' || r == '\\' {
					out = appendEscaped(out, byte(r))
					escaped = true
				} else {
					out = utf8.AppendRune(out, r)
				}
			default:
				p.out = out
				return false, p.errAt(i, reasonEscape)
			}
		default: // a control character below 0x20
			p.out = out
			return false, p.errAt(i, controlReason(c))
		}
	}
}

// hex4 decodes the four hexadecimal digits at in[i:i+4]. ok is false if any is missing
// or not a hex digit; eof is true if they were all hex digits up to the end of input.
func hex4(in []byte, i int) (v rune, ok, eof bool) {
	for k := range 4 {
		if i+k >= len(in) {
			return 0, false, true
		}
		d := hexDigit[in[i+k]]
		if d == 0xff {
			return 0, false, false
		}
		v = v<<4 | rune(d)
	}
	return v, true, false
}

// unicodeEscape decodes the \u escape whose backslash is at in[i], combining a surrogate
// pair into one code point. It returns the code point and the number of input bytes used.
// Lone surrogates are refused, not replaced: U+FFFD would make distinct inputs share a
// digest.
func (p *parser) unicodeEscape(i int) (rune, int, error) {
	in := p.in
	r, ok, eof := hex4(in, i+2)
	if !ok {
		if eof {
			return 0, 0, p.errAt(len(in), reasonEOF)
		}
		return 0, 0, p.errAt(i, reasonHexEscape)
	}
	switch {
	case r >= 0xdc00 && r <= 0xdfff:
		return 0, 0, p.errAt(i, reasonLoneLow)
	case r >= 0xd800 && r <= 0xdbff:
		if i+7 < len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
			lo, ok, _ := hex4(in, i+8)
			if ok && lo >= 0xdc00 && lo <= 0xdfff {
				return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12, nil
			}
		}
		return 0, 0, p.errAt(i, reasonLoneHigh)
	}
	return r, 6, nil
}

// unescape appends to dst the decoded form of s, a JCS string body (between the quotes)
// as parseString writes it, whose only escapes are \" \\ \b \t \n \f \r and \u00xx.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			c = '\b'
		case 't':
			c = '\t'
		case 'n':
			c = '\n'
		case 'f':
			c = '\f'
		case 'r':
			c = '\r'
		case 'u':
			c = hexDigit[s[i+3]]<<4 | hexDigit[s[i+4]]
			i += 4
		default: // '"' or '\\'
			c = s[i]
		}
		dst = append(dst, c)
	}
	return dst
}
