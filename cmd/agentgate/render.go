package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/textguard"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// renderer writes the human form of a report.
type renderer struct {
	w                    io.Writer
	color                bool
	lockName, configName string
}

const (
	ansiRed   = "\033[31m"
	ansiGreen = "\033[32m"
	ansiBold  = "\033[1m"
	ansiReset = "\033[0m"
)

func (r renderer) paint(code, s string) string {
	if !r.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (r renderer) report(rep *lockfile.Report, live *lockfile.Lockfile) {
	if !rep.Drift {
		tools := 0
		for _, s := range live.Servers {
			tools += len(s.Tools)
		}
		fmt.Fprintf(r.w, "no drift: %s match %s\n", counts(len(live.Servers), tools), r.lockName)
		return
	}
	for i, s := range rep.Servers {
		if i > 0 {
			fmt.Fprintln(r.w)
		}
		switch s.Change {
		case lockfile.Added:
			fmt.Fprintf(r.w, "%s: not in %s (%s); run 'agentgate lock' to pin it\n", r.paint(ansiBold, fmt.Sprintf("server %q", s.Server)), r.lockName, cli.Count(len(s.Tools), "tool", ""))
		case lockfile.Removed:
			fmt.Fprintf(r.w, "%s: locked, but no longer in %s; run 'agentgate lock' to drop it\n", r.paint(ansiBold, fmt.Sprintf("server %q", s.Server)), r.configName)
		default:
			fmt.Fprintf(r.w, "%s: surface %s → %s\n", r.paint(ansiBold, fmt.Sprintf("server %q", s.Server)), short(s.LockedSurfaceHash), short(s.LiveSurfaceHash))
		}
		for _, t := range s.Tools {
			r.tool(t)
		}
	}
	fmt.Fprintf(r.w, "\ndrift: %s\n", summary(rep))
}

func (r renderer) tool(t lockfile.ToolDiff) {
	name := visible(t.Tool)
	switch {
	case t.Change == lockfile.Added:
		fmt.Fprintf(r.w, "  %s %s: added\n", r.paint(ansiGreen, "+"), name)
		if t.LiveText != nil {
			fmt.Fprintf(r.w, "      description: %s\n", r.paint(ansiGreen, visible(t.LiveText.Description)))
		}
	case t.Change == lockfile.Removed:
		fmt.Fprintf(r.w, "  %s %s: removed\n", r.paint(ansiRed, "-"), name)
		if t.LockedText != nil {
			fmt.Fprintf(r.w, "      description was: %s\n", r.paint(ansiRed, visible(t.LockedText.Description)))
		}
	default:
		var what []string
		for _, f := range t.Fields {
			if f == lockfile.FieldName {
				what = append(what, fmt.Sprintf("name changed (renamed from %s)", visible(t.OldName)))
			} else {
				what = append(what, string(f)+" changed")
			}
		}
		fmt.Fprintf(r.w, "  ~ %s: %s\n", name, strings.Join(what, ", "))
		for _, f := range t.Fields {
			switch f {
			case lockfile.FieldDescription:
				r.description(t)
			case lockfile.FieldInputSchema:
				r.schema(t)
			}
		}
	}
}

func (r renderer) description(t lockfile.ToolDiff) {
	if t.Description == nil {
		fmt.Fprintf(r.w, "      descriptionHash %s → %s\n", short(t.Locked.DescriptionHash), short(t.Live.DescriptionHash))
		return
	}
	r.words(t.Description)
}

// words writes how a description changed, word by word, or only the new words when the
// locked ones are not in the snapshot.
func (r renderer) words(d *lockfile.TextDiff) {
	if d.Old == nil {
		fmt.Fprintf(r.w, "      (the locked words are not in the snapshot) now: %s\n", visible(d.New))
		return
	}
	var b strings.Builder
	for _, op := range d.Ops {
		text := visible(op.Text)
		switch op.Op {
		case "delete":
			b.WriteString(r.paint(ansiRed, "[-"+text+"-]"))
		case "insert":
			b.WriteString(r.paint(ansiGreen, "{+"+text+"+}"))
		default:
			b.WriteString(text)
		}
	}
	fmt.Fprintf(r.w, "      %s\n", b.String())
}

func (r renderer) schema(t lockfile.ToolDiff) {
	if t.LockedText == nil || t.LiveText == nil {
		fmt.Fprintf(r.w, "      inputSchemaHash %s → %s\n", short(t.Locked.InputSchemaHash), short(t.Live.InputSchemaHash))
		return
	}
	changes := schemaChanges(t.LockedText.InputSchema, t.LiveText.InputSchema)
	const maxLines = 12
	for i, c := range changes {
		if i == maxLines {
			fmt.Fprintf(r.w, "      … and %d more\n", len(changes)-maxLines)
			break
		}
		fmt.Fprintf(r.w, "      %s\n", c)
	}
}

// schemaChanges lists the JSON paths at which two canonical schemas differ.
func schemaChanges(a, b []byte) []string {
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return []string{"inputSchema changed"}
	}
	var out []string
	walkDiff("inputSchema", va, vb, &out)
	return out
}

func walkDiff(path string, a, b any, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Slice(sorted, func(i, j int) bool { return lockfile.Less(sorted[i], sorted[j]) })
		for _, k := range sorted {
			p := path + "." + visible(k)
			va, inA := ma[k]
			vb, inB := mb[k]
			switch {
			case !inA:
				*out = append(*out, fmt.Sprintf("+ %s: %s", p, compactJSON(vb)))
			case !inB:
				*out = append(*out, fmt.Sprintf("- %s: %s", p, compactJSON(va)))
			default:
				walkDiff(p, va, vb, out)
			}
		}
		return
	}
	ca, cb := compactJSON(a), compactJSON(b)
	if ca != cb {
		*out = append(*out, fmt.Sprintf("~ %s: %s → %s", path, ca, cb))
	}
}

func compactJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	c, err := canon.Transform(raw)
	if err != nil {
		c = raw
	}
	s := visible(string(c))
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:120]) + "…"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(none)"
	}
	return h
}

// visible writes s for a human on one line, with every character that could hide or
// mislead shown as an escape: textguard's rendering of invisible, format, bidi, tag and
// other suspicious characters (\u200b, \u202e, <U+E0041>), plus \n, \t and \r, and any
// whitespace other than a plain space (\u00a0). A backslash in the text is doubled first,
// so that a literal "\u200b" in a description cannot pass for one of our escapes.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r > 0x7f && unicode.IsSpace(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return textguard.Visible(b.String())
}

// lockLines maps each server (key "name") and tool (key "server\x00tool") of a lockfile in
// canonical layout to its 1-based line, for annotations.
func lockLines(data []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	server := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "    \"") && strings.HasSuffix(line, "\": {") && !strings.HasPrefix(line, "     "):
			var name string
			if json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(line), ": {")), &name) == nil {
				server = name
				out[server] = n
			}
		case strings.HasPrefix(line, "          \"name\": ") && server != "":
			var name string
			if json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(line, "          \"name\": "), ",")), &name) == nil {
				out[server+"\x00"+name] = n
			}
		}
	}
	return out
}
