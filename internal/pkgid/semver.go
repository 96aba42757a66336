package pkgid

import (
	"strconv"
	"strings"
)

// npm's semver (node-semver, which npm, npx and the registry use), the part that picks a
// version: exact versions, and ranges made of comparators (<, <=, >, >=, =), x-ranges (1.x,
// 1.2.*, *), tilde and caret ranges, hyphen ranges and ||, with node-semver's rule that a
// prerelease version satisfies a range only when a comparator of the same set names a
// prerelease of the same major.minor.patch. Loose forms (a leading "v" or "=") are accepted
// as node-semver accepts them by default; build metadata is ignored. golang.org/x/mod/semver
// is Go's semver (no ranges, "v" required), so this is written out here.

// version is a parsed semver version.
type version struct {
	major, minor, patch uint64
	pre                 []string // prerelease identifiers; nil for a release
}

// parseVersion reads an exact version such as 1.2.3, v1.2.3 or 1.2.3-beta.1+build.
func parseVersion(s string) (version, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "="), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdents(s[i+1:], false) {
			return version{}, false
		}
		s = s[:i]
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return version{}, false
	}
	var v version
	for i, p := range parts {
		n, ok := number(p)
		if !ok {
			return version{}, false
		}
		switch i {
		case 0:
			v.major = n
		case 1:
			v.minor = n
		default:
			v.patch = n
		}
	}
	if hasPre {
		if !validIdents(pre, true) {
			return version{}, false
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, true
}

// number reads a version number: digits, no leading zero.
func number(s string) (uint64, bool) {
	if s == "" || len(s) > 16 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// validIdents checks dot-separated identifiers ([0-9A-Za-z-]+); numeric prerelease
// identifiers may not have leading zeros.
func validIdents(s string, pre bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				numeric = false
			default:
				return false
			}
		}
		if pre && numeric && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

func (v version) String() string {
	s := strconv.FormatUint(v.major, 10) + "." + strconv.FormatUint(v.minor, 10) + "." + strconv.FormatUint(v.patch, 10)
	if len(v.pre) > 0 {
		s += "-" + strings.Join(v.pre, ".")
	}
	return s
}

// compare orders versions as semver 2.0.0 §11 says.
func compare(a, b version) int {
	for _, d := range [][2]uint64{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		if x == y {
			continue
		}
		xn, xok := number(x)
		yn, yok := number(y)
		switch {
		case xok && yok:
			if xn < yn {
				return -1
			}
			return 1
		case xok:
			return -1
		case yok:
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	}
	switch {
	case len(a.pre) < len(b.pre):
		return -1
	case len(a.pre) > len(b.pre):
		return 1
	}
	return 0
}

// comparator is one primitive test: op is "<", "<=", ">", ">=" or "=".
type comparator struct {
	op string
	v  version
}

func (c comparator) test(v version) bool {
	n := compare(v, c.v)
	switch c.op {
	case "<":
		return n < 0
	case "<=":
		return n <= 0
	case ">":
		return n > 0
	case ">=":
		return n >= 0
	}
	return n == 0
}

// semverRange is a parsed range: sets joined by ||, each satisfied when all its
// comparators are.
type semverRange [][]comparator

// partial is a version operand that may leave parts out or use x, X or *: n is how many
// parts are given (0 to 3).
type partial struct {
	v version
	n int
}

func parsePartial(s string) (partial, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "="), "v")
	if s == "" || s == "*" || s == "x" || s == "X" {
		return partial{}, true
	}
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return partial{}, false
	}
	var p partial
	for i, part := range parts {
		if part == "x" || part == "X" || part == "*" {
			break
		}
		n, ok := number(part)
		if !ok {
			return partial{}, false
		}
		switch i {
		case 0:
			p.v.major = n
		case 1:
			p.v.minor = n
		default:
			p.v.patch = n
		}
		p.n = i + 1
	}
	if hasPre {
		if p.n != 3 || !validIdents(pre, true) {
			return partial{}, false
		}
		p.v.pre = strings.Split(pre, ".")
	}
	return p, true
}

// zeroPre is the "-0" prerelease node-semver puts on exclusive upper bounds, so that
// prereleases of the next version do not match.
var zeroPre = []string{"0"}

// next returns the first version after every version p covers.
func (p partial) next() version {
	switch p.n {
	case 1:
		return version{major: p.v.major + 1, pre: zeroPre}
	case 2:
		return version{major: p.v.major, minor: p.v.minor + 1, pre: zeroPre}
	}
	return p.v
}

// parseRange reads an npm range; ok is false for anything else (a dist-tag, a URL).
func parseRange(s string) (semverRange, bool) {
	var r semverRange
	for _, set := range strings.Split(s, "||") {
		cs, ok := parseSet(strings.TrimSpace(set))
		if !ok {
			return nil, false
		}
		r = append(r, cs)
	}
	return r, len(r) > 0
}

func parseSet(s string) ([]comparator, bool) {
	if a, b, ok := strings.Cut(s, " - "); ok {
		lo, ok1 := parsePartial(strings.TrimSpace(a))
		hi, ok2 := parsePartial(strings.TrimSpace(b))
		if !ok1 || !ok2 {
			return nil, false
		}
		cs := []comparator{{">=", lo.v}}
		switch {
		case hi.n == 0:
		case hi.n < 3:
			cs = append(cs, comparator{"<", hi.next()})
		default:
			cs = append(cs, comparator{"<=", hi.v})
		}
		return cs, true
	}
	// Operators may be separated from their operand by spaces (">= 1.2.3").
	fields := strings.Fields(s)
	var toks []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Trim(f, "<>=~^") == "" && i+1 < len(fields) {
			f += fields[i+1]
			i++
		}
		toks = append(toks, f)
	}
	if len(toks) == 0 {
		return []comparator{{">=", version{}}}, true
	}
	var out []comparator
	for _, t := range toks {
		cs, ok := parseComparator(t)
		if !ok {
			return nil, false
		}
		out = append(out, cs...)
	}
	return out, true
}

func parseComparator(t string) ([]comparator, bool) {
	op := ""
	for _, o := range []string{"<=", ">=", "~>", "<", ">", "=", "~", "^"} {
		if strings.HasPrefix(t, o) {
			op, t = o, t[len(o):]
			break
		}
	}
	p, ok := parsePartial(t)
	if !ok {
		return nil, false
	}
	lo := p.v
	any := []comparator{{">=", version{}}}
	switch op {
	case "", "=":
		if p.n == 0 {
			return any, true
		}
		if p.n == 3 {
			return []comparator{{"=", p.v}}, true
		}
		return []comparator{{">=", lo}, {"<", p.next()}}, true
	case "~", "~>":
		if p.n == 0 {
			return any, true
		}
		hi := version{major: p.v.major + 1, pre: zeroPre}
		if p.n >= 2 {
			hi = version{major: p.v.major, minor: p.v.minor + 1, pre: zeroPre}
		}
		return []comparator{{">=", lo}, {"<", hi}}, true
	case "^":
		if p.n == 0 {
			return any, true
		}
		var hi version
		switch {
		case p.v.major > 0 || p.n == 1:
			hi = version{major: p.v.major + 1, pre: zeroPre}
		case p.v.minor > 0 || p.n == 2:
			hi = version{minor: p.v.minor + 1, pre: zeroPre}
		default:
			hi = version{patch: p.v.patch + 1, pre: zeroPre}
		}
		return []comparator{{">=", lo}, {"<", hi}}, true
	case ">":
		if p.n == 0 {
			return []comparator{{"<", version{pre: zeroPre}}}, true // nothing
		}
		if p.n < 3 {
			lo := partial{v: version{major: p.v.major, minor: p.v.minor}, n: p.n}.next()
			lo.pre = nil
			return []comparator{{">=", lo}}, true
		}
		return []comparator{{">", p.v}}, true
	case ">=":
		return []comparator{{">=", lo}}, true
	case "<":
		if p.n == 0 {
			return []comparator{{"<", version{pre: zeroPre}}}, true
		}
		if p.n < 3 {
			return []comparator{{"<", version{major: p.v.major, minor: p.v.minor, pre: zeroPre}}}, true
		}
		return []comparator{{"<", p.v}}, true
	case "<=":
		if p.n == 0 {
			return any, true
		}
		if p.n < 3 {
			return []comparator{{"<", p.next()}}, true
		}
		return []comparator{{"<=", p.v}}, true
	}
	return nil, false
}

// satisfies reports whether v is in r, with node-semver's prerelease rule.
func (r semverRange) satisfies(v version) bool {
	for _, set := range r {
		ok := true
		for _, c := range set {
			if !c.test(v) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if len(v.pre) == 0 {
			return true
		}
		for _, c := range set {
			if len(c.v.pre) > 0 && c.v.major == v.major && c.v.minor == v.minor && c.v.patch == v.patch {
				return true
			}
		}
	}
	return false
}
