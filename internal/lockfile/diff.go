package lockfile

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// Change says how a server or tool differs between the lockfile and the live surface.
type Change string

const (
	// Added means live but not locked.
	Added Change = "added"
	// Removed means locked but no longer live.
	Removed Change = "removed"
	// Changed means present in both with different hashes.
	Changed Change = "changed"
)

// Field names one of the pinned fields of a tool.
type Field string

const (
	FieldName        Field = "name"
	FieldDescription Field = "description"
	FieldInputSchema Field = "inputSchema"
)

// Report is the difference between a locked and a live surface. Its JSON form is the
// output of agentgate diff --json and is documented in docs/agentgate.md.
type Report struct {
	// Drift is true when anything differs.
	Drift bool `json:"drift"`
	// Servers lists the servers that differ, sorted by name.
	Servers []ServerDiff `json:"servers"`
}

// ServerDiff is how one server differs.
type ServerDiff struct {
	// Server is the server's name in the client configuration.
	Server string `json:"server"`
	// Change is Added (configured but not in the lockfile), Removed (locked but no longer
	// configured) or Changed.
	Change Change `json:"change"`
	// LockedSurfaceHash and LiveSurfaceHash are the two surface hashes ("" on the absent side).
	LockedSurfaceHash string `json:"lockedSurfaceHash"`
	LiveSurfaceHash   string `json:"liveSurfaceHash"`
	// Tools lists the tools that differ, sorted by name.
	Tools []ToolDiff `json:"tools"`
}

// ToolDiff is how one tool differs.
type ToolDiff struct {
	// Tool is the tool's name: the live name, or the locked one for a removed tool.
	Tool string `json:"tool"`
	// Change is Added, Removed or Changed.
	Change Change `json:"change"`
	// Fields lists, for a changed tool, which of name, description and inputSchema changed,
	// in that order.
	Fields []Field `json:"fields,omitempty"`
	// OldName is the locked name of a renamed tool (Fields contains FieldName): a removed
	// and an added tool whose description and input schema hashes both match.
	OldName string `json:"oldName,omitempty"`
	// Locked and Live are the hashes on each side (nil on the absent side).
	Locked *Tool `json:"locked"`
	Live   *Tool `json:"live"`
	// Description is the word-level diff of a changed description, when both texts are
	// known: the live one always, the locked one from a snapshot whose hash matches.
	Description *TextDiff `json:"description,omitempty"`
	// LockedText and LiveText are the definitions on each side when known (for display of
	// added and removed tools, and of schema changes).
	LockedText *Definition `json:"-"`
	LiveText   *Definition `json:"-"`
}

// TextDiff is a word-level diff of two texts.
type TextDiff struct {
	// Old is the locked text, or nil when no snapshot holds it.
	Old *string `json:"old"`
	// New is the live text.
	New string `json:"new"`
	// Ops, when Old is known, turn Old into New: equal, delete and insert runs of words
	// and the whitespace between them.
	Ops []TextOp `json:"ops,omitempty"`
}

// TextOp is one run of a word-level diff.
type TextOp struct {
	// Op is "equal", "delete" or "insert".
	Op string `json:"op"`
	// Text is the run's text, verbatim (invisible characters included).
	Text string `json:"text"`
}

// CompareOptions supplies the texts behind the hashes, for word-level diffs. Both are
// optional; a definition is used only if its hashes match the entry it is shown for.
type CompareOptions struct {
	// Locked holds the definitions the lockfile was generated from (a snapshot).
	Locked Surface
	// Live holds the definitions just listed.
	Live Surface
}

// Compare reports how live differs from locked. GeneratedBy and GeneratedAt are ignored.
// Servers present on only one side are Added or Removed with all their tools.
func Compare(locked, live *Lockfile, opts CompareOptions) *Report {
	r := &Report{Servers: []ServerDiff{}}
	for _, name := range unionNames(locked.Servers, live.Servers) {
		ls, inLocked := locked.Servers[name]
		vs, inLive := live.Servers[name]
		sd := ServerDiff{Server: name, LockedSurfaceHash: ls.SurfaceHash, LiveSurfaceHash: vs.SurfaceHash}
		switch {
		case inLocked && !inLive:
			sd.Change = Removed
		case !inLocked && inLive:
			sd.Change = Added
		default:
			sd.Change = Changed
			if ls.SurfaceHash == vs.SurfaceHash && sameTools(ls.Tools, vs.Tools) {
				continue
			}
		}
		sd.Tools = compareTools(name, ls.Tools, vs.Tools, opts)
		r.Servers = append(r.Servers, sd)
	}
	r.Drift = len(r.Servers) > 0
	return r
}

func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func compareTools(server string, locked, live []Tool, opts CompareOptions) []ToolDiff {
	lockedBy := map[string]Tool{}
	for _, t := range locked {
		lockedBy[t.Name] = t
	}
	liveBy := map[string]Tool{}
	for _, t := range live {
		liveBy[t.Name] = t
	}
	var diffs, removed, added []ToolDiff
	for _, t := range locked {
		if _, ok := liveBy[t.Name]; !ok {
			lt := t
			removed = append(removed, ToolDiff{Tool: t.Name, Change: Removed, Locked: &lt})
		}
	}
	for _, t := range live {
		vt := t
		lt, ok := lockedBy[t.Name]
		if !ok {
			added = append(added, ToolDiff{Tool: t.Name, Change: Added, Live: &vt})
			continue
		}
		if lt == t {
			continue
		}
		ltc := lt
		d := ToolDiff{Tool: t.Name, Change: Changed, Locked: &ltc, Live: &vt}
		if lt.DescriptionHash != t.DescriptionHash {
			d.Fields = append(d.Fields, FieldDescription)
		}
		if lt.InputSchemaHash != t.InputSchemaHash {
			d.Fields = append(d.Fields, FieldInputSchema)
		}
		diffs = append(diffs, d)
	}
	// A removed and an added tool with the same description and schema is a rename.
	for i := range added {
		for j := range removed {
			a, r := added[i].Live, removed[j].Locked
			if r == nil || a == nil || a.DescriptionHash != r.DescriptionHash || a.InputSchemaHash != r.InputSchemaHash {
				continue
			}
			if countMatches(added, r) != 1 || countMatches(removed, a) != 1 {
				continue // ambiguous: several tools share these hashes
			}
			added[i].Change, added[i].Fields, added[i].OldName, added[i].Locked = Changed, []Field{FieldName}, r.Name, r
			removed[j].Locked = nil
			break
		}
	}
	diffs = append(diffs, added...)
	for _, r := range removed {
		if r.Locked != nil {
			diffs = append(diffs, r)
		}
	}
	for i := range diffs {
		attachTexts(server, &diffs[i], opts)
	}
	sort.SliceStable(diffs, func(i, j int) bool { return Less(diffs[i].Tool, diffs[j].Tool) })
	return diffs
}

func countMatches(ds []ToolDiff, t *Tool) int {
	n := 0
	for _, d := range ds {
		o := d.Live
		if o == nil {
			o = d.Locked
		}
		if o != nil && o.DescriptionHash == t.DescriptionHash && o.InputSchemaHash == t.InputSchemaHash {
			n++
		}
	}
	return n
}

// attachTexts looks up the definitions behind d's hashes and, for a changed description,
// computes the word diff.
func attachTexts(server string, d *ToolDiff, opts CompareOptions) {
	if d.Locked != nil {
		if def, ok := opts.Locked.Find(server, d.Locked.Name); ok && matches(def, *d.Locked) {
			d.LockedText = &def
		}
	}
	if d.Live != nil {
		if def, ok := opts.Live.Find(server, d.Live.Name); ok && matches(def, *d.Live) {
			d.LiveText = &def
		}
	}
	if d.Change != Changed || d.LiveText == nil || !hasField(d.Fields, FieldDescription) {
		return
	}
	td := &TextDiff{New: d.LiveText.Description}
	if d.LockedText != nil {
		old := d.LockedText.Description
		td.Old = &old
		td.Ops = WordDiff(old, td.New)
	}
	d.Description = td
}

func matches(d Definition, t Tool) bool {
	l := d.Lock()
	if len(d.InputSchema) == 0 {
		l.InputSchemaHash = hashString("{}")
	}
	return l == t
}

func hasField(fs []Field, f Field) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// maxDiffCells bounds the work of WordDiff: longer texts are diffed as one replacement.
const maxDiffCells = 4_000_000

// WordDiff returns the runs that turn a into b, splitting both into words and the
// whitespace between them (an invisible character such as U+200B is not whitespace, so it
// stays part of its word and shows up in the changed run). It computes a longest common
// subsequence of tokens; texts too long for that are one delete and one insert.
func WordDiff(a, b string) []TextOp {
	ta, tb := tokens(a), tokens(b)
	// Trim the common prefix and suffix first: descriptions mostly change in one place.
	pre := 0
	for pre < len(ta) && pre < len(tb) && ta[pre] == tb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ta)-pre && suf < len(tb)-pre && ta[len(ta)-1-suf] == tb[len(tb)-1-suf] {
		suf++
	}
	var ops []TextOp
	emit := func(op, text string) {
		if text == "" {
			return
		}
		if n := len(ops); n > 0 && ops[n-1].Op == op {
			ops[n-1].Text += text
			return
		}
		ops = append(ops, TextOp{Op: op, Text: text})
	}
	for _, t := range ta[:pre] {
		emit("equal", t)
	}
	ma, mb := ta[pre:len(ta)-suf], tb[pre:len(tb)-suf]
	if len(ma)*len(mb) > maxDiffCells {
		for _, t := range ma {
			emit("delete", t)
		}
		for _, t := range mb {
			emit("insert", t)
		}
	} else {
		// lcs[i][j] = length of the LCS of ma[i:] and mb[j:].
		lcs := make([][]int32, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				emit("equal", ma[i])
				i++
				j++
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				emit("delete", ma[i])
				i++
			default:
				emit("insert", mb[j])
				j++
			}
		}
	}
	for _, t := range ta[len(ta)-suf:] {
		emit("equal", t)
	}
	return ops
}

// tokens splits s into maximal runs of whitespace and of everything else.
func tokens(s string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		sp := unicode.IsSpace(r) && r != utf8.RuneError
		if i > start && sp != inSpace {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
