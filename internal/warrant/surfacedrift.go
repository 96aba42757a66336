package warrant

import (
	"fmt"
	"slices"
	"strconv"
)

// Grading of the rest of a server's surface: what agentgate.lock version 2 pins besides
// tools. The rules are the tools' rules wherever they mean the same thing (a description is
// a description, hidden characters are hidden characters), and a few of their own.

// Kind names what a graded definition is.
type Kind string

// Kinds of definitions.
const (
	KindTool             Kind = "tool"
	KindPrompt           Kind = "prompt"
	KindResource         Kind = "resource"
	KindResourceTemplate Kind = "resourceTemplate"
)

func (k Kind) noun() string {
	switch k {
	case KindPrompt:
		return "prompt"
	case KindResource:
		return "resource"
	case KindResourceTemplate:
		return "resource template"
	}
	return "tool"
}

// GradeItem compares two versions of a prompt, resource or resource template (JSON objects
// as served) and grades every difference; for KindTool it is [Grade]. old nil means the
// item is new. It fails only when a definition is not acceptable JSON.
func GradeItem(kind Kind, old, new []byte, opts GradeOptions) (Drift, error) {
	if kind == KindTool {
		return Grade(old, new, opts)
	}
	nv, nc, err := decodeTool(new)
	if err != nil {
		return Drift{}, fmt.Errorf("new definition: %w", err)
	}
	g := &grader{}
	if old == nil {
		rule := RuleNewPrompt
		if kind != KindPrompt {
			rule = RuleNewResource
		}
		g.add(rule, Added, "", absent, absent, "a "+kind.noun()+" not seen before on this server: read its whole definition before trusting it")
		g.suspicious("", absent, nv)
		return g.result(), nil
	}
	ov, oc, err := decodeTool(old)
	if err != nil {
		return Drift{}, fmt.Errorf("old definition: %w", err)
	}
	if string(oc) == string(nc) {
		return Drift{Changes: []Change{}}, nil
	}
	g.item(kind, ov, nv)
	g.suspicious("", ov, nv)
	if len(g.changes) == 0 {
		g.add(RuleFieldChanged, Changed, "", ov, nv, "the definition changed in a way no other rule classifies")
	}
	return g.result(), nil
}

// GradeRemoved grades a definition that is no longer served.
func GradeRemoved(kind Kind) Drift {
	g := &grader{}
	g.add(RuleRemoved, Removed, "", absent, absent, "the "+kind.noun()+" is no longer served: agents that relied on it lose it, but nothing new reaches the model")
	return g.result()
}

// GradeInstructions compares two versions of a server's instructions (nil: none sent).
func GradeInstructions(old, new *string) Drift {
	g := &grader{}
	o, n := absent, absent
	if old != nil {
		o = *old
	}
	if new != nil {
		n = *new
	}
	if equal(o, n) {
		return Drift{Changes: []Change{}}
	}
	g.add(RuleInstructionsChanged, kindOf(o, n), "/instructions", o, n,
		"the server's instructions "+verb(o, n)+": clients put them in front of the model, often in its system prompt, so new wording can ask it for anything")
	g.suspicious("/instructions", o, n)
	return g.result()
}

func (g *grader) item(kind Kind, old, new map[string]any) {
	what := "the " + kind.noun() + "'s"
	for _, k := range unionKeys(old, new) {
		o, n := member(old, k), member(new, k)
		if equal(o, n) {
			continue
		}
		p := "/" + escapePointer(k)
		switch {
		case k == "description":
			g.add(RuleDescriptionChanged, kindOf(o, n), p, o, n,
				what+" description "+verb(o, n)+": the model reads it, so any change to it changes what the model is told")
		case k == "title":
			g.add(RuleTitleChanged, kindOf(o, n), p, o, n, what+" title "+verb(o, n)+": people and some clients show it in place of the name")
		case k == "_meta":
			g.add(RuleMetaChanged, kindOf(o, n), p, o, n, "_meta "+verb(o, n)+": clients and extensions act on it, models may see it")
		case k == "icons":
			g.add(RuleIconsChanged, kindOf(o, n), p, o, n, "icons "+verb(o, n)+": shown to people, never to the model")
		case k == "arguments" && kind == KindPrompt:
			g.arguments(p, o, n)
		case k == "annotations" && kind != KindPrompt:
			g.plainAnnotations(p, o, n)
		default:
			g.add(RuleFieldChanged, kindOf(o, n), p, o, n, fmt.Sprintf("member %q %s: clients may pass it to the model", k, verb(o, n)))
		}
	}
}

// plainAnnotations grades resource annotations (audience, priority, lastModified): any
// change is worth a reviewer's look, none by itself puts words in front of the model.
func (g *grader) plainAnnotations(ptr string, o, n any) {
	om, oOK := o.(map[string]any)
	nm, nOK := n.(map[string]any)
	if (!isAbsent(o) && !oOK) || (!isAbsent(n) && !nOK) {
		g.add(RuleAnnotationChanged, kindOf(o, n), ptr, o, n, "annotations "+verb(o, n)+" and are not an object")
		return
	}
	for _, k := range unionKeys(om, nm) {
		ov, nv := member(om, k), member(nm, k)
		if equal(ov, nv) {
			continue
		}
		reason := fmt.Sprintf("annotation %q %s", k, verb(ov, nv))
		if k == "audience" {
			reason += ": it says who the content is meant for, the user or the assistant (the model)"
		}
		g.add(RuleAnnotationChanged, kindOf(ov, nv), ptr+"/"+escapePointer(k), ov, nv, reason)
	}
}

// argument is one prompt argument as served, with its position.
type argument struct {
	index int
	v     map[string]any
}

// promptArguments indexes a prompt's "arguments" by name; ok is false when it is not a
// list of objects with distinct string names.
func promptArguments(v any) (map[string]argument, []string, bool) {
	if isAbsent(v) {
		return map[string]argument{}, nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, nil, false
	}
	out := map[string]argument{}
	var order []string
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		name, ok := m["name"].(string)
		if !ok {
			return nil, nil, false
		}
		if _, dup := out[name]; dup {
			return nil, nil, false
		}
		out[name] = argument{i, m}
		order = append(order, name)
	}
	return out, order, true
}

func required(m map[string]any) bool {
	b, _ := m["required"].(bool)
	return b
}

// arguments compares a prompt's arguments by name: the model fills them in from their
// descriptions, as it fills a tool's input schema.
func (g *grader) arguments(ptr string, o, n any) {
	oa, oOrder, ok1 := promptArguments(o)
	na, nOrder, ok2 := promptArguments(n)
	if !ok1 || !ok2 {
		g.add(RuleArgumentChanged, kindOf(o, n), ptr, o, n, "arguments "+verb(o, n)+" (not a list of named arguments)")
		return
	}
	names := append(slices.Clone(oOrder), nOrder...)
	slices.Sort(names)
	names = slices.Compact(names)
	found := false
	for _, name := range names {
		oArg, inOld := oa[name]
		nArg, inNew := na[name]
		switch {
		case !inOld:
			found = true
			p := ptr + "/" + strconv.Itoa(nArg.index)
			if required(nArg.v) {
				g.add(RuleRequiredAdded, Added, p, absent, nArg.v, fmt.Sprintf("required argument %q added: every use of the prompt must now supply it", name))
			} else {
				g.add(RuleArgumentChanged, Added, p, absent, nArg.v, fmt.Sprintf("optional argument %q added", name))
			}
			if d, ok := nArg.v["description"].(string); ok {
				g.add(RuleArgumentDescriptionChanged, Added, p+"/description", absent, d, fmt.Sprintf("argument %q comes with a description: the model reads it when it fills the argument in", name))
			}
		case !inNew:
			found = true
			p := ptr + "/" + strconv.Itoa(oArg.index)
			g.add(RuleArgumentChanged, Removed, p, oArg.v, absent, fmt.Sprintf("argument %q removed", name))
			if d, ok := oArg.v["description"].(string); ok {
				g.add(RuleArgumentDescriptionChanged, Removed, p+"/description", d, absent, fmt.Sprintf("argument %q's description removed with it: it may have been what kept the model from misusing the prompt", name))
			}
		default:
			p := ptr + "/" + strconv.Itoa(nArg.index)
			for _, k := range unionKeys(oArg.v, nArg.v) {
				ov, nv := member(oArg.v, k), member(nArg.v, k)
				if equal(ov, nv) {
					continue
				}
				found = true
				kp := p + "/" + escapePointer(k)
				switch k {
				case "description":
					g.add(RuleArgumentDescriptionChanged, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q's description %s: the model reads it when it fills the argument in", name, verb(ov, nv)))
				case "required":
					if required(nArg.v) && !required(oArg.v) {
						g.add(RuleRequiredAdded, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q is now required", name))
					} else if required(nArg.v) == required(oArg.v) {
						g.add(RuleSchemaEquivalent, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q restates required: %v", name, required(nArg.v)))
					} else {
						g.add(RuleArgumentChanged, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q is no longer required", name))
					}
				case "title":
					g.add(RuleTitleChanged, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q's title %s", name, verb(ov, nv)))
				default:
					g.add(RuleArgumentChanged, kindOf(ov, nv), kp, ov, nv, fmt.Sprintf("argument %q: member %q %s", name, k, verb(ov, nv)))
				}
			}
		}
	}
	if !found {
		g.add(RuleSchemaEquivalent, Changed, ptr, o, n, "the same arguments, reordered")
	}
}
