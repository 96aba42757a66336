package warrant

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/textguard"
)

// TextFinding is one suspicious character (High severity in textguard) in a definition.
type TextFinding struct {
	// Pointer is the JSON pointer of the string holding it; for a member name, the pointer
	// of that member.
	Pointer string `json:"pointer"`
	// InName is true when the character is in a member name rather than a value.
	InName bool `json:"inName,omitempty"`
	// Offset is the byte offset in that string.
	Offset int `json:"offset"`
	// Class is textguard's class name ("zero-width", "tag", "bidi-control", ...).
	Class string `json:"class"`
	// Visible is a printable rendering, such as `\u200b` or `<U+E0049>`.
	Visible string `json:"visible"`
}

// Inspection is what textguard finds in one version of a tool, in the context of the
// catalog's other tool names.
type Inspection struct {
	// Findings are the suspicious characters, in document order.
	Findings []TextFinding `json:"findings"`
	// Hidden is the ASCII text smuggled in Unicode tag characters, one entry per run.
	Hidden []string `json:"hidden,omitempty"`
	// ConfusableWith lists other tools' names (sorted) that look like this tool's name.
	ConfusableWith []string `json:"confusableWith,omitempty"`
	// MixedScript is true when the name mixes writing systems; Scripts names them.
	MixedScript bool     `json:"mixedScript,omitempty"`
	Scripts     []string `json:"scripts,omitempty"`
}

// MarshalJSON writes Findings as [] rather than null when there are none, so that readers
// of --json and the approvals API always get a list.
func (i Inspection) MarshalJSON() ([]byte, error) {
	type plain Inspection // without this method
	if i.Findings == nil {
		i.Findings = []TextFinding{}
	}
	return json.Marshal(plain(i))
}

// Suspicious reports whether the inspection found anything that must be accepted before
// the definition is shown raw or approved.
func (i Inspection) Suspicious() bool {
	return len(i.Findings) > 0 || len(i.ConfusableWith) > 0 || i.MixedScript
}

// Flags returns short labels for tables: "invisible", "confusable", "mixed-script".
func (i Inspection) Flags() []string {
	var f []string
	if len(i.Findings) > 0 {
		f = append(f, "invisible")
	}
	if len(i.ConfusableWith) > 0 {
		f = append(f, "confusable")
	}
	if i.MixedScript {
		f = append(f, "mixed-script")
	}
	return f
}

// Summary says in one line what was found, for errors and warnings.
func (i Inspection) Summary() string {
	var parts []string
	if n := len(i.Findings); n > 0 {
		classes := map[string]int{}
		var order []string
		for _, f := range i.Findings {
			if classes[f.Class] == 0 {
				order = append(order, f.Class)
			}
			classes[f.Class]++
		}
		var cs []string
		for _, c := range order {
			cs = append(cs, fmt.Sprintf("%d %s", classes[c], c))
		}
		first := i.Findings[0]
		parts = append(parts, fmt.Sprintf("%d suspicious character%s (%s; first %s at %s)", n, plural(n), strings.Join(cs, ", "), first.Visible, pointerOrRoot(first.Pointer)))
	}
	for _, h := range i.Hidden {
		parts = append(parts, fmt.Sprintf("hidden tag text %q", h))
	}
	if len(i.ConfusableWith) > 0 {
		parts = append(parts, "name confusable with "+quoteAll(i.ConfusableWith))
	}
	if i.MixedScript {
		parts = append(parts, "name mixes scripts ("+strings.Join(i.Scripts, ", ")+")")
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(textguard.Visible(n))
	}
	return strings.Join(q, ", ")
}

// Inspect scans a definition (canonical JSON) for suspicious text, and its name against
// names (the catalog's tool names, on any server; nil for none).
func Inspect(canonical []byte, name string, names *Names) (Inspection, error) {
	v, _, err := decodeTool(canonical)
	if err != nil {
		return Inspection{}, err
	}
	var in Inspection
	walkStrings("", v, func(ptr string, s string, key bool) {
		for _, f := range textguard.Scan(s) {
			if f.Class.Severity() == textguard.High {
				in.Findings = append(in.Findings, TextFinding{Pointer: ptr, InName: key, Offset: f.Offset, Class: f.Class.String(), Visible: f.Visible})
			}
		}
		for _, r := range textguard.DecodeTags(s) {
			if r.Text != "" {
				in.Hidden = append(in.Hidden, r.Text)
			}
		}
	})
	in.ConfusableWith = names.ConfusableWith(name)
	if textguard.MixedScript(name) {
		in.MixedScript = true
		in.Scripts = textguard.Scripts(name)
	}
	return in, nil
}

// Names indexes tool names by UTS #39 skeleton, so that finding the names confusable with
// one name costs one skeleton, not one per name in the catalog. A Names may be layered
// over another (Over): it then holds its base's names too, and adding to it leaves the
// base alone.
type Names struct {
	bySkeleton map[string][]string
	base       *Names
	depth      int // layers below this one
}

// maxNameLayers bounds a chain of layers (Over); grow flattens a deeper one.
const maxNameLayers = 8

// NewNames indexes names (duplicates are fine).
func NewNames(names []string) *Names {
	n := &Names{bySkeleton: map[string][]string{}}
	n.Add(names...)
	return n
}

// Add indexes more names. A Names shared between goroutines must not be added to: add
// to a layer over it (Over) instead.
func (n *Names) Add(names ...string) {
	for _, name := range names {
		k := textguard.Skeleton(name)
		if !slices.Contains(n.bySkeleton[k], name) {
			n.bySkeleton[k] = append(n.bySkeleton[k], name)
		}
	}
}

// Over returns an empty layer over n: it holds n's names and those added to it, and
// adding to it does not change n, which may be shared between goroutines.
func (n *Names) Over() *Names {
	return &Names{bySkeleton: map[string][]string{}, base: n, depth: n.depth + 1}
}

// grow returns n with names added, as a new layer over n (n is left alone), flattened
// into one index when the chain of layers would grow past maxNameLayers.
func (n *Names) grow(names []string) *Names {
	next := n.Over()
	next.Add(names...)
	if next.depth <= maxNameLayers {
		return next
	}
	flat := &Names{bySkeleton: map[string][]string{}}
	for m := next; m != nil; m = m.base {
		for k, v := range m.bySkeleton {
			for _, name := range v {
				if !slices.Contains(flat.bySkeleton[k], name) {
					flat.bySkeleton[k] = append(flat.bySkeleton[k], name)
				}
			}
		}
	}
	return flat
}

// ConfusableWith returns the indexed names, sorted, that differ from name but have its
// skeleton. A nil *Names has none.
func (n *Names) ConfusableWith(name string) []string {
	k := textguard.Skeleton(name)
	var out []string
	for m := n; m != nil; m = m.base {
		for _, o := range m.bySkeleton[k] {
			if o != name && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// walkStrings calls fn for every string value and every member name in v, in canonical
// order, with its JSON pointer.
func walkStrings(ptr string, v any, fn func(ptr, s string, key bool)) {
	switch x := v.(type) {
	case string:
		fn(ptr, x, false)
	case map[string]any:
		for _, k := range unionKeys(x, nil) {
			p := ptr + "/" + escapePointer(k)
			fn(p, k, true)
			walkStrings(p, x[k], fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(ptr+"/"+strconv.Itoa(i), e, fn)
		}
	}
}

// suspicious adds one suspicious-text-added change per string that holds more High
// findings than the same string did before.
func (g *grader) suspicious(ptr string, old, new any) {
	count := func(v any) map[string][]textguard.Finding {
		m := map[string][]textguard.Finding{}
		if isAbsent(v) {
			return m
		}
		walkStrings(ptr, v, func(p, s string, key bool) {
			if key {
				p += " (member name)"
			}
			for _, f := range textguard.Scan(s) {
				if f.Class.Severity() == textguard.High {
					m[p] = append(m[p], f)
				}
			}
		})
		return m
	}
	om, nm := count(old), count(new)
	var ptrs []string
	for p := range nm {
		ptrs = append(ptrs, p)
	}
	slices.Sort(ptrs)
	for _, p := range ptrs {
		added := len(nm[p]) - len(om[p])
		if added <= 0 {
			continue
		}
		classes := map[string]int{}
		var order []string
		for _, f := range nm[p] {
			if classes[f.Class.String()] == 0 {
				order = append(order, f.Class.String())
			}
			classes[f.Class.String()]++
		}
		var cs []string
		for _, c := range order {
			cs = append(cs, fmt.Sprintf("%d %s", classes[c], c))
		}
		reason := fmt.Sprintf("%d new suspicious character%s (now %s, first %s): text a person does not see but the model reads, or that reorders what the person sees",
			added, plural(added), strings.Join(cs, ", "), nm[p][0].Visible)
		pointer := strings.TrimSuffix(p, " (member name)")
		if pointer != p {
			reason = "in a member name: " + reason
		}
		g.changes = append(g.changes, Change{Rule: RuleSuspiciousTextAdded, Severity: SeverityOf(RuleSuspiciousTextAdded), Kind: Added, Pointer: pointer, Reason: reason})
	}
}

func (g *grader) newTool(v map[string]any, opts GradeOptions) {
	g.add(RuleNewTool, Added, "", absent, absent, "a tool not seen before on this server: read its whole definition before approving it")
	g.suspicious("", absent, v)
	name, _ := v["name"].(string)
	if others := opts.Names.ConfusableWith(name); len(others) > 0 {
		g.add(RuleConfusableName, Added, "/name", absent, name,
			"the name looks like "+quoteAll(others)+" (same UTS #39 skeleton): an agent or a reviewer can take one for the other")
	}
	if textguard.MixedScript(name) {
		g.add(RuleMixedScriptName, Added, "/name", absent, name,
			"the name mixes writing systems ("+strings.Join(textguard.Scripts(name), ", ")+"): the classic way of forging a look-alike")
	}
}

// VisibleJSON returns canonical JSON with every character textguard rates High replaced by
// its JSON \u escape (a surrogate pair above U+FFFF). The result is valid JSON with the same
// value, shows the characters to a person, and has no High finding left; emoji sequences
// and in-script joiners are kept. For a definition without such characters it returns the
// canonical bytes unchanged.
func VisibleJSON(canonical []byte) []byte {
	s := string(canonical)
	fs := textguard.Scan(s)
	if len(fs) == 0 {
		return canonical
	}
	var b strings.Builder
	last := 0
	for _, f := range fs {
		if f.Class.Severity() != textguard.High || f.Offset < last {
			continue
		}
		b.WriteString(s[last:f.Offset])
		for _, r := range s[f.Offset : f.Offset+f.Len] {
			if r == utf8.RuneError {
				b.WriteString(`\ufffd`)
				continue
			}
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else if r < 0x80 && r >= 0x20 && r != '"' && r != '\\' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
		last = f.Offset + f.Len
	}
	b.WriteString(s[last:])
	return []byte(b.String())
}

// VisibleDefinition is VisibleJSON, and when in flags the tool's name as confusable or
// mixed-script, every non-ASCII character of every string equal to name is written as a
// \u escape too, so a look-alike letter shows as what it is (read_f\u0456le).
func VisibleDefinition(canonical []byte, name string, in Inspection) []byte {
	out := VisibleJSON(canonical)
	if len(in.ConfusableWith) == 0 && !in.MixedScript {
		return out
	}
	token, err := canon.AppendString(nil, name)
	if err != nil {
		return out
	}
	var esc strings.Builder
	esc.WriteByte('"')
	for _, r := range string(token[1 : len(token)-1]) {
		switch {
		case r < 0x80:
			esc.WriteRune(r)
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&esc, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&esc, `\u%04x`, r)
		}
	}
	esc.WriteByte('"')
	return []byte(strings.ReplaceAll(string(out), string(token), esc.String()))
}
