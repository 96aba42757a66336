package jsontok

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error is every refusal of a [Scanner] and of [AppendUnquote]: where the text stopped
// being acceptable, and why.
type Error struct {
	// Offset is the zero-based byte offset of the first byte that could not be accepted:
	// the second "0" of "00", the backslash of a bad or lone-surrogate escape, the first
	// byte of an invalid UTF-8 sequence, the bracket one level deeper than the bound, or
	// the length of the input when it ends too early. For AppendUnquote it is an offset
	// in the content it was given.
	Offset int
	// Reason is one of the Reason constants, or one of them followed by ", found …"
	// naming the byte at Offset, or the depth or control-character reasons.
	Reason string
}

// Error returns "invalid JSON at offset N: reason".
func (e *Error) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Reasons. They are the phrases internal/canon documents and its tests pin, so their
// wording changes only with canon's.
const (
	ReasonEOF         = "unexpected end of input"
	ReasonUTF8        = "invalid UTF-8"
	ReasonEscape      = "invalid escape sequence"
	ReasonHexEscape   = `invalid \u escape: expected 4 hexadecimal digits`
	ReasonLoneHigh    = `lone high surrogate in \u escape`
	ReasonLoneLow     = `lone low surrogate in \u escape`
	ReasonNaN         = "NaN is not a JSON number"
	ReasonInfinity    = "Infinity is not a JSON number"
	ReasonLeadingZero = "leading zero in number"
	ReasonDigit       = "expected digit in number"
	ReasonTrailing    = "trailing data after JSON value"
	ReasonValue       = "expected JSON value"
	ReasonName        = "expected string for object member name"
	ReasonColon       = "expected ':' after object member name"
	ReasonObjectNext  = "expected ',' or '}' after object member"
	ReasonArrayNext   = "expected ',' or ']' after array element"
	ReasonLiteral     = "invalid literal"
	ReasonObject      = "expected object"
	ReasonArray       = "expected array"
	ReasonString      = "expected string"
	ReasonNumber      = "expected number"
)

// DepthReason is the reason for nesting deeper than maxDepth arrays and objects.
func DepthReason(maxDepth int) string {
	return "nesting deeper than " + strconv.Itoa(maxDepth) + " arrays and objects"
}

// ControlReason is the reason for the raw control character c inside a string.
func ControlReason(c byte) string {
	return fmt.Sprintf("unescaped control character U+%04X in string", c)
}

// unexpected reports that b[off] is not what the grammar allows there: the end of input,
// invalid UTF-8, or expected followed by the byte found.
func unexpected(b []byte, off int, expected string) *Error {
	if off >= len(b) {
		return &Error{Offset: len(b), Reason: ReasonEOF}
	}
	if b[off] >= utf8.RuneSelf && !validRuneAt(b, off) {
		return &Error{Offset: off, Reason: ReasonUTF8}
	}
	return &Error{Offset: off, Reason: expected + ", " + found(b, off)}
}

func validRuneAt(b []byte, off int) bool {
	r, size := utf8.DecodeRune(b[off:])
	return !(r == utf8.RuneError && size == 1)
}

// found names the byte at b[off] for a reason: a quoted ASCII character, a code point for
// valid non-ASCII UTF-8, or a hex byte.
func found(b []byte, off int) string {
	c := b[off]
	switch {
	case c >= 0x20 && c < 0x7f:
		return fmt.Sprintf("found %q", rune(c))
	case c < 0x80:
		return fmt.Sprintf("found byte 0x%02x", c)
	default:
		r, _ := utf8.DecodeRune(b[off:])
		return fmt.Sprintf("found U+%04X", r)
	}
}
