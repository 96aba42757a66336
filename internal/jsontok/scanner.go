package jsontok

// Flags relax the string rules a [Scanner] enforces. The zero value is I-JSON's
// (RFC 7493): every string is valid UTF-8 and every \u escape of a surrogate is half of
// a pair.
type Flags uint8

const (
	// AllowLoneSurrogates accepts a \u escape of an unpaired UTF-16 surrogate, which
	// RFC 8259's grammar allows (encoding/json.Valid accepts it) and I-JSON refuses.
	AllowLoneSurrogates Flags = 1 << iota
	// AllowInvalidUTF8 accepts string bytes that are not valid UTF-8. Only strings are
	// relaxed: outside them, non-ASCII bytes are never part of JSON's grammar.
	// [AppendQuote] writes each such byte as \ufffd, as encoding/json does.
	AllowInvalidUTF8
	// EscapeLineSeparators makes [AppendQuote] write U+2028 and U+2029 as \u2028 and
	// \u2029, as encoding/json does so that its output can be embedded in JavaScript.
	// Reading ignores it.
	EscapeLineSeparators
)

// DefaultMaxDepth is the nesting bound of a Scanner reset with maxDepth <= 0, and
// internal/canon's MaxDepth.
const DefaultMaxDepth = 1000

// Kind is the kind of a JSON value, named by its first byte.
type Kind byte

// Kinds. A value's first byte decides its kind; whether the rest of it is well formed is
// found out when it is read.
const (
	Invalid Kind = 0   // end of input, or a byte no value starts with
	Object  Kind = '{' // an object
	Array   Kind = '[' // an array
	String  Kind = '"' // a string
	Number  Kind = '0' // a number: '-' or a digit
	True    Kind = 't' // true
	False   Kind = 'f' // false
	Null    Kind = 'n' // null
)

var kindOf = func() (t [256]Kind) {
	t['{'], t['['], t['"'], t['t'], t['f'], t['n'] = Object, Array, String, True, False, Null
	t['-'] = Number
	for c := '0'; c <= '9'; c++ {
		t[c] = Number
	}
	return t
}()

// Token is one value read by a Scanner: its kind and its exact bytes, buf[Start:End]
// (a string's quotes included; an object or array from [Scanner.Skip] whole).
type Token struct {
	Kind       Kind
	Escaped    bool // a String holds at least one backslash escape
	Integer    bool // a Number has neither fraction nor exponent
	Start, End int
}

// Scanner reads one JSON text (RFC 8259) from a byte slice, strictly: recursive descent
// with the loops of the grammar written here once, and each caller deciding what to do
// with each value. It never reads past its input and never allocates except for an
// error. The zero Scanner is not ready: use [NewScanner] or [Scanner.Reset].
//
// A value is read by exactly one call: [Scanner.ReadString], [Scanner.RawString],
// [Scanner.ReadNumber], [Scanner.ReadLiteral], [Scanner.Object], [Scanner.Array],
// [Scanner.Skip] or [Scanner.RawValue]; each skips the white space before it. After the top-level value,
// [Scanner.End] checks that nothing but white space follows.
type Scanner struct {
	buf      []byte
	pos      int
	depth    int
	maxDepth int
	flags    Flags
}

// NewScanner returns a Scanner over b that refuses nesting deeper than maxDepth arrays
// and objects (DefaultMaxDepth if maxDepth <= 0) and applies flags to strings.
func NewScanner(b []byte, maxDepth int, flags Flags) Scanner {
	var s Scanner
	s.Reset(b, maxDepth, flags)
	return s
}

// Reset makes s a new Scanner over b, as [NewScanner] does.
func (s *Scanner) Reset(b []byte, maxDepth int, flags Flags) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	*s = Scanner{buf: b, maxDepth: maxDepth, flags: flags}
}

// Pos is the offset of the next byte the Scanner will read.
func (s *Scanner) Pos() int { return s.pos }

func (s *Scanner) skipSpace() {
	b, i := s.buf, s.pos
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	s.pos = i
}

// Peek skips white space and returns the kind of the value that starts there, Invalid at
// the end of input or before a byte no value starts with.
func (s *Scanner) Peek() Kind {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return Invalid
	}
	return kindOf[s.buf[s.pos]]
}

// End checks that only white space is left.
func (s *Scanner) End() error {
	s.skipSpace()
	if s.pos < len(s.buf) {
		if !validRuneAt(s.buf, s.pos) {
			return &Error{Offset: s.pos, Reason: ReasonUTF8}
		}
		return &Error{Offset: s.pos, Reason: ReasonTrailing}
	}
	return nil
}

// expect returns the error for a value of the wrong kind at s.pos.
func (s *Scanner) expect(reason string) error {
	if s.pos >= len(s.buf) {
		return &Error{Offset: len(s.buf), Reason: ReasonEOF}
	}
	return unexpected(s.buf, s.pos, reason)
}

// ReadString reads a string and checks its content: no raw control characters, only
// JSON's escapes, and the Scanner's UTF-8 and surrogate rules.
func (s *Scanner) ReadString() (Token, error) {
	s.skipSpace()
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		return Token{}, s.expect(ReasonString)
	}
	start := s.pos
	end, escaped, err := scanString(s.buf, start, s.flags)
	if err != nil {
		return Token{}, err
	}
	s.pos = end
	return Token{Kind: String, Escaped: escaped, Start: start, End: end}, nil
}

// RawString reads a string without looking at its content, only for the closing quote,
// and returns the content (between the quotes). It is for long strings whose content the
// caller checks by other means — decoding it strictly ([AppendUnquote], [Equal]) or
// comparing it with bytes it trusts — so that they are not read twice. Content that no
// such check has accepted must not be passed on as JSON.
func (s *Scanner) RawString() ([]byte, error) {
	s.skipSpace()
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		return nil, s.expect(ReasonString)
	}
	end, err := rawStringEnd(s.buf, s.pos)
	if err != nil {
		return nil, err
	}
	content := s.buf[s.pos+1 : end-1]
	s.pos = end
	return content, nil
}

// ReadNumber reads a number as RFC 8259 spells it: no leading zeros, digits after '.'
// and 'e', no NaN or Infinity. Its magnitude is not looked at.
func (s *Scanner) ReadNumber() (Token, error) {
	s.skipSpace()
	b := s.buf
	start := s.pos
	i := start
	if i >= len(b) {
		return Token{}, &Error{Offset: len(b), Reason: ReasonEOF}
	}
	if b[i] == '-' {
		i++
		if i >= len(b) {
			return Token{}, &Error{Offset: i, Reason: ReasonEOF}
		}
	}
	switch c := b[i]; {
	case c == '0':
		i++
		if i < len(b) && isDigit(b[i]) {
			return Token{}, &Error{Offset: i, Reason: ReasonLeadingZero}
		}
	case isDigit(c):
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	case c == 'I' && hasPrefix(b[i:], "Infinity"):
		return Token{}, &Error{Offset: start, Reason: ReasonInfinity}
	case i == start:
		return Token{}, s.valueError()
	default:
		return Token{}, unexpected(b, i, ReasonDigit)
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return Token{}, unexpected(b, i, ReasonDigit)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return Token{}, unexpected(b, i, ReasonDigit)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	s.pos = i
	return Token{Kind: Number, Integer: integer, Start: start, End: i}, nil
}

func isDigit(c byte) bool { return c-'0' < 10 }

func hasPrefix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[:len(s)]) == s
}

// ReadLiteral reads true, false or null.
func (s *Scanner) ReadLiteral() (Token, error) {
	s.skipSpace()
	b := s.buf
	start := s.pos
	var lit string
	var k Kind
	switch {
	case start >= len(b):
		return Token{}, &Error{Offset: len(b), Reason: ReasonEOF}
	case b[start] == 't':
		lit, k = "true", True
	case b[start] == 'f':
		lit, k = "false", False
	case b[start] == 'n':
		lit, k = "null", Null
	default:
		return Token{}, s.valueError()
	}
	for j := 0; j < len(lit); j++ {
		i := start + j
		if i >= len(b) {
			return Token{}, &Error{Offset: len(b), Reason: ReasonEOF}
		}
		if b[i] != lit[j] {
			return Token{}, unexpected(b, i, ReasonLiteral+" (expected "+lit+")")
		}
	}
	s.pos = start + len(lit)
	return Token{Kind: k, Start: start, End: s.pos}, nil
}

// valueError is the error for a value expected at s.pos where none starts.
func (s *Scanner) valueError() error {
	b, i := s.buf, s.pos
	switch {
	case i >= len(b):
		return &Error{Offset: len(b), Reason: ReasonEOF}
	case hasPrefix(b[i:], "NaN"):
		return &Error{Offset: i, Reason: ReasonNaN}
	case hasPrefix(b[i:], "Infinity"):
		return &Error{Offset: i, Reason: ReasonInfinity}
	}
	return unexpected(b, i, ReasonValue)
}

// Object reads an object. For each member, in order, it reads and checks the name and
// the colon and calls fn with the name's token, positioned at the value; fn must read the
// value (with exactly one of the Scanner's reading methods) or return an error, which
// Object returns as it is. Names are not compared: whether a repeated name is an error is
// the caller's rule.
func (s *Scanner) Object(fn func(name Token) error) error {
	more, err := s.open('{', ReasonObject)
	for b := s.buf; more && err == nil; more, err = s.next('}', ReasonObjectNext) {
		if s.pos >= len(b) || b[s.pos] != '"' {
			return s.expect(ReasonName)
		}
		start := s.pos
		end, escaped, err := scanString(b, start, s.flags)
		if err != nil {
			return err
		}
		s.pos = end
		s.skipSpace()
		if s.pos >= len(b) || b[s.pos] != ':' {
			return s.expect(ReasonColon)
		}
		s.pos++
		s.skipSpace()
		if err := fn(Token{Kind: String, Escaped: escaped, Start: start, End: end}); err != nil {
			return err
		}
	}
	return err
}

// Array reads an array, calling fn positioned at each element in order; fn must read
// the element or return an error, which Array returns as it is.
func (s *Scanner) Array(fn func() error) error {
	more, err := s.open('[', ReasonArray)
	for ; more && err == nil; more, err = s.next(']', ReasonArrayNext) {
		if err := fn(); err != nil {
			return err
		}
	}
	return err
}

// open reads the bracket c that opens an object or array and the white space after it,
// and reports whether a member or element follows (false: the empty value was read).
func (s *Scanner) open(c byte, reason string) (more bool, err error) {
	s.skipSpace()
	b := s.buf
	if s.pos >= len(b) || b[s.pos] != c {
		return false, s.expect(reason)
	}
	s.depth++
	if s.depth > s.maxDepth {
		return false, &Error{Offset: s.pos, Reason: DepthReason(s.maxDepth)}
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(b) && b[s.pos] == c+2 { // '{'+2 == '}', '['+2 == ']'
		s.pos++
		s.depth--
		return false, nil
	}
	return true, nil
}

// next reads what follows a member or element: a comma (more follows) or the closing
// bracket, with the white space around them.
func (s *Scanner) next(closer byte, reason string) (more bool, err error) {
	s.skipSpace()
	b := s.buf
	switch {
	case s.pos >= len(b):
		return false, &Error{Offset: len(b), Reason: ReasonEOF}
	case b[s.pos] == ',':
		s.pos++
		s.skipSpace()
		return true, nil
	case b[s.pos] == closer:
		s.pos++
		s.depth--
		return false, nil
	}
	return false, unexpected(b, s.pos, reason)
}

// Skip reads one value of any kind, checking all of it, and returns its token: its
// exact bytes, so that a caller can pass them on or hash them as they were sent.
func (s *Scanner) Skip() (Token, error) {
	s.skipSpace()
	start := s.pos
	var err error
	var k Kind
	if start < len(s.buf) {
		k = kindOf[s.buf[start]]
	}
	switch k {
	case String:
		return s.ReadString()
	case Number:
		return s.ReadNumber()
	case True, False, Null:
		return s.ReadLiteral()
	case Object:
		err = s.Object(s.skipMember)
	case Array:
		err = s.Array(s.skipElement)
	default:
		return Token{}, s.valueError()
	}
	if err != nil {
		return Token{}, err
	}
	return Token{Kind: k, Start: start, End: s.pos}, nil
}

func (s *Scanner) skipMember(Token) error {
	_, err := s.Skip()
	return err
}

func (s *Scanner) skipElement() error {
	_, err := s.Skip()
	return err
}

// Valid reports whether b is exactly one JSON value, with optional white space around
// it, that a Scanner with these bounds accepts.
func Valid(b []byte, maxDepth int, flags Flags) bool {
	s := NewScanner(b, maxDepth, flags)
	_, err := s.Skip()
	return err == nil && s.End() == nil
}

// RawValue returns the span of the next value found by matching quotes and brackets only,
// checking nothing else: a number or literal runs to the next ',', '}', ']' or white
// space (or the end of input). It is RawString for whole values: for a caller that
// checks the bytes by other means before it uses them (extmcp keeps a listed tool only if
// canon accepted its exact bytes), so that they are not read twice. It refuses only an
// unterminated string or an unclosed bracket, and its nesting is not bounded because it
// does not recurse.
func (s *Scanner) RawValue() (Token, error) {
	s.skipSpace()
	b := s.buf
	start := s.pos
	if start >= len(b) {
		return Token{}, &Error{Offset: len(b), Reason: ReasonEOF}
	}
	k := kindOf[b[start]]
	i := start
	switch k {
	case String:
		end, err := rawStringEnd(b, i)
		if err != nil {
			return Token{}, err
		}
		i = end
	case Object, Array:
		depth := 0
	scan:
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := rawStringEnd(b, i)
				if err != nil {
					return Token{}, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					i++
					break scan
				}
			}
			i++
		}
		if depth != 0 {
			return Token{}, &Error{Offset: len(b), Reason: ReasonEOF}
		}
	default:
	scalar:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				break scalar
			}
			i++
		}
	}
	s.pos = i
	return Token{Kind: k, Start: start, End: i}, nil
}
