package findings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The finding rules. The names are stable: they appear in JSON and SARIF output and in
// docs/findings.md.
const (
	RuleSecretAccess     warrant.Rule = "finding-secret-access"
	RuleExfiltration     warrant.Rule = "finding-exfiltration"
	RuleCrossTool        warrant.Rule = "finding-cross-tool"
	RuleConcealment      warrant.Rule = "finding-concealment"
	RuleHiddenCharacters warrant.Rule = "finding-hidden-characters"
	RuleUnscanned        warrant.Rule = "finding-unscanned-text"
)

// Rules lists every finding rule with the highest severity it reports (a match can be
// graded lower; docs/findings.md gives each pattern's grade), for SARIF's rule table.
var Rules = []warrant.RuleInfo{
	{Rule: RuleSecretAccess, Severity: warrant.Critical, Summary: "the text tells the model to read or pass private keys, credential or client configuration files, passwords or tokens"},
	{Rule: RuleExfiltration, Severity: warrant.Critical, Summary: "the text tells the model to send data elsewhere: into a parameter, or to a fixed URL, address, number or webhook"},
	{Rule: RuleCrossTool, Severity: warrant.Critical, Summary: "the text tells the model what to do with other tools or servers, or shadows one"},
	{Rule: RuleConcealment, Severity: warrant.Critical, Summary: "the text tells the model to hide something from the user, or poses as system instructions"},
	{Rule: RuleHiddenCharacters, Severity: warrant.Critical, Summary: "the text holds invisible, bidi, tag, control or escape characters"},
	{Rule: RuleUnscanned, Severity: warrant.Warning, Summary: "part of the text was past the scan bounds (or not JSON) and was not scanned"},
}

// KindInstructions is the Kind of a server's instructions (the initialize result's), the
// same name agentgate.lock's diff uses.
const KindInstructions warrant.Kind = "instructions"

// Bounds on what one Scan reads. Text past them is not scanned and is reported as a
// RuleUnscanned finding, never silently dropped.
const (
	// MaxFieldBytes is the number of bytes scanned of one string (a description, a
	// default, a member name).
	MaxFieldBytes = 32 << 10
	// MaxTargetBytes is the number of bytes scanned of one definition, all strings
	// together.
	MaxTargetBytes = 256 << 10
	// MaxStrings is the number of strings and member names scanned of one definition.
	MaxStrings = 4096
	// MaxDepth is the nesting depth of a schema walked.
	MaxDepth = 64
	// MaxExcerptBytes bounds a Finding's Excerpt before rendering: the matched text with
	// some context, cut with an ellipsis.
	MaxExcerptBytes = 160
)

// Target is one definition to scan.
type Target struct {
	// Kind is warrant.KindTool, warrant.KindPrompt, warrant.KindResource,
	// warrant.KindResourceTemplate or KindInstructions.
	Kind warrant.Kind
	// Name, Title and Description are the definition's members of those names. For
	// KindInstructions, Description holds the instructions (pointer "/instructions") and
	// Name and Title are ignored.
	Name, Title, Description string
	// InputSchema and OutputSchema are a tool's schemas as served (nil: none). Every
	// string and member name in them is scanned.
	InputSchema, OutputSchema json.RawMessage
	// Arguments are a prompt's arguments, in order.
	Arguments []Argument
	// Siblings are the names of the other tools on the same server (nil: unknown). A
	// reference such as "instead of the X tool" to one of them is INFO, not CRITICAL:
	// a server pointing at its own tools shadows nothing.
	Siblings []string
}

// Argument is one prompt argument.
type Argument struct {
	Name, Title, Description string
}

// Finding is one rule's match in one string of a definition.
type Finding struct {
	Rule     warrant.Rule     `json:"rule"`
	Severity warrant.Severity `json:"severity"`
	// Pointer is the RFC 6901 JSON pointer of the string in the definition object
	// ("/description", "/inputSchema/properties/note/default", "/instructions"); for a
	// member name, the pointer of the member.
	Pointer string `json:"pointer"`
	// Excerpt is the matched text with a little context, at most MaxExcerptBytes of the
	// original before rendering, on one line, with every character textguard reports
	// rendered visibly (`\u200b`, `<U+E0041>`, `\x1b`). For RuleUnscanned it is the text
	// where scanning stopped ("" past the depth bound).
	Excerpt string `json:"excerpt"`
	// Reason is one line: the phrases that matched, quoted, and why they matter.
	Reason string `json:"reason"`
}

// Grade returns the highest severity among fs; warrant.SeverityNone when fs is empty.
func Grade(fs []Finding) warrant.Severity {
	g := warrant.SeverityNone
	for _, f := range fs {
		g = max(g, f.Severity)
	}
	return g
}

// Scan applies every rule to t and returns the findings, most severe first, then by
// pointer and rule; nil when there are none. It never fails: a schema that is not JSON is
// reported as RuleUnscanned.
func Scan(t Target) []Finding {
	sc := newScanner(t)
	if t.Kind == KindInstructions {
		sc.text("/instructions", t.Description, false)
		return sc.result()
	}
	sc.text("/name", t.Name, true)
	sc.text("/title", t.Title, false)
	sc.text("/description", t.Description, false)
	for i, a := range t.Arguments {
		p := "/arguments/" + strconv.Itoa(i)
		sc.text(p+"/name", a.Name, true)
		sc.text(p+"/title", a.Title, false)
		sc.text(p+"/description", a.Description, false)
	}
	sc.schema("/inputSchema", t.InputSchema)
	sc.schema("/outputSchema", t.OutputSchema)
	return sc.result()
}

// ScanObject scans one definition as served (a tool, prompt, resource or resource
// template JSON object): its name, title, description, inputSchema, outputSchema and
// prompt arguments, as [Scan] does. siblings are the names of the server's other tools
// (see Target.Siblings). It fails, wrapping warrant.ErrInvalid, only when obj is not a
// JSON object.
func ScanObject(kind warrant.Kind, obj []byte, siblings []string) ([]Finding, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil || m == nil {
		return nil, fmt.Errorf("findings: %w: a %s definition is not a JSON object", warrant.ErrInvalid, kind)
	}
	t := Target{Kind: kind, Siblings: siblings}
	str := func(k string) string {
		var s string
		if json.Unmarshal(m[k], &s) != nil {
			return ""
		}
		return s
	}
	t.Name, t.Title, t.Description = str("name"), str("title"), str("description")
	if v, ok := m["inputSchema"]; ok {
		t.InputSchema = v
	}
	if v, ok := m["outputSchema"]; ok {
		t.OutputSchema = v
	}
	if kind == warrant.KindPrompt {
		var args []map[string]json.RawMessage
		_ = json.Unmarshal(m["arguments"], &args) // not a list: no arguments to scan
		for _, a := range args {
			var arg Argument
			_ = json.Unmarshal(a["name"], &arg.Name)
			_ = json.Unmarshal(a["title"], &arg.Title)
			_ = json.Unmarshal(a["description"], &arg.Description)
			t.Arguments = append(t.Arguments, arg)
		}
	}
	return Scan(t), nil
}

// scanner holds one Scan's state.
type scanner struct {
	t        Target
	props    []string // the input schema's property names, lower case, for parameter references
	siblings map[string]bool
	budget   int // bytes left of MaxTargetBytes
	// overBudget is set once the budget ran out and that was reported.
	overBudget bool
	strings    int // strings scanned so far
	hits       map[hitKey]*hit
	order      []hitKey
	mask       uint64 // the prefilter mask of the sentence being matched
}

type hitKey struct {
	rule    warrant.Rule
	pointer string
}

type hit struct {
	f    Finding
	more int // further matches of the same rule in the same string
}

func newScanner(t Target) *scanner {
	sc := &scanner{t: t, budget: MaxTargetBytes, hits: map[hitKey]*hit{}, siblings: map[string]bool{}}
	for _, s := range t.Siblings {
		sc.siblings[strings.ToLower(s)] = true
	}
	if t.Name != "" {
		sc.siblings[strings.ToLower(t.Name)] = true
	}
	sc.props = propertyNames(t.InputSchema)
	for _, a := range t.Arguments {
		if n := strings.ToLower(a.Name); len(n) >= 2 && len(n) <= 64 && !slices.Contains(sc.props, n) {
			sc.props = append(sc.props, n)
		}
	}
	return sc
}

// add records f, keeping for each rule and pointer the most severe finding (the first
// one among equals) and a count of the rest.
func (sc *scanner) add(f Finding) {
	k := hitKey{f.Rule, f.Pointer}
	h, ok := sc.hits[k]
	if !ok {
		sc.hits[k] = &hit{f: f}
		sc.order = append(sc.order, k)
		return
	}
	h.more++
	if f.Severity > h.f.Severity {
		h.f = f
	}
}

func (sc *scanner) result() []Finding {
	if len(sc.order) == 0 {
		return nil
	}
	out := make([]Finding, 0, len(sc.order))
	for _, k := range sc.order {
		h := sc.hits[k]
		f := h.f
		if h.more > 0 {
			f.Reason += fmt.Sprintf(" (and %d more in this text)", h.more)
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, compareFindings)
	return out
}

// compareFindings orders findings most severe first, then by pointer, then by rule.
func compareFindings(a, b Finding) int {
	if a.Severity != b.Severity {
		return int(b.Severity) - int(a.Severity)
	}
	if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
		return c
	}
	return strings.Compare(string(a.Rule), string(b.Rule))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// escapePointer escapes one reference token of an RFC 6901 pointer.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// propertyNames returns the lower-cased property names at the top of an input schema, at
// most 64, for recognising "pass it as sidenote" as a reference to a parameter.
func propertyNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(bytes.TrimSpace(schema)) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []string
	for k := range s.Properties {
		if n := len(k); n >= 2 && n <= 64 {
			out = append(out, strings.ToLower(k))
		}
	}
	slices.Sort(out)
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}
