package jsontok

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// safeASCII[c] is true for the ASCII bytes a string carries without a second look:
// everything from 0x20 to 0x7f except '"' and '\\'.
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

const ones, highs = 0x0101010101010101, 0x8080808080808080

// attention returns a mask whose lowest set bit is the high bit of the first of the eight
// bytes packed in x (little-endian) that is not safeASCII: a byte below 0x20, '"', '\\',
// or a byte of 0x80 or above; zero if there is none. It uses the SWAR tests "some byte is
// less than n" ((x - n·0x01…01) & ^x & 0x80…80) and "some byte is zero" (the same with
// n = 1) on x XOR the byte sought. Borrows can set bits above a flagged byte, never below
// it, so the lowest set bit is exact.
func attention(x uint64) uint64 {
	less := (x - 0x20*ones) & ^x
	quote := x ^ '"'*ones
	quote = (quote - ones) & ^quote
	backslash := x ^ '\\'*ones
	backslash = (backslash - ones) & ^backslash
	return (less | quote | backslash | x) & highs
}

// skipPlain returns the offset of the first byte at or after i that is not safeASCII,
// or len(s): eight bytes at a time while eight remain, jumping to the flagged byte.
func skipPlain[T ~string | ~[]byte](s T, i int) int {
	for i+8 <= len(s) {
		if m := attention(le64(s, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(s) && safeASCII[s[i]] {
		i++
	}
	return i
}

// needsAttention reports whether any of the eight bytes packed in x is not safeASCII.
func needsAttention(x uint64) bool { return attention(x) != 0 }

// HasControl reports whether p holds a byte below 0x20 (which a JSON string may not hold
// raw), sixteen bytes at a time.
func HasControl(p []byte) bool {
	const ctl = ones * 0x20
	i := 0
	for ; i+16 <= len(p); i += 16 {
		x := binary.LittleEndian.Uint64(p[i:])
		y := binary.LittleEndian.Uint64(p[i+8:])
		if ((x-ctl)&^x|(y-ctl)&^y)&highs != 0 {
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

// scanString checks the string whose opening quote is at b[i] and returns the offset just
// past its closing quote and whether it holds a backslash escape.
func scanString(b []byte, i int, flags Flags) (end int, escaped bool, err *Error) {
	i++
	for {
		// Most strings end within eight bytes: test those here, and call skipPlain
		// (which is too big to inline) only for the rest.
		if i+8 <= len(b) {
			if m := attention(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
			} else {
				i = skipPlain(b, i+8)
			}
		} else {
			i = skipPlain(b, i)
		}
		if i >= len(b) {
			return 0, false, &Error{Offset: len(b), Reason: ReasonEOF}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := checkEscape(b, i, flags)
			if err != nil {
				return 0, false, err
			}
			i += n
		case c < 0x20:
			return 0, false, &Error{Offset: i, Reason: ControlReason(c)}
		case flags&AllowInvalidUTF8 != 0:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, &Error{Offset: i, Reason: ReasonUTF8}
			}
			i += size
		}
	}
}

// checkEscape checks the escape whose backslash is at b[i] and returns its length.
func checkEscape(b []byte, i int, flags Flags) (int, *Error) {
	if i+1 >= len(b) {
		return 0, &Error{Offset: len(b), Reason: ReasonEOF}
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		return 0, &Error{Offset: i, Reason: ReasonEscape}
	}
	r, ok, eof := hex4(b, i+2)
	if !ok {
		if eof {
			return 0, &Error{Offset: len(b), Reason: ReasonEOF}
		}
		return 0, &Error{Offset: i, Reason: ReasonHexEscape}
	}
	switch {
	case r >= 0xdc00 && r <= 0xdfff:
		if flags&AllowLoneSurrogates == 0 {
			return 0, &Error{Offset: i, Reason: ReasonLoneLow}
		}
	case r >= 0xd800 && r <= 0xdbff:
		if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			lo, ok, _ := hex4(b, i+8)
			if ok && lo >= 0xdc00 && lo <= 0xdfff {
				return 12, nil
			}
		}
		if flags&AllowLoneSurrogates == 0 {
			return 0, &Error{Offset: i, Reason: ReasonLoneHigh}
		}
	}
	return 6, nil
}

// hex4 decodes the four hexadecimal digits at b[i:i+4]. ok is false if any is missing or
// not a hex digit; eof is true if they were all hex digits up to the end of input.
func hex4(b []byte, i int) (v rune, ok, eof bool) {
	for k := range 4 {
		if i+k >= len(b) {
			return 0, false, true
		}
		d := hexDigit[b[i+k]]
		if d == 0xff {
			return 0, false, false
		}
		v = v<<4 | rune(d)
	}
	return v, true, false
}

// rawStringEnd finds the closing quote of the string whose opening quote is at b[i]
// without looking at the content. The first bytes are searched eight at a time for a
// quote or backslash (most strings are short); after that IndexByte finds each quote and
// the backslashes before it are counted.
func rawStringEnd(b []byte, i int) (int, *Error) {
	start := i + 1
	j := start
	for k := 0; k < 4 && j+8 <= len(b); k++ {
		x := binary.LittleEndian.Uint64(b[j:])
		quote := x ^ '"'*ones
		backslash := x ^ '\\'*ones
		m := ((quote-ones)&^quote | (backslash-ones)&^backslash) & highs
		if m == 0 {
			j += 8
			continue
		}
		j += bits.TrailingZeros64(m) >> 3
		if b[j] == '"' {
			return j + 1, nil
		}
		j += 2 // a backslash and the byte it escapes
		k = -1 // keep scanning eight at a time
		if j > len(b) {
			return 0, &Error{Offset: len(b), Reason: ReasonEOF}
		}
	}
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return 0, &Error{Offset: len(b), Reason: ReasonEOF}
		}
		k := j + q
		n := 0
		for m := k - 1; m >= start && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1, nil
		}
		j = k + 1
	}
}

// UnescapeAt decodes the escape at the start of p (p[0] == '\\') and returns the code
// point and the number of bytes it spans. A \u escape of a high surrogate followed at
// once by one of a low surrogate is one code point spanning 12 bytes; an unpaired
// surrogate is returned as itself (U+D800–U+DFFF), for the caller to refuse, replace or
// keep. ok is false if p does not start with a valid escape.
func UnescapeAt(p []byte) (r rune, n int, ok bool) {
	if len(p) < 2 {
		return 0, 0, false
	}
	switch p[1] {
	case '"', '\\', '/':
		return rune(p[1]), 2, true
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
		r, ok, _ := hex4(p, 2)
		if !ok {
			return 0, 0, false
		}
		if r >= 0xd800 && r < 0xdc00 && len(p) >= 12 && p[6] == '\\' && p[7] == 'u' {
			if lo, ok, _ := hex4(p, 8); ok && lo >= 0xdc00 && lo <= 0xdfff {
				return utf16.DecodeRune(r, lo), 12, true
			}
		}
		return r, 6, true
	}
	return 0, 0, false
}

// AppendUnquote appends to dst the decoded content of a string, the bytes between its
// quotes. It refuses what a [Scanner] with the same flags refuses: raw control
// characters, unknown or malformed escapes, invalid UTF-8 (unless AllowInvalidUTF8, when
// such bytes are copied as they are) and escapes of unpaired surrogates (unless
// AllowLoneSurrogates, when each decodes to U+FFFD: UTF-8 cannot hold it, so it can never
// equal valid text). On error it returns dst unchanged (its spare capacity may have been
// written) and an [*Error] whose Offset is in content.
func AppendUnquote(dst, content []byte, flags Flags) ([]byte, error) {
	n0 := len(dst)
	for i := 0; len(content) > 0; {
		bs := bytes.IndexByte(content, '\\')
		run := content
		if bs >= 0 {
			run = content[:bs]
		}
		if HasControl(run) || flags&AllowInvalidUTF8 == 0 && !utf8.Valid(run) {
			return dst[:n0], runError(run, i, flags)
		}
		dst = append(dst, run...)
		if bs < 0 {
			break
		}
		r, n, ok := UnescapeAt(content[bs:])
		if !ok {
			return dst[:n0], &Error{Offset: i + bs, Reason: ReasonEscape}
		}
		if utf16.IsSurrogate(r) {
			if flags&AllowLoneSurrogates == 0 {
				reason := ReasonLoneHigh
				if r >= 0xdc00 {
					reason = ReasonLoneLow
				}
				return dst[:n0], &Error{Offset: i + bs, Reason: reason}
			}
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
		content = content[bs+n:]
		i += bs + n
	}
	return dst, nil
}

// Unquote is [AppendUnquote] returning a string, with one allocation.
func Unquote(content []byte, flags Flags) (string, error) {
	if bytes.IndexByte(content, '\\') < 0 {
		if HasControl(content) || flags&AllowInvalidUTF8 == 0 && !utf8.Valid(content) {
			return "", runError(content, 0, flags)
		}
		return string(content), nil
	}
	b, err := AppendUnquote(nil, content, flags)
	return string(b), err
}

// runError names the first control character or invalid UTF-8 sequence in run, which
// starts at offset base.
func runError(run []byte, base int, flags Flags) *Error {
	for i := 0; i < len(run); {
		c := run[i]
		if c < 0x20 {
			return &Error{Offset: base + i, Reason: ControlReason(c)}
		}
		if c < utf8.RuneSelf || flags&AllowInvalidUTF8 != 0 {
			i++
			continue
		}
		r, size := utf8.DecodeRune(run[i:])
		if r == utf8.RuneError && size == 1 {
			return &Error{Offset: base + i, Reason: ReasonUTF8}
		}
		i += size
	}
	return &Error{Offset: base, Reason: ReasonUTF8}
}

// Equal reports whether content, the bytes between a string's quotes, decodes strictly
// (as [AppendUnquote] with no flags does) to exactly want, without allocating. want must
// be valid UTF-8: raw runs of content are compared with it byte for byte.
func Equal[T ~string | ~[]byte](content []byte, want T) bool {
	if string(content) == string(want) {
		// Equal bytes decode to want only if they hold no escape or control character.
		return bytes.IndexByte(content, '\\') < 0 && !HasControl(content)
	}
	for {
		bs := bytes.IndexByte(content, '\\')
		run := content
		if bs >= 0 {
			run = content[:bs]
		}
		if len(run) > len(want) || string(run) != string(want[:len(run)]) || HasControl(run) {
			return false
		}
		want = want[len(run):]
		if bs < 0 {
			return len(want) == 0
		}
		r, n, ok := UnescapeAt(content[bs:])
		if !ok || utf16.IsSurrogate(r) {
			return false
		}
		var enc [utf8.UTFMax]byte
		m := utf8.EncodeRune(enc[:], r)
		if m > len(want) || string(enc[:m]) != string(want[:m]) {
			return false
		}
		want = want[m:]
		content = content[bs+n:]
	}
}
