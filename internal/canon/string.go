package canon

import (
	"errors"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

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
	out, err := jsontok.AppendQuote(dst, s, 0)
	if err != nil {
		var e *jsontok.Error
		errors.As(err, &e)
		return dst, &Error{Offset: int64(e.Offset), Reason: reasonUTF8}
	}
	return out, nil
}

// appendString appends the JCS form of the string token t, which the tokenizer has
// checked: valid UTF-8, no raw control characters, no lone surrogates. Without escapes its
// bytes are already that form. With them, it is decoded into p.str and written again as
// AppendString writes it; p.str then holds the decoded string.
func (p *parser) appendString(t jsontok.Token) {
	if !t.Escaped {
		p.out = append(p.out, p.in[t.Start:t.End]...)
		return
	}
	p.appendEscapedString(t)
}

func (p *parser) appendEscapedString(t jsontok.Token) {
	p.str, _ = jsontok.AppendUnquote(p.str[:0], p.in[t.Start+1:t.End-1], 0)
	p.out, _ = jsontok.AppendQuote(p.out, p.str, 0)
}
