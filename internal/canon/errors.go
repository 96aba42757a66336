package canon

import (
	"fmt"
	"strconv"
)

// Error is the error returned for every refusal by [Transform], [Append], [AppendString]
// and [AppendNumber]. It says where the input stopped being acceptable and why.
type Error struct {
	// Offset is the zero-based byte offset, in the input being canonicalized, of the first
	// byte that could not be accepted: for example the second "0" of "00", the quote that
	// opens a duplicate member name, the backslash of a lone-surrogate escape, the first
	// byte of an invalid UTF-8 sequence, the bracket that nests one level deeper than
	// MaxDepth, or len(input) when the input ends too early. A number that overflows a
	// double, NaN and Infinity are reported at their first byte (the minus sign, if any).
	// Offset is -1 when the refusal is about a whole value rather than a position, as for
	// [AppendNumber].
	Offset int64
	// Reason says what is wrong in a short phrase without trailing punctuation, for
	// example "duplicate object member name". Its wording is not part of the API.
	Reason string
}

// Error returns "canon: offset N: reason", or "canon: reason" when Offset is negative.
func (e *Error) Error() string {
	if e.Offset < 0 {
		return "canon: " + e.Reason
	}
	return "canon: offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Reason
}

// Reasons, kept as constants so that tests and callers compare them exactly.
const (
	reasonEOF          = "unexpected end of input"
	reasonUTF8         = "invalid UTF-8"
	reasonEscape       = "invalid escape sequence"
	reasonHexEscape    = `invalid \u escape: expected 4 hexadecimal digits`
	reasonLoneHigh     = `lone high surrogate in \u escape`
	reasonLoneLow      = `lone low surrogate in \u escape`
	reasonDuplicate    = "duplicate object member name"
	reasonNaN          = "NaN is not a JSON number"
	reasonInfinity     = "Infinity is not a JSON number"
	reasonOverflow     = "number overflows an IEEE-754 double"
	reasonLeadingZero  = "leading zero in number"
	reasonDigit        = "expected digit in number"
	reasonTrailing     = "trailing data after JSON value"
	reasonDepth        = "nesting deeper than 1000 arrays and objects"
	reasonValue        = "expected JSON value"
	reasonName         = "expected string for object member name"
	reasonColon        = "expected ':' after object member name"
	reasonObjectNext   = "expected ',' or '}' after object member"
	reasonArrayNext    = "expected ',' or ']' after array element"
	reasonLiteral      = "invalid literal"
	reasonNumberNaN    = "NaN cannot be serialized as JSON"
	reasonNumberInfPos = "+Inf cannot be serialized as JSON"
	reasonNumberInfNeg = "-Inf cannot be serialized as JSON"
)

// found names the byte at in[off] for an error reason: a quoted ASCII character, a
// code point for valid non-ASCII UTF-8, or a hex byte.
func found(in []byte, off int) string {
	c := in[off]
	switch {
	case c >= 0x20 && c < 0x7f:
		return fmt.Sprintf("found %q", rune(c))
	case c < 0x80:
		return fmt.Sprintf("found byte 0x%02x", c)
	default:
		return fmt.Sprintf("found U+%04X", decodeRuneOK(in[off:]))
	}
}

// controlReason is the reason for a raw control character inside a string.
func controlReason(c byte) string {
	return fmt.Sprintf("unescaped control character U+%04X in string", c)
}
