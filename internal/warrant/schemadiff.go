package warrant

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The semantic schema diff: JSON Schema (2020-12, with the draft-07 spellings MCP servers
// still send) compared keyword by keyword, every difference reported at its JSON pointer.

// schema compares two schemas at ptr; either may be absent.
func (g *grader) schema(ptr string, o, n any) {
	if equal(o, n) {
		return
	}
	switch {
	case isAbsent(o):
		g.add(RuleSchemaChanged, Added, ptr, o, n, "schema added")
		g.descriptionsIn(ptr, n, Added)
		return
	case isAbsent(n):
		g.add(RuleSchemaChanged, Removed, ptr, o, n, "schema removed")
		g.descriptionsIn(ptr, o, Removed)
		return
	}
	om, oObj := o.(map[string]any)
	nm, nObj := n.(map[string]any)
	_, oBool := o.(bool)
	_, nBool := n.(bool)
	if !(oObj || oBool) || !(nObj || nBool) {
		g.add(RuleSchemaChanged, Changed, ptr, o, n, "changed to or from a value that is not a JSON Schema")
		return
	}
	if oObj && nObj {
		g.schemaObject(ptr, om, nm)
		return
	}
	// At least one side is a boolean schema: compare how much each accepts.
	ro, rn := schemaRank(o), schemaRank(n)
	switch {
	case rn > ro:
		g.add(RuleTypeWidened, Changed, ptr, o, n, "the schema now accepts more values ("+rankWord(ro)+" → "+rankWord(rn)+")")
	case rn < ro:
		g.add(RuleSchemaNarrowed, Changed, ptr, o, n, "the schema now accepts fewer values ("+rankWord(ro)+" → "+rankWord(rn)+")")
	default:
		g.add(RuleSchemaEquivalent, Changed, ptr, o, n, "the schema accepts the same values ("+rankWord(rn)+")")
	}
	if oObj {
		g.descriptionsIn(ptr, om, Removed)
	}
	if nObj {
		g.descriptionsIn(ptr, nm, Added)
	}
}

// schemaRank orders schemas by what they accept: false (nothing) < a constraining object
// < true, {} or absent (everything).
func schemaRank(v any) int {
	switch x := v.(type) {
	case bool:
		if x {
			return 2
		}
		return 0
	case map[string]any:
		if len(x) == 0 {
			return 2
		}
		return 1
	}
	if isAbsent(v) {
		return 2
	}
	return 1
}

func rankWord(r int) string {
	return [...]string{"nothing", "constrained values", "anything"}[r]
}

func (g *grader) schemaObject(ptr string, om, nm map[string]any) {
	for _, k := range unionKeys(om, nm) {
		o, n := member(om, k), member(nm, k)
		if equal(o, n) {
			continue
		}
		p := ptr + "/" + escapePointer(k)
		switch k {
		case "description":
			if _, isStr := o.(string); !isStr && !isAbsent(o) {
				g.add(RuleSchemaChanged, kindOf(o, n), p, o, n, "keyword \"description\" "+verb(o, n))
				continue
			}
			g.add(RuleSchemaDescriptionChanged, kindOf(o, n), p, o, n,
				"a schema description "+verb(o, n)+": the model reads it when it fills in arguments, so new wording can ask it for anything")
		case "type":
			g.typeChange(p, o, n)
		case "required":
			g.required(p, o, n)
		case "additionalProperties", "unevaluatedProperties":
			g.additional(p, k, o, n)
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
			g.schemaMap(p, k, o, n)
		case "items":
			if _, isList := o.([]any); isList {
				g.schemaList(p, k, o, n)
			} else if _, isList := n.([]any); isList {
				g.schemaList(p, k, o, n)
			} else {
				g.schema(p, o, n)
			}
		case "additionalItems", "unevaluatedItems", "not", "if", "then", "else", "contains", "propertyNames", "contentSchema":
			g.schema(p, o, n)
		case "anyOf", "oneOf", "allOf", "prefixItems":
			g.schemaList(p, k, o, n)
		case "x-mcp-header":
			g.add(RuleHeaderMirrorChanged, kindOf(o, n), p, o, n, fmt.Sprintf("x-mcp-header %s: under MCP 2026-07-28 the client copies this argument into the HTTP header Mcp-Param-%v, where proxies and logs see it", verb(o, n), headerName(o, n)))
		default:
			g.add(RuleSchemaChanged, kindOf(o, n), p, o, n, fmt.Sprintf("keyword %q %s", k, verb(o, n)))
		}
	}
}

// typeSet reads a "type" keyword: nil for absent (any type), ok=false when malformed.
func typeSet(v any) (map[string]bool, bool) {
	if isAbsent(v) {
		return nil, true
	}
	set := map[string]bool{}
	switch x := v.(type) {
	case string:
		set[x] = true
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			set[s] = true
		}
	default:
		return nil, false
	}
	return set, true
}

// covered reports whether type t is accepted by set (nil: any type).
func covered(t string, set map[string]bool) bool {
	return set == nil || set[t] || t == "integer" && set["number"]
}

func typeWords(set map[string]bool) string {
	if set == nil {
		return "any type"
	}
	var ts []string
	for t := range set {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return strings.Join(ts, "|")
}

// malformed reports that keyword's value changed and is not of its form on one side or
// both; what, when set, says what it is not ("not a schema").
func (g *grader) malformed(ptr, keyword string, o, n any, what string) {
	msg := fmt.Sprintf("keyword %q %s", keyword, verb(o, n))
	if what != "" {
		msg += " (" + what + ")"
	}
	g.add(RuleSchemaChanged, kindOf(o, n), ptr, o, n, msg)
}

// parseBoth reads keyword's old and new values with parse; false, the keyword reported as
// malformed (what it is not), when either is not of its form.
func parseBoth[T any](g *grader, ptr, keyword string, o, n any, parse func(any) (T, bool), what string) (T, T, bool) {
	ov, ok1 := parse(o)
	nv, ok2 := parse(n)
	if !ok1 || !ok2 {
		g.malformed(ptr, keyword, o, n, what)
		return ov, nv, false
	}
	return ov, nv, true
}

func (g *grader) typeChange(ptr string, o, n any) {
	os, ns, ok := parseBoth(g, ptr, "type", o, n, typeSet, "not a type name or list of them")
	if !ok {
		return
	}
	widened, narrowed := false, false
	if ns == nil && os != nil {
		widened = true
	}
	if os == nil && ns != nil {
		narrowed = true
	}
	for t := range ns {
		if !covered(t, os) {
			widened = true
		}
	}
	for t := range os {
		if !covered(t, ns) {
			narrowed = true
		}
	}
	from, to := typeWords(os), typeWords(ns)
	switch {
	case widened:
		g.add(RuleTypeWidened, kindOf(o, n), ptr, o, n, "type widened from "+from+" to "+to+": the schema accepts values it refused before")
	case narrowed:
		g.add(RuleSchemaNarrowed, kindOf(o, n), ptr, o, n, "type narrowed from "+from+" to "+to)
	default:
		g.add(RuleSchemaEquivalent, kindOf(o, n), ptr, o, n, "type restated with the same accepted types ("+to+")")
	}
}

// stringList reads a list of strings ("required"); nil for absent, ok=false when malformed.
func stringList(v any) ([]string, bool) {
	if isAbsent(v) {
		return nil, true
	}
	x, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(x))
	for _, e := range x {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (g *grader) required(ptr string, o, n any) {
	ol, nl, ok := parseBoth(g, ptr, "required", o, n, stringList, "not a list of names")
	if !ok {
		return
	}
	found := false
	for _, name := range sortedUnique(nl) {
		if !slices.Contains(ol, name) {
			found = true
			g.add(RuleRequiredAdded, Added, ptr, absent, name,
				fmt.Sprintf("property %q is now required: every call must now supply it, and the model will fill it with whatever the descriptions ask for", name))
		}
	}
	for _, name := range sortedUnique(ol) {
		if !slices.Contains(nl, name) {
			found = true
			g.add(RuleSchemaChanged, Removed, ptr, name, absent, fmt.Sprintf("property %q is no longer required", name))
		}
	}
	if !found {
		g.add(RuleSchemaEquivalent, Changed, ptr, o, n, "the same required names, reordered or repeated")
	}
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func (g *grader) additional(ptr, keyword string, o, n any) {
	_, oObj := o.(map[string]any)
	_, nObj := n.(map[string]any)
	_, oBool := o.(bool)
	_, nBool := n.(bool)
	if !(oObj || oBool || isAbsent(o)) || !(nObj || nBool || isAbsent(n)) {
		g.malformed(ptr, keyword, o, n, "not a schema")
		return
	}
	ro, rn := schemaRank(o), schemaRank(n)
	switch {
	case ro == 1 && rn == 1:
		g.schema(ptr, o, n)
		return
	case rn > ro:
		g.add(RuleAdditionalWidened, kindOf(o, n), ptr, o, n,
			fmt.Sprintf("%s widened (%s → %s): the tool now accepts members no property describes, a channel for anything the model can be talked into sending", keyword, rankWord(ro), rankWord(rn)))
	case rn < ro:
		g.add(RuleSchemaNarrowed, kindOf(o, n), ptr, o, n, fmt.Sprintf("%s narrowed (%s → %s)", keyword, rankWord(ro), rankWord(rn)))
	default:
		g.add(RuleSchemaEquivalent, kindOf(o, n), ptr, o, n, fmt.Sprintf("%s restated (%s)", keyword, rankWord(rn)))
	}
	if oObj {
		g.descriptionsIn(ptr, o, Removed)
	}
	if nObj {
		g.descriptionsIn(ptr, n, Added)
	}
}

// schemaMap compares a keyword whose value maps names to schemas (properties, $defs, ...).
func (g *grader) schemaMap(ptr, keyword string, o, n any) {
	om, oObj := o.(map[string]any)
	nm, nObj := n.(map[string]any)
	if !(oObj || isAbsent(o)) || !(nObj || isAbsent(n)) {
		g.malformed(ptr, keyword, o, n, "not an object")
		return
	}
	what := "entry"
	switch keyword {
	case "properties":
		what = "property"
	case "$defs", "definitions":
		what = "definition"
	case "patternProperties":
		what = "pattern property"
	}
	for _, name := range unionKeys(om, nm) {
		ov, nv := member(om, name), member(nm, name)
		if equal(ov, nv) {
			continue
		}
		p := ptr + "/" + escapePointer(name)
		switch {
		case isAbsent(ov):
			g.add(RuleSchemaChanged, Added, p, ov, nv, fmt.Sprintf("%s %q added", what, name))
			g.descriptionsIn(p, nv, Added)
		case isAbsent(nv):
			g.add(RuleSchemaChanged, Removed, p, ov, nv, fmt.Sprintf("%s %q removed", what, name))
			g.descriptionsIn(p, ov, Removed)
		default:
			g.schema(p, ov, nv)
		}
	}
}

// schemaList compares a keyword whose value is a list of schemas, position by position.
func (g *grader) schemaList(ptr, keyword string, o, n any) {
	ol, oList := o.([]any)
	nl, nList := n.([]any)
	if !(oList || isAbsent(o)) || !(nList || isAbsent(n)) {
		g.malformed(ptr, keyword, o, n, "")
		return
	}
	// A branch added to anyOf/oneOf accepts more; a branch added to allOf or prefixItems
	// constrains more (or describes more positions) and is an ordinary schema change.
	widening := keyword == "anyOf" || keyword == "oneOf"
	for i := 0; i < max(len(ol), len(nl)); i++ {
		p := ptr + "/" + strconv.Itoa(i)
		switch {
		case i >= len(ol):
			if widening {
				g.add(RuleTypeWidened, Added, p, absent, nl[i], keyword+" gained a branch: the schema accepts values it refused before")
			} else {
				g.add(RuleSchemaChanged, Added, p, absent, nl[i], fmt.Sprintf("%s gained entry %d", keyword, i))
			}
			g.descriptionsIn(p, nl[i], Added)
		case i >= len(nl):
			if widening {
				g.add(RuleSchemaNarrowed, Removed, p, ol[i], absent, keyword+" lost a branch")
			} else {
				g.add(RuleSchemaChanged, Removed, p, ol[i], absent, fmt.Sprintf("%s lost entry %d", keyword, i))
			}
			g.descriptionsIn(p, ol[i], Removed)
		default:
			g.schema(p, ol[i], nl[i])
		}
	}
}

// descriptionsIn reports every description string inside a schema that was added or
// removed as a whole, so new words never hide inside a new property.
func (g *grader) descriptionsIn(ptr string, v any, kind ChangeKind) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range unionKeys(x, nil) {
			p := ptr + "/" + escapePointer(k)
			if h, ok := x[k].(string); ok && k == "x-mcp-header" {
				if kind == Added {
					g.add(RuleHeaderMirrorChanged, Added, p, absent, h, "x-mcp-header added with a new property: under MCP 2026-07-28 the client copies this argument into the HTTP header Mcp-Param-"+h+", where proxies and logs see it")
				} else {
					g.add(RuleHeaderMirrorChanged, Removed, p, h, absent, "x-mcp-header removed with its property")
				}
				continue
			}
			if s, ok := x[k].(string); ok && k == "description" {
				if kind == Added {
					g.add(RuleSchemaDescriptionChanged, Added, p, absent, s, "a schema description added: the model reads it when it fills in arguments")
				} else {
					g.add(RuleSchemaDescriptionChanged, Removed, p, s, absent, "a schema description removed: it may have been what kept the model from misusing the tool")
				}
				continue
			}
			g.descriptionsIn(p, x[k], kind)
		}
	case []any:
		for i, e := range x {
			g.descriptionsIn(ptr+"/"+strconv.Itoa(i), e, kind)
		}
	}
}

// headerName is the header an x-mcp-header marking names (the new one, else the old one).
func headerName(o, n any) any {
	if s, ok := n.(string); ok {
		return s
	}
	if s, ok := o.(string); ok {
		return s
	}
	return "…"
}
