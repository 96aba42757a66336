package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Drift as a pull request (docs/agentgate.md, "Drift as a pull request"): diff --markdown
// prints the graded diff as a pull or merge request body, ci --markdown FILE writes it
// beside its verdict. Everything a server sent (names, pointers, texts) is put in code
// spans or a fenced block, never in Markdown or HTML that a forge would interpret: a tool
// named "@everyone" or "](https://evil)" cannot mention anyone, link anywhere or break
// the table.

// markdownFlags are diff --markdown (to stdout) and ci --markdown FILE.
type markdownFlags struct {
	stdout bool
	file   string
}

// maxMarkdownBytes keeps a body under GitHub's 65,536-character limit on a pull request
// body (GitLab's is larger), with room for what a workflow adds around it.
const (
	maxMarkdownBytes = 60_000
	maxMarkdownRows  = 200
)

// markdownReport renders rep as a pull request body.
func (a *app) markdownReport(rep *lockfile.ReportV2, live *lockfile.LockfileV2, o opts, ci bool, failOn warrant.Severity, failing int) []byte {
	var b bytes.Buffer
	lockName := a.rel(o.lockfile)
	b.WriteString("<!-- agentgate: graded diff of the MCP tool surface; regenerate with 'agentgate diff --markdown' -->\n")
	if !rep.Drift {
		fmt.Fprintf(&b, "## agentgate: no drift\n\n%s match %s.\n", countsV2(live), mdCode(lockName))
		return b.Bytes()
	}
	fmt.Fprintf(&b, "## agentgate: the MCP tool surface drifted from %s\n\n", mdCode(lockName))
	fmt.Fprintf(&b, "**%s**: %s.", rep.Grade, summaryV2(rep))
	if ci {
		if failing > 0 {
			fmt.Fprintf(&b, " %d at or above `--fail-on %s`: `agentgate ci` fails.", failing, failOn)
		} else {
			fmt.Fprintf(&b, " None at or above `--fail-on %s`: `agentgate ci` passes.", failOn)
		}
	}
	b.WriteString("\n\n| grade | server | profile | what | change |\n|---|---|---|---|---|\n")
	type row struct {
		grade warrant.Severity
		// The cells, rendered.
		server, profile, item, notes string
	}
	var rows []row
	for _, s := range rep.Servers {
		if d := s.Package; d != nil {
			rules := make([]string, 0, len(d.Changes))
			for _, c := range d.Changes {
				rules = append(rules, string(c.Rule))
			}
			note := strings.Join(rules, ", ")
			if d.NotStarted {
				note += "; not started"
			}
			rows = append(rows, row{d.Grade, mdCell(s.Server), "", "package " + mdCell(packageLabel(d)), mdCell(note)})
		}
		for _, p := range s.Profiles {
			for _, it := range p.Items {
				label := "instructions"
				switch it.Kind {
				case lockfile.KindInstructions:
				case lockfile.KindResourceTemplate:
					label = "resource template " + mdCell(it.Name)
				default:
					label = string(it.Kind) + " " + mdCell(it.Name)
				}
				rows = append(rows, row{it.Grade, mdCell(s.Server), mdCell(p.Profile), label, mdCell(what(it))})
			}
		}
	}
	// Most severe first, as a reviewer reads; the order within a grade is the report's.
	var ordered []row
	for _, sev := range []warrant.Severity{warrant.Critical, warrant.Warning, warrant.Info, warrant.SeverityNone} {
		for _, r := range rows {
			if r.grade == sev {
				ordered = append(ordered, r)
			}
		}
	}
	for i, r := range ordered {
		if i == maxMarkdownRows {
			fmt.Fprintf(&b, "\n%d more %s not shown here: run `agentgate diff` for all of them.\n", len(ordered)-i, plural(len(ordered)-i, "change", "changes"))
			break
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", gradeOf(r.grade), r.server, r.profile, r.item, r.notes)
	}

	var human bytes.Buffer
	rr := renderer{w: &human, lockName: lockName, configName: a.rel(o.config)}
	rr.reportV2(rep, live)
	details := strings.TrimRight(human.String(), "\n")
	footer := fmt.Sprintf("\nTo accept it, run `agentgate lock` and commit %s with %s; the grades are explained in [drift-grading.md](%s), the findings in [findings.md](%s).\n",
		mdCode(lockName), mdCode(a.rel(o.snapshot)), driftGradingURI, findingsURI)
	fence := mdFence(details)
	room := maxMarkdownBytes - b.Len() - len(footer) - 2*len(fence) - 200
	if room < 0 {
		room = 0
	}
	if len(details) > room {
		cut := strings.LastIndexByte(details[:room], '\n')
		if cut < 0 {
			cut = 0
		}
		details = details[:cut] + "\n… cut here to fit a pull request body: run 'agentgate diff' for the rest"
	}
	fmt.Fprintf(&b, "\n<details><summary>The diff, as <code>agentgate diff</code> prints it</summary>\n\n%stext\n%s\n%s\n\n</details>\n", fence, details, fence)
	b.WriteString(footer)
	return b.Bytes()
}

// mdCode renders s (text a server may have chosen) as an inline code span: invisible
// characters and line breaks escaped, delimited by more backticks than any run inside.
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	s = visible(s)
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	delim := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return delim + s + delim
}

// mdCell is a code span for a table cell: GFM splits cells at '|' even inside code spans,
// unless it is escaped.
func mdCell(s string) string {
	return strings.ReplaceAll(mdCode(s), "|", `\|`)
}

// mdFence returns a code fence longer than any run of backticks in s.
func mdFence(s string) string {
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// writeMarkdown writes ci --markdown FILE atomically.
func (a *app) writeMarkdown(path string, body []byte) error {
	if err := writeFileAtomic(path, body); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %v", a.rel(path), unwrapPath(err)))
	}
	return nil
}
