package canon

import (
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
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

// Reasons, kept as constants so that tests and callers compare them exactly: first the
// rules JCS adds to JSON's, then those of JSON text, which the tokenizer
// (internal/jsontok) reports in canon's words.
const (
	reasonDuplicate    = "duplicate object member name"
	reasonOverflow     = "number overflows an IEEE-754 double"
	reasonDepth        = "nesting deeper than 1000 arrays and objects" // jsontok.DepthReason(MaxDepth)
	reasonNumberNaN    = "NaN cannot be serialized as JSON"
	reasonNumberInfPos = "+Inf cannot be serialized as JSON"
	reasonNumberInfNeg = "-Inf cannot be serialized as JSON"
)

const (
	reasonEOF         = jsontok.ReasonEOF
	reasonUTF8        = jsontok.ReasonUTF8
	reasonEscape      = jsontok.ReasonEscape
	reasonHexEscape   = jsontok.ReasonHexEscape
	reasonLoneHigh    = jsontok.ReasonLoneHigh
	reasonLoneLow     = jsontok.ReasonLoneLow
	reasonNaN         = jsontok.ReasonNaN
	reasonInfinity    = jsontok.ReasonInfinity
	reasonLeadingZero = jsontok.ReasonLeadingZero
	reasonDigit       = jsontok.ReasonDigit
	reasonTrailing    = jsontok.ReasonTrailing
	reasonValue       = jsontok.ReasonValue
	reasonName        = jsontok.ReasonName
	reasonColon       = jsontok.ReasonColon
	reasonObjectNext  = jsontok.ReasonObjectNext
	reasonArrayNext   = jsontok.ReasonArrayNext
	reasonLiteral     = jsontok.ReasonLiteral
)
