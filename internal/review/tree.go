package review

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Node is one member or element of a schema, old and new side by side.
type Node struct {
	// Key is the member name, or "[i]" for an array element; "" at the root.
	Key Text
	// Status is same, added, removed or changed (a leaf whose value changed; a container
	// is changed when something under it is).
	Status string
	// Old and New are a leaf's values as JSON (nil when absent on that side).
	Old, New Text
	// Kind is "object", "array" or "" for a leaf.
	Kind     string
	Children []Node
	// Severity and Rules are those of the graded changes at exactly this pointer.
	Severity string
	Rules    []string
	// Open is true when the node or something under it changed: the page shows it
	// unfolded.
	Open bool
	// Pointer is the node's JSON pointer, shown in its title.
	Pointer string
}

// Tree limits: a hostile schema cannot make the page unbounded.
const (
	maxTreeNodes = 4000
	maxTreeDepth = 64
)

type treeBuilder struct {
	at    map[string][]warrant.Change
	nodes int
}

type absentT struct{}

var absent any = absentT{}

// schemaTrees returns the merged old/new tree of inputSchema and outputSchema (when
// either version has it), with the graded changes at their pointers.
func schemaTrees(oldDef, newDef []byte, changes []warrant.Change) []Node {
	ov, nv := decodeObject(oldDef), decodeObject(newDef)
	b := &treeBuilder{at: map[string][]warrant.Change{}}
	for _, c := range changes {
		b.at[c.Pointer] = append(b.at[c.Pointer], c)
	}
	var out []Node
	for _, k := range []string{"inputSchema", "outputSchema"} {
		o, n := member(ov, k), member(nv, k)
		if o == absent && n == absent {
			continue
		}
		out = append(out, b.node("/"+k, k, o, n, 0))
	}
	return out
}

func decodeObject(b []byte) map[string]any {
	if b == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

func member(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent
}

func (b *treeBuilder) node(ptr, key string, o, n any, depth int) Node {
	b.nodes++
	nd := Node{Key: textOf(key), Pointer: textOf(ptr).String()}
	if cs := b.at[ptr]; len(cs) > 0 {
		sev := warrant.SeverityNone
		for _, c := range cs {
			sev = max(sev, c.Severity)
			if !slices.Contains(nd.Rules, string(c.Rule)) {
				nd.Rules = append(nd.Rules, string(c.Rule))
			}
		}
		nd.Severity = sev.String()
	}
	om, oIsMap := o.(map[string]any)
	nm, nIsMap := n.(map[string]any)
	oa, oIsArr := o.([]any)
	na, nIsArr := n.([]any)
	switch {
	case depth >= maxTreeDepth || b.nodes >= maxTreeNodes:
		nd.Status = status(o, n)
		nd.Old, nd.New = leaf(o), leaf(n)
	case (oIsMap || o == absent) && (nIsMap || n == absent) && (oIsMap || nIsMap):
		nd.Kind = "object"
		keys := map[string]bool{}
		for k := range om {
			keys[k] = true
		}
		for k := range nm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			nd.Children = append(nd.Children, b.node(ptr+"/"+escapePointer(k), k, member(om, k), member(nm, k), depth+1))
		}
	case (oIsArr || o == absent) && (nIsArr || n == absent) && (oIsArr || nIsArr):
		nd.Kind = "array"
		for i := range max(len(oa), len(na)) {
			ov, nv := absent, absent
			if i < len(oa) {
				ov = oa[i]
			}
			if i < len(na) {
				nv = na[i]
			}
			nd.Children = append(nd.Children, b.node(ptr+"/"+strconv.Itoa(i), "["+strconv.Itoa(i)+"]", ov, nv, depth+1))
		}
	default:
		nd.Status = status(o, n)
		nd.Old, nd.New = leaf(o), leaf(n)
	}
	if nd.Kind != "" {
		nd.Status = status(o, n)
		if nd.Status == "changed" || nd.Status == "same" {
			nd.Status = "same"
			for _, c := range nd.Children {
				if c.Status != "same" {
					nd.Status = "changed"
					break
				}
			}
		}
	}
	nd.Open = nd.Status != "same" || nd.Severity != ""
	for _, c := range nd.Children {
		nd.Open = nd.Open || c.Open
	}
	if b.nodes == maxTreeNodes {
		nd.Children = append(nd.Children, Node{Key: Text{{Text: "… the tree is cut here; the canonical definition below has everything"}}, Status: "same"})
		b.nodes++
	}
	return nd
}

func status(o, n any) string {
	switch {
	case o == absent && n == absent:
		return "same"
	case o == absent:
		return "added"
	case n == absent:
		return "removed"
	case equalJSON(o, n):
		return "same"
	}
	return "changed"
}

// equalJSON compares two decoded values (json.Number compared as text: the definitions
// are canonical).
func equalJSON(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// leaf renders a value as JSON, nil when absent.
func leaf(v any) Text {
	if v == absent {
		return nil
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return Text{{Text: "?"}}
	}
	return textOf(strings.TrimSuffix(buf.String(), "\n"))
}

// escapePointer escapes one JSON pointer reference token (RFC 6901 §3).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
