package canon

import (
	"slices"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that [Transform] and [Append]
// accept: a value inside MaxDepth open brackets is fine, one more bracket is refused. The
// limit bounds the parser's recursion, so hostile input cannot exhaust the stack.
const MaxDepth = 1000

// Transform parses in as one JSON text (RFC 8259: exactly one value, with optional
// whitespace — space, tab, line feed, carriage return — around tokens) and returns its
// RFC 8785 canonical form: no whitespace, object members sorted by name compared as
// UTF-16 code units, strings as [AppendString] writes them after their escapes are
// decoded, numbers read as IEEE-754 doubles (rounded correctly) and written as
// [AppendNumber] does, and the literals true, false and null.
//
// Input that JCS cannot canonicalize without guessing is refused rather than repaired;
// see the package documentation for the list. Every refusal is an [*Error] naming the
// byte offset in in; Transform returns no other kind of error. The result is a new
// slice that does not alias in.
//
// Transform is safe for concurrent use.
func Transform(in []byte) ([]byte, error) {
	p := getParser(in)
	defer putParser(p)
	p.out = p.out[:0]
	if err := p.run(); err != nil {
		return nil, err
	}
	return append([]byte(nil), p.out...), nil
}

// Append is [Transform] that appends the canonical form of in to dst instead of allocating
// a result. On error it returns dst unchanged (its spare capacity may have been written)
// and the same [*Error] Transform would. dst and in must not overlap.
func Append(dst, in []byte) ([]byte, error) {
	p := getParser(in)
	defer putParser(p)
	pooled := p.out
	p.out = dst
	err := p.run()
	out := p.out
	p.out = pooled
	if err != nil {
		return dst, err
	}
	return out, nil
}

// member records one object member while its object is being parsed. Offsets, not slices,
// because p.out and p.keys may be reallocated as they grow.
type member struct {
	start, end int // `"name":value` is p.out[start:end]
	name       int // the decoded name is p.out[name:name+n], or p.keys[name:name+n] if inKeys
	n          int
	inKeys     bool
	src        int // offset in the input of the name's opening quote
}

// parser holds one canonicalization's state. Its slices are reused through parserPool,
// so that a call allocates little beyond its result.
type parser struct {
	in      []byte
	pos     int
	depth   int
	out     []byte
	members []member // a stack: each open object owns a suffix
	keys    []byte   // decoded names that differ from their JCS form; a stack like members
	tmp     []byte   // scratch for reordering an object's members
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

func getParser(in []byte) *parser {
	p := parserPool.Get().(*parser)
	p.in, p.pos, p.depth = in, 0, 0
	return p
}

// maxPooled is the largest buffer returned to the pool; one huge input should not pin
// its memory for the life of the process.
const maxPooled = 1 << 20

func putParser(p *parser) {
	p.in = nil
	if cap(p.out) > maxPooled {
		p.out = nil
	}
	if cap(p.tmp) > maxPooled {
		p.tmp = nil
	}
	if cap(p.keys) > maxPooled {
		p.keys = nil
	}
	if cap(p.members) > maxPooled/64 {
		p.members = nil
	}
	p.members, p.keys = p.members[:0], p.keys[:0]
	parserPool.Put(p)
}

func (p *parser) errAt(off int, reason string) error {
	return &Error{Offset: int64(off), Reason: reason}
}

// unexpected reports that in[off] is not what the grammar allows there.
func (p *parser) unexpected(off int, expected string) error {
	if off >= len(p.in) {
		return p.errAt(len(p.in), reasonEOF)
	}
	if p.in[off] >= utf8.RuneSelf && !validRuneAt(p.in, off) {
		return p.errAt(off, reasonUTF8)
	}
	return p.errAt(off, expected+", "+found(p.in, off))
}

func validRuneAt(b []byte, off int) bool {
	r, size := utf8.DecodeRune(b[off:])
	return !(r == utf8.RuneError && size == 1)
}

func (p *parser) skipSpace() {
	in := p.in
	i := p.pos
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	p.pos = i
}

func (p *parser) run() error {
	p.skipSpace()
	if err := p.parseValue(); err != nil {
		return err
	}
	p.skipSpace()
	if p.pos < len(p.in) {
		if !validRuneAt(p.in, p.pos) {
			return p.errAt(p.pos, reasonUTF8)
		}
		return p.errAt(p.pos, reasonTrailing)
	}
	return nil
}

// parseValue reads the value at p.pos, which follows any whitespace.
func (p *parser) parseValue() error {
	in := p.in
	if p.pos >= len(in) {
		return p.errAt(len(in), reasonEOF)
	}
	switch c := in[p.pos]; c {
	case '"':
		_, err := p.parseString()
		return err
	case '{':
		return p.parseObject()
	case '[':
		return p.parseArray()
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.parseNumber()
	case 'N':
		if hasPrefix(in[p.pos:], "NaN") {
			return p.errAt(p.pos, reasonNaN)
		}
	case 'I':
		if hasPrefix(in[p.pos:], "Infinity") {
			return p.errAt(p.pos, reasonInfinity)
		}
	}
	return p.unexpected(p.pos, reasonValue)
}

func (p *parser) literal(lit string) error {
	in := p.in
	for k := 0; k < len(lit); k++ {
		i := p.pos + k
		if i >= len(in) {
			return p.errAt(len(in), reasonEOF)
		}
		if in[i] != lit[k] {
			return p.unexpected(i, reasonLiteral+" (expected "+lit+")")
		}
	}
	p.out = append(p.out, lit...)
	p.pos += len(lit)
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.errAt(p.pos, reasonDepth)
	}
	return nil
}

func (p *parser) parseArray() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.out = append(p.out, '[')
	p.pos++
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		p.depth--
		return nil
	}
	for {
		if err := p.parseValue(); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errAt(len(p.in), reasonEOF)
		}
		switch p.in[p.pos] {
		case ',':
			p.out = append(p.out, ',')
			p.pos++
			p.skipSpace()
		case ']':
			p.out = append(p.out, ']')
			p.pos++
			p.depth--
			return nil
		default:
			return p.unexpected(p.pos, reasonArrayNext)
		}
	}
}

func (p *parser) parseObject() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.out = append(p.out, '{')
	p.pos++
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		p.depth--
		return nil
	}
	base, keysBase := len(p.members), len(p.keys)
	region := len(p.out) // the members start here
	for {
		if p.pos >= len(p.in) {
			return p.errAt(len(p.in), reasonEOF)
		}
		if p.in[p.pos] != '"' {
			return p.unexpected(p.pos, reasonName)
		}
		m := member{start: len(p.out), src: p.pos}
		escaped, err := p.parseString()
		if err != nil {
			return err
		}
		if escaped {
			// Rare: the name holds '"', '\\' or a control character, so its JCS form
			// is not its decoded form, which is what members are sorted by.
			m.name, m.inKeys = len(p.keys), true
			p.keys = unescape(p.keys, p.out[m.start+1:len(p.out)-1])
			m.n = len(p.keys) - m.name
		} else {
			m.name, m.n = m.start+1, len(p.out)-m.start-2
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errAt(len(p.in), reasonEOF)
		}
		if p.in[p.pos] != ':' {
			return p.unexpected(p.pos, reasonColon)
		}
		p.out = append(p.out, ':')
		p.pos++
		p.skipSpace()
		if err := p.parseValue(); err != nil {
			return err
		}
		m.end = len(p.out)
		p.members = append(p.members, m)
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errAt(len(p.in), reasonEOF)
		}
		if c := p.in[p.pos]; c == ',' {
			p.out = append(p.out, ',')
			p.pos++
			p.skipSpace()
			continue
		} else if c != '}' {
			return p.unexpected(p.pos, reasonObjectNext)
		}
		p.pos++
		break
	}
	if err := p.sortMembers(base, region); err != nil {
		return err
	}
	p.members, p.keys = p.members[:base], p.keys[:keysBase]
	p.out = append(p.out, '}')
	p.depth--
	return nil
}

func (p *parser) name(m *member) []byte {
	if m.inKeys {
		return p.keys[m.name : m.name+m.n]
	}
	return p.out[m.name : m.name+m.n]
}

// sortMembers puts the members p.members[base:], whose bytes are p.out[region:], into
// JCS order, and refuses duplicate names.
func (p *parser) sortMembers(base, region int) error {
	ms := p.members[base:]
	sorted := true
	for i := 1; i < len(ms); i++ {
		if compareUTF16(p.name(&ms[i-1]), p.name(&ms[i])) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	// Ties (duplicates) are broken by input position, so that the refusal below names
	// the second occurrence of the first name that repeats.
	slices.SortFunc(ms, func(a, b member) int {
		if c := compareUTF16(p.name(&a), p.name(&b)); c != 0 {
			return c
		}
		return a.src - b.src
	})
	dup := -1
	for i := 1; i < len(ms); i++ {
		if string(p.name(&ms[i-1])) == string(p.name(&ms[i])) && (dup < 0 || ms[i].src < dup) {
			dup = ms[i].src
		}
	}
	if dup >= 0 {
		return p.errAt(dup, reasonDuplicate)
	}
	p.tmp = append(p.tmp[:0], p.out[region:]...)
	out := p.out[:region]
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p.tmp[m.start-region:m.end-region]...)
	}
	p.out = out
	return nil
}

// compareUTF16 compares two valid UTF-8 strings as sequences of UTF-16 code units, the
// order RFC 8785 section 3.2.3 sorts member names by. UTF-8 byte order is code point
// order, which agrees with UTF-16 order except between a code point at or above U+10000
// (a surrogate pair, D800–DBFF first) and one in U+E000–U+FFFF. At the first differing
// byte both strings are at the same position of a rune, so if those bytes are lead bytes
// 0xEE–0xEF (U+E000–U+FFFF) against 0xF0–0xF4 (U+10000 and above), the order flips.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	if x >= 0xee && y >= 0xee {
		if xs, ys := x >= 0xf0, y >= 0xf0; xs != ys {
			if xs {
				return -1
			}
			return 1
		}
	}
	return int(x) - int(y)
}
