package warrant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Severity grades a change. The zero value, SeverityNone, means no change.
type Severity uint8

// Severities, from least to most dangerous.
const (
	SeverityNone Severity = iota
	// Info: the change only makes the tool safer, restates what it already meant, or only
	// touches icons.
	Info
	// Warning: the change alters what the tool accepts, returns or claims, in a way a
	// reviewer should read but that does not by itself speak to the model in new words.
	Warning
	// Critical: the change puts new words or hidden characters in front of the model,
	// makes the tool more dangerous by its own account, or widens what it accepts.
	Critical
)

var severityNames = [...]string{"", "INFO", "WARNING", "CRITICAL"}

// String returns "INFO", "WARNING", "CRITICAL", or "" for SeverityNone.
func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("Severity(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	for i, n := range severityNames {
		if string(b) == n {
			*s = Severity(i)
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not a severity", ErrInvalid, b)
}

// Rule names one drift rule. The names are stable: they appear in `diff --json` and in
// docs/drift-grading.md.
type Rule string

// The drift rules; docs/drift-grading.md explains each one and why it has its severity.
const (
	RuleDescriptionChanged       Rule = "description-changed"
	RuleSchemaDescriptionChanged Rule = "schema-description-changed"
	RuleSuspiciousTextAdded      Rule = "suspicious-text-added"
	RuleConfusableName           Rule = "confusable-name"
	RuleMixedScriptName          Rule = "mixed-script-name"
	RuleAnnotationTowardDanger   Rule = "annotation-toward-danger"
	RuleRequiredAdded            Rule = "required-added"
	RuleAdditionalWidened        Rule = "additional-properties-widened"
	RuleTypeWidened              Rule = "type-widened"
	RuleNewTool                  Rule = "new-tool"
	RuleSchemaChanged            Rule = "schema-changed"
	RuleMetaChanged              Rule = "meta-changed"
	RuleTitleChanged             Rule = "title-changed"
	RuleAnnotationChanged        Rule = "annotation-changed"
	RuleFieldChanged             Rule = "field-changed"
	RuleAnnotationTowardSafety   Rule = "annotation-toward-safety"
	RuleAnnotationRestated       Rule = "annotation-restated"
	RuleSchemaNarrowed           Rule = "schema-narrowed"
	RuleSchemaEquivalent         Rule = "schema-equivalent"
	RuleIconsChanged             Rule = "icons-changed"

	// Rules for the rest of a server's surface (surfacedrift.go): instructions, prompts,
	// resources and resource templates, and anything removed.
	RuleInstructionsChanged        Rule = "instructions-changed"
	RuleArgumentDescriptionChanged Rule = "argument-description-changed"
	RuleHeaderMirrorChanged        Rule = "x-mcp-header-changed"
	RuleNewPrompt                  Rule = "new-prompt"
	RuleNewResource                Rule = "new-resource"
	RuleArgumentChanged            Rule = "argument-changed"
	RuleRemoved                    Rule = "removed"
)

// RuleInfo describes one rule.
type RuleInfo struct {
	Rule     Rule
	Severity Severity
	// Summary is one line for tables and --help.
	Summary string
}

// Rules lists every rule with its severity, most severe first; docs/drift-grading.md has a
// row for each (a test checks it).
var Rules = []RuleInfo{
	{RuleDescriptionChanged, Critical, "the description of a tool, prompt, resource or resource template was added, removed or reworded"},
	{RuleInstructionsChanged, Critical, "the server's instructions (from initialize) were added, removed or reworded"},
	{RuleSchemaDescriptionChanged, Critical, "a description inside inputSchema or outputSchema was added, removed or reworded"},
	{RuleArgumentDescriptionChanged, Critical, "a prompt argument's description was added, removed or reworded"},
	{RuleSuspiciousTextAdded, Critical, "a string or member name gained invisible, bidi, tag, control or escape characters"},
	{RuleConfusableName, Critical, "a new tool's name is confusable (UTS #39 skeleton) with another tool's name"},
	{RuleMixedScriptName, Critical, "a new tool's name mixes writing systems (UTS #39 §5.1)"},
	{RuleAnnotationTowardDanger, Critical, "readOnlyHint true→false, destructiveHint false→true, idempotentHint true→false or openWorldHint false→true (defaults applied)"},
	{RuleRequiredAdded, Critical, "a property or a prompt argument became required"},
	{RuleAdditionalWidened, Critical, "additionalProperties or unevaluatedProperties accepts more than before"},
	{RuleTypeWidened, Critical, "a schema accepts more types or values: type widened or removed, anyOf/oneOf gained a branch, a boolean schema opened"},
	{RuleNewTool, Warning, "a tool not seen before on this server"},
	{RuleNewPrompt, Warning, "a prompt not seen before on this server"},
	{RuleNewResource, Warning, "a resource or resource template not seen before on this server"},
	{RuleHeaderMirrorChanged, Warning, "an x-mcp-header marking in inputSchema was added, removed or changed: which argument is copied into an HTTP header (MCP 2026-07-28)"},
	{RuleArgumentChanged, Warning, "a prompt argument was added (optional), removed, or changed in a way no other rule classifies"},
	{RuleSchemaChanged, Warning, "any other inputSchema or outputSchema change: a property or keyword added, removed or changed"},
	{RuleMetaChanged, Warning, "_meta changed"},
	{RuleTitleChanged, Warning, "title or annotations.title changed"},
	{RuleAnnotationChanged, Warning, "an annotation other than the four hints and title changed"},
	{RuleFieldChanged, Warning, "any other member of the tool object changed"},
	{RuleAnnotationTowardSafety, Info, "a hint flipped toward safety (the reverse of annotation-toward-danger)"},
	{RuleAnnotationRestated, Info, "a hint now states, or no longer states, its default: the effective value is unchanged"},
	{RuleSchemaNarrowed, Info, "a schema accepts less than before: type narrowed, additionalProperties closed, anyOf lost a branch"},
	{RuleSchemaEquivalent, Info, "the same types, required names or prompt arguments, reordered or repeated"},
	{RuleIconsChanged, Info, "icons changed"},
	{RuleRemoved, Info, "a tool, prompt, resource or resource template is no longer served"},
}

// SeverityOf returns the severity of rule r.
func SeverityOf(r Rule) Severity {
	for _, ri := range Rules {
		if ri.Rule == r {
			return ri.Severity
		}
	}
	return Warning
}

// ChangeKind says whether a change added, removed or changed the value at its pointer.
type ChangeKind string

// Change kinds.
const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
)

// Change is one graded difference between two versions of a tool.
type Change struct {
	Rule     Rule       `json:"rule"`
	Severity Severity   `json:"severity"`
	Kind     ChangeKind `json:"kind"`
	// Pointer is the RFC 6901 JSON pointer of the changed value in the tool object ("" for
	// the whole tool).
	Pointer string `json:"pointer"`
	// Reason says what changed and why it has its severity.
	Reason string `json:"reason"`
	// Old and New are the values at Pointer as canonical JSON; nil when absent.
	Old json.RawMessage `json:"old,omitempty"`
	New json.RawMessage `json:"new,omitempty"`
}

// Drift is the graded difference between two versions of a tool.
type Drift struct {
	// Grade is the highest severity among Changes; SeverityNone when there are none.
	Grade Severity `json:"grade"`
	// Changes are sorted by severity (most severe first), then pointer, then rule.
	Changes []Change `json:"changes"`
}

// Rules returns the distinct rules of d's changes, in the order of d.Changes.
func (d Drift) Rules() []Rule {
	var out []Rule
	for _, c := range d.Changes {
		if !slices.Contains(out, c.Rule) {
			out = append(out, c.Rule)
		}
	}
	return out
}

// GradeOptions gives Grade the context of the catalog.
type GradeOptions struct {
	// Names indexes the names of the catalog's tools, on this server and others, for the
	// confusable-name rule (the graded tool's own name may be among them). Nil: none.
	Names *Names
}

// Grade compares two definitions of one tool (JSON tool objects, canonical or not) and
// grades every difference. old nil means the tool is new: it is graded against nothing
// (new-tool, and the rules about suspicious text and names). Identical definitions have no
// changes. It fails only when a definition is not acceptable JSON (see DigestTool).
func Grade(old, new []byte, opts GradeOptions) (Drift, error) {
	nv, nc, err := decodeTool(new)
	if err != nil {
		return Drift{}, fmt.Errorf("new definition: %w", err)
	}
	g := &grader{}
	if old == nil {
		g.newTool(nv, opts)
	} else {
		ov, oc, err := decodeTool(old)
		if err != nil {
			return Drift{}, fmt.Errorf("old definition: %w", err)
		}
		if bytes.Equal(oc, nc) {
			return Drift{Changes: []Change{}}, nil
		}
		g.tool(ov, nv)
		g.suspicious("", ov, nv)
		if len(g.changes) == 0 {
			g.add(RuleFieldChanged, Changed, "", ov, nv, "the definition changed in a way no other rule classifies")
		}
	}
	return g.result(), nil
}

func decodeTool(b []byte) (map[string]any, []byte, error) {
	c, err := canon.Transform(b)
	if err != nil {
		return nil, nil, err
	}
	d := json.NewDecoder(bytes.NewReader(c))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%w: a tool definition must be a JSON object", ErrInvalid)
	}
	return m, c, nil
}

// absentT marks a member that is not there, as distinct from JSON null.
type absentT struct{}

var absent any = absentT{}

func member(m map[string]any, k string) any {
	if m == nil {
		return absent
	}
	if v, ok := m[k]; ok {
		return v
	}
	return absent
}

func isAbsent(v any) bool { _, ok := v.(absentT); return ok }

func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b // strings, json.Number (canonical, so equal text is equal value), bools, nil, absent
	}
}

func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// encodeValue returns v as canonical JSON, nil for absent.
func encodeValue(v any) json.RawMessage {
	if isAbsent(v) {
		return nil
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil
	}
	c, err := canon.Transform(buf.Bytes())
	if err != nil {
		return nil
	}
	return c
}

// escapePointer escapes one JSON pointer reference token (RFC 6901 §3).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

type grader struct {
	changes []Change
}

func (g *grader) add(rule Rule, kind ChangeKind, ptr string, old, new any, reason string) {
	g.changes = append(g.changes, Change{Rule: rule, Severity: SeverityOf(rule), Kind: kind, Pointer: ptr,
		Reason: reason, Old: encodeValue(old), New: encodeValue(new)})
}

func (g *grader) result() Drift {
	slices.SortStableFunc(g.changes, func(a, b Change) int {
		if a.Severity != b.Severity {
			return int(b.Severity) - int(a.Severity)
		}
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(string(a.Rule), string(b.Rule))
	})
	d := Drift{Changes: g.changes}
	if d.Changes == nil {
		d.Changes = []Change{}
	}
	for _, c := range d.Changes {
		d.Grade = max(d.Grade, c.Severity)
	}
	return d
}

func kindOf(old, new any) ChangeKind {
	switch {
	case isAbsent(old):
		return Added
	case isAbsent(new):
		return Removed
	}
	return Changed
}

// verb is "added", "removed" or "changed" for reasons.
func verb(old, new any) string { return string(kindOf(old, new)) }

func (g *grader) tool(old, new map[string]any) {
	for _, k := range unionKeys(old, new) {
		o, n := member(old, k), member(new, k)
		if equal(o, n) {
			continue
		}
		p := "/" + escapePointer(k)
		switch k {
		case "description":
			g.add(RuleDescriptionChanged, kindOf(o, n), p, o, n,
				"the tool's description "+verb(o, n)+": the model reads it as instructions, so any change to it changes what the model is told to do")
		case "title":
			g.add(RuleTitleChanged, kindOf(o, n), p, o, n, "the tool's title "+verb(o, n)+": people and some clients show it in place of the name")
		case "inputSchema", "outputSchema":
			g.schema(p, o, n)
		case "annotations":
			g.annotations(p, o, n)
		case "_meta":
			g.add(RuleMetaChanged, kindOf(o, n), p, o, n, "_meta "+verb(o, n)+": clients and extensions act on it, models may see it")
		case "icons":
			g.add(RuleIconsChanged, kindOf(o, n), p, o, n, "icons "+verb(o, n)+": shown to people, never to the model")
		default:
			g.add(RuleFieldChanged, kindOf(o, n), p, o, n, fmt.Sprintf("member %q %s: clients may pass it to the model", k, verb(o, n)))
		}
	}
}

// hint is one of the four behaviour hints of MCP tool annotations.
type hint struct {
	name   string
	def    bool // the value the MCP specification assumes when the hint is absent
	danger bool // the value that makes the tool more dangerous
}

var hints = []hint{
	{"readOnlyHint", false, false},
	{"destructiveHint", true, true},
	{"idempotentHint", false, false},
	{"openWorldHint", true, true},
}

func (g *grader) annotations(ptr string, o, n any) {
	om, _ := o.(map[string]any)
	nm, _ := n.(map[string]any)
	if (!isAbsent(o) && om == nil) || (!isAbsent(n) && nm == nil) {
		g.add(RuleAnnotationChanged, kindOf(o, n), ptr, o, n, "annotations "+verb(o, n)+" and are not an object")
		if om == nil && nm == nil {
			return
		}
	}
	for _, k := range unionKeys(om, nm) {
		ov, nv := member(om, k), member(nm, k)
		if equal(ov, nv) {
			continue
		}
		p := ptr + "/" + escapePointer(k)
		if k == "title" {
			g.add(RuleTitleChanged, kindOf(ov, nv), p, ov, nv, "annotations.title "+verb(ov, nv)+": people and some clients show it in place of the name")
			continue
		}
		i := slices.IndexFunc(hints, func(h hint) bool { return h.name == k })
		if i < 0 {
			g.add(RuleAnnotationChanged, kindOf(ov, nv), p, ov, nv, fmt.Sprintf("annotation %q %s", k, verb(ov, nv)))
			continue
		}
		h := hints[i]
		eo, en := effective(ov, h.def), effective(nv, h.def)
		switch {
		case eo == en:
			g.add(RuleAnnotationRestated, kindOf(ov, nv), p, ov, nv,
				fmt.Sprintf("%s %s; its effective value is still %v (absent or non-boolean means %v)", k, verb(ov, nv), en, h.def))
		case en == h.danger:
			g.add(RuleAnnotationTowardDanger, kindOf(ov, nv), p, ov, nv,
				fmt.Sprintf("%s went from %v to %v (absent or non-boolean means %v): the tool now says it %s", k, eo, en, h.def, hintMeaning(k, en)))
		default:
			g.add(RuleAnnotationTowardSafety, kindOf(ov, nv), p, ov, nv,
				fmt.Sprintf("%s went from %v to %v: the tool now says it %s", k, eo, en, hintMeaning(k, en)))
		}
	}
}

func effective(v any, def bool) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	return def
}

func hintMeaning(name string, v bool) string {
	switch name {
	case "readOnlyHint":
		if v {
			return "does not modify its environment"
		}
		return "may modify its environment"
	case "destructiveHint":
		if v {
			return "may perform destructive updates"
		}
		return "performs only additive updates"
	case "idempotentHint":
		if v {
			return "is idempotent: repeated calls have no additional effect"
		}
		return "may have additional effects when called again with the same arguments"
	default: // openWorldHint
		if v {
			return "may interact with an open world of external entities"
		}
		return "works in a closed domain"
	}
}
