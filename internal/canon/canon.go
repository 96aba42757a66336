package canon

import (
	"errors"
	"slices"
	"sync"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
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
// so that a call allocates little beyond its result. The input is read by a
// jsontok.Scanner, which refuses everything but I-JSON text; what is left here is what
// JCS adds: member order, duplicate names, and the numbers' and strings' output form.
type parser struct {
	in      []byte
	s       jsontok.Scanner
	out     []byte
	members []member // a stack: each open object owns a suffix
	keys    []byte   // decoded names that hold escapes; a stack like members
	tmp     []byte   // scratch for reordering an object's members
	str     []byte   // scratch for decoding a string that holds escapes
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

func getParser(in []byte) *parser {
	p := parserPool.Get().(*parser)
	p.in = in
	p.s.Reset(in, MaxDepth, 0)
	return p
}

// maxPooled is the largest buffer returned to the pool; one huge input should not pin
// its memory for the life of the process.
const maxPooled = 1 << 20

func putParser(p *parser) {
	p.in = nil
	p.s.Reset(nil, MaxDepth, 0)
	if cap(p.out) > maxPooled {
		p.out = nil
	}
	if cap(p.tmp) > maxPooled {
		p.tmp = nil
	}
	if cap(p.keys) > maxPooled {
		p.keys = nil
	}
	if cap(p.str) > maxPooled {
		p.str = nil
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

// refusal turns the tokenizer's error into this package's.
func refusal(err error) error {
	var e *jsontok.Error
	if errors.As(err, &e) {
		return &Error{Offset: int64(e.Offset), Reason: e.Reason}
	}
	return err
}

func (p *parser) run() error {
	err := p.parseValue()
	if err == nil {
		err = p.s.End()
	}
	if err != nil {
		return refusal(err)
	}
	return nil
}

// parseValue reads the next value and appends its JCS form to p.out.
func (p *parser) parseValue() error {
	switch p.s.Peek() {
	case jsontok.String:
		t, err := p.s.ReadString()
		if err != nil {
			return err
		}
		p.appendString(t)
		return nil
	case jsontok.Object:
		return p.parseObject()
	case jsontok.Array:
		return p.parseArray()
	case jsontok.Number:
		return p.parseNumber()
	}
	t, err := p.s.ReadLiteral()
	if err != nil {
		return err
	}
	p.out = append(p.out, p.in[t.Start:t.End]...)
	return nil
}

func (p *parser) parseArray() error {
	p.out = append(p.out, '[')
	first := true
	err := p.s.Array(func() error {
		if !first {
			p.out = append(p.out, ',')
		}
		first = false
		return p.parseValue()
	})
	p.out = append(p.out, ']')
	return err
}

func (p *parser) parseObject() error {
	p.out = append(p.out, '{')
	base, keysBase := len(p.members), len(p.keys)
	region := len(p.out) // the members start here
	err := p.s.Object(func(name jsontok.Token) error {
		if len(p.members) > base {
			p.out = append(p.out, ',')
		}
		m := member{start: len(p.out), src: name.Start}
		p.appendString(name)
		if name.Escaped {
			// Rare: members are sorted by their decoded names, which differ from the
			// input's bytes only where those hold escapes.
			m.name, m.n, m.inKeys = len(p.keys), len(p.str), true
			p.keys = append(p.keys, p.str...)
		} else {
			m.name, m.n = m.start+1, name.End-name.Start-2
		}
		p.out = append(p.out, ':')
		if err := p.parseValue(); err != nil {
			return err
		}
		m.end = len(p.out)
		p.members = append(p.members, m)
		return nil
	})
	if err != nil {
		return err
	}
	if err := p.sortMembers(base, region); err != nil {
		return err
	}
	p.members, p.keys = p.members[:base], p.keys[:keysBase]
	p.out = append(p.out, '}')
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
