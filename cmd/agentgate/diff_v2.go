package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/approvalproof"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// parseFailOn reads a --fail-on level.
func parseFailOn(s string) (warrant.Severity, bool) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "INFO", "ANY":
		return warrant.Info, true
	case "WARNING", "WARN":
		return warrant.Warning, true
	case "CRITICAL":
		return warrant.Critical, true
	}
	return warrant.SeverityNone, false
}

// ciReportV2 is ci --json for a version 2 lockfile: the report and the verdict.
type ciReportV2 struct {
	*lockfile.ReportV2
	// FailOn is the --fail-on level; Failing counts the changes graded at least that, and
	// the locked digests not approved (--approvals).
	FailOn  warrant.Severity `json:"failOn"`
	Failing int              `json:"failing"`
	// Approvals is what --approvals found (absent without it).
	Approvals *approvalproof.Report `json:"approvals,omitempty"`
}

// compareV2 implements diff and ci for a version 2 lockfile.
func (a *app) compareV2(cmd *cobra.Command, o opts, cfg *mcpclient.Config, server string, asJSON, ci bool, failOn warrant.Severity, sarifPath string, gha bool, plan *approvalsPlan) error {
	locked, err := a.readLockfileV2(o)
	if err != nil {
		return err
	}
	// The approvals log (or bundle) is read and verified before any server is started: a
	// log that cannot be read stops the run at once.
	var approvals *approvalproof.Report
	if plan != nil {
		run, err := a.readApprovals(cmd.Context(), plan)
		if err != nil {
			return err
		}
		approvals = run.check(locked)
	}
	servers, err := a.selectServers(cmd, o, cfg, server, hasKey(locked.Servers, server))
	if err != nil {
		return err
	}
	pkgs, err := a.checkPackages(cmd.Context(), o, locked, servers)
	if err != nil {
		return err
	}
	// A server whose package failed its check is not started; offline, none is.
	var notStarted []mcpclient.Server
	var jobs []job
	for i, s := range servers {
		if a.pkg.offline || refused(pkgs[i]) {
			notStarted = append(notStarted, s)
			continue
		}
		profiles := []mcpclient.Profile{genericProfile()}
		if ls, ok := locked.Servers[s.Name]; ok {
			profiles = lockedProfiles(ls)
		}
		for _, p := range profiles {
			jobs = append(jobs, job{server: s, profile: p})
		}
	}
	sortedJobs(jobs)
	results := a.listAllV2(cmd.Context(), o, jobs)
	if err := failures(a, results, "listings could not be done", "cannot compare"); err != nil {
		return err
	}
	live, liveSnap := surfaceOf(results, "", o, a)
	lockedSnap := a.readSnapshotV2(o)
	for _, s := range notStarted {
		// Its surface stands as locked: what is reported of it is its package.
		if ls, ok := locked.Servers[s.Name]; ok {
			live.Servers[s.Name] = ls
			liveSnap[s.Name] = lockedSnap[s.Name]
		}
	}
	if a.pkg.offline {
		a.offlineNote(servers)
	}
	if server != "" {
		only := &lockfile.LockfileV2{Servers: map[string]lockfile.ServerV2{}}
		if s, ok := locked.Servers[server]; ok {
			only.Servers[server] = s
		}
		locked = only
	}
	report := lockfile.CompareV2(locked, live, lockfile.CompareV2Options{Locked: lockedSnap, Live: liveSnap, Packages: packageDiffs(pkgs)})
	for _, s := range notStarted {
		for i := range report.Servers {
			if report.Servers[i].Server == s.Name && report.Servers[i].Package != nil && !a.pkg.offline {
				report.Servers[i].Package.NotStarted = true
			}
		}
	}
	addFindings(report, liveSnap, lockedSnap)
	report.PackageWarnings = a.floatingWarnings(o, pkgs)
	failing := report.AtLeast(failOn)
	unapproved := 0
	if approvals != nil {
		unapproved = approvals.Critical
	}
	md := func() []byte {
		b := a.markdownReport(report, live, o, ci, failOn, failing)
		if approvals != nil {
			b = append(b, a.markdownApprovals(approvals)...)
		}
		return b
	}

	switch {
	case a.md.stdout:
		if _, err := a.env.Stdout.Write(md()); err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
	case asJSON && ci:
		if err := writeJSON(a.env.Stdout, ciReportV2{ReportV2: report, FailOn: failOn, Failing: failing + unapproved, Approvals: approvals}); err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
	case asJSON:
		if err := writeJSON(a.env.Stdout, report); err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
	case ci:
		a.renderCIV2(a.env.Stdout, report, live, o, failOn, failing)
		if approvals != nil {
			a.renderApprovals(a.env.Stdout, approvals)
		}
	default:
		r := renderer{w: a.env.Stdout, color: colorOK(a.env), lockName: a.rel(o.lockfile), configName: a.rel(o.config)}
		r.reportV2(report, live)
	}
	lockData, _ := readLocal(o.lockfile, maxLockfileBytes)
	lines := lockLinesV2(lockData)
	findings := findingsV2(report, lines, a.workspaceRel(o.lockfile), failOn)
	for _, pw := range report.PackageWarnings {
		findings = append(findings, finding{rule: pw.Rule, severity: pw.Severity, message: pw.Message, file: a.workspaceRel(o.lockfile),
			line: cmp.Or(lines[pw.Server+"\x00package"], lines[pw.Server]), key: pw.Server + "\x00" + string(pw.Rule) + "\x00" + pw.Pinned})
	}
	if approvals != nil {
		findings = append(findings, approvalFindings(approvals, lines, a.workspaceRel(o.lockfile))...)
	}
	if gha {
		a.annotationsFrom(findings)
	}
	if sarifPath != "" {
		if err := a.writeSARIF(sarifPath, findings); err != nil {
			return err
		}
	}
	if a.md.file != "" {
		if err := a.writeMarkdown(a.abs(a.md.file), md()); err != nil {
			return err
		}
	}
	if unapproved > 0 {
		return cli.Found()
	}
	if !report.Drift {
		return nil
	}
	if ci && failing == 0 {
		return nil
	}
	return cli.Found()
}

// itemLabel is `tool "get_forecast"`, `instructions`, `resource "file:///x"`.
func itemLabel(it lockfile.ItemDiff) string {
	switch it.Kind {
	case lockfile.KindInstructions:
		return "instructions"
	case lockfile.KindResourceTemplate:
		return fmt.Sprintf("resource template %q", visible(it.Name))
	}
	return fmt.Sprintf("%s %q", it.Kind, visible(it.Name))
}

// what says in a few words what changed: "added", "removed", or the rules and pointers.
func what(it lockfile.ItemDiff) string {
	switch it.Change {
	case lockfile.Added:
		return "added (" + rulesOf(it) + ")"
	case lockfile.Removed:
		return "removed"
	}
	var parts []string
	seen := map[string]bool{}
	for _, c := range it.Changes {
		p := c.Pointer
		if p == "" {
			p = "/"
		}
		s := string(c.Rule) + " " + visible(p)
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	const max = 4
	if len(parts) > max {
		parts = append(parts[:max], fmt.Sprintf("and %d more", len(parts)-max))
	}
	return "changed: " + strings.Join(parts, ", ")
}

func rulesOf(it lockfile.ItemDiff) string {
	var rules []string
	seen := map[warrant.Rule]bool{}
	for _, c := range it.Changes {
		if !seen[c.Rule] {
			seen[c.Rule] = true
			rules = append(rules, string(c.Rule))
		}
	}
	return strings.Join(rules, ", ")
}

func gradeOf(s warrant.Severity) string {
	if s == warrant.SeverityNone {
		return "NONE"
	}
	return s.String()
}

// renderCIV2 prints one graded line per changed item and a verdict.
func (a *app) renderCIV2(w io.Writer, rep *lockfile.ReportV2, live *lockfile.LockfileV2, o opts, failOn warrant.Severity, failing int) {
	lockName := a.rel(o.lockfile)
	for _, pw := range rep.PackageWarnings {
		fmt.Fprintf(w, "%-8s %s (%s; not failing)\n", pw.Severity, pw.Message, pw.Rule)
	}
	switch {
	case !rep.Drift && a.pkg.offline:
		n := 0
		for _, s := range live.Servers {
			if s.Package != nil {
				n++
			}
		}
		fmt.Fprintf(w, "ok (offline): %d %s %s; no surface was listed\n", n, plural(n, "package identity matches", "package identities match"), lockName)
		return
	case !rep.Drift:
		fmt.Fprintf(w, "ok: %s match %s\n", countsV2(live), lockName)
		return
	}
	for _, s := range rep.Servers {
		if d := s.Package; d != nil {
			for _, c := range d.Changes {
				fmt.Fprintf(w, "%-8s server %q package %s: %s (%s)\n", gradeOf(c.Severity), s.Server, packageLabel(d), c.Reason, c.Rule)
			}
			if d.NotStarted {
				fmt.Fprintf(w, "%-8s server %q was not started: its package failed the check, so its surface was not listed\n", gradeOf(d.Grade), s.Server)
			}
		}
		for _, p := range s.Profiles {
			for _, it := range p.Items {
				fmt.Fprintf(w, "%-8s server %q (%s) %s: %s\n", gradeOf(it.Grade), s.Server, p.Profile, itemLabel(it), what(it))
			}
		}
	}
	if failing > 0 {
		fmt.Fprintf(w, "drift: %s; %d at or above --fail-on %s; run 'agentgate diff' to review, 'agentgate lock' to accept\n", summaryV2(rep), failing, failOn)
		return
	}
	fmt.Fprintf(w, "drift below --fail-on %s: %s; not failing (run 'agentgate lock' to accept)\n", failOn, summaryV2(rep))
}

// summaryV2 says "2 servers, 3 changes: 1 CRITICAL, 2 WARNING".
func summaryV2(rep *lockfile.ReportV2) string {
	counts := map[warrant.Severity]int{}
	n := 0
	for _, s := range rep.Servers {
		if s.Package != nil {
			counts[s.Package.Grade]++
			n++
		}
		for _, p := range s.Profiles {
			for _, it := range p.Items {
				counts[it.Grade]++
				n++
			}
		}
	}
	var parts []string
	for _, sev := range []warrant.Severity{warrant.Critical, warrant.Warning, warrant.Info} {
		if counts[sev] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[sev], sev))
		}
	}
	return fmt.Sprintf("%d %s, %d %s: %s", len(rep.Servers), plural(len(rep.Servers), "server", "servers"), n, plural(n, "change", "changes"), strings.Join(parts, ", "))
}

// reportV2 prints the human diff of a version 2 lockfile.
func (r renderer) reportV2(rep *lockfile.ReportV2, live *lockfile.LockfileV2) {
	for _, pw := range rep.PackageWarnings {
		fmt.Fprintf(r.w, "%s: %s\n", pw.Severity, pw.Message)
	}
	if !rep.Drift {
		fmt.Fprintf(r.w, "no drift: %s match %s\n", countsV2(live), r.lockName)
		return
	}
	first := true
	for _, s := range rep.Servers {
		if d := s.Package; d != nil {
			if !first {
				fmt.Fprintln(r.w)
			}
			first = false
			r.packageV2(s.Server, d)
		}
		for _, p := range s.Profiles {
			if !first {
				fmt.Fprintln(r.w)
			}
			first = false
			head := r.paint(ansiBold, fmt.Sprintf("server %q (%s)", s.Server, p.Profile))
			switch {
			case s.Change == lockfile.Added:
				fmt.Fprintf(r.w, "%s: not in %s; run 'agentgate lock' to pin it\n", head, r.lockName)
			case s.Change == lockfile.Removed:
				fmt.Fprintf(r.w, "%s: locked, but no longer in %s; run 'agentgate lock' to drop it\n", head, r.configName)
			default:
				fmt.Fprintf(r.w, "%s: surface %s → %s, grade %s\n", head, short(p.LockedSurfaceHash), short(p.LiveSurfaceHash), p.Grade)
			}
			for _, it := range p.Items {
				r.itemV2(it)
			}
		}
	}
	fmt.Fprintf(r.w, "\ndrift: %s\n", summaryV2(rep))
}

// packageV2 prints how a server's package differs.
func (r renderer) packageV2(server string, d *lockfile.PackageDiff) {
	live := "none"
	if d.Live != nil {
		live = d.Live.String()
	}
	fmt.Fprintf(r.w, "%s: package %s → %s, grade %s\n", r.paint(ansiBold, fmt.Sprintf("server %q", server)), visible(packageLabel(d)), visible(live), d.Grade)
	for _, c := range d.Changes {
		ptr := c.Pointer
		if ptr != "" {
			ptr = " " + visible(ptr)
		}
		fmt.Fprintf(r.w, "      %s %s%s: %s\n", c.Severity, c.Rule, ptr, c.Reason)
		if len(c.Old) > 0 {
			fmt.Fprintf(r.w, "        - %s\n", value(c.Old))
		}
		if len(c.New) > 0 {
			fmt.Fprintf(r.w, "        + %s\n", value(c.New))
		}
	}
	if d.NotStarted {
		fmt.Fprintf(r.w, "      not started: its package failed the check, so its surface was not listed\n")
	}
}

func (r renderer) itemV2(it lockfile.ItemDiff) {
	mark := "~"
	switch it.Change {
	case lockfile.Added:
		mark = r.paint(ansiGreen, "+")
	case lockfile.Removed:
		mark = r.paint(ansiRed, "-")
	}
	fmt.Fprintf(r.w, "  %-8s %s %s\n", gradeOf(it.Grade), mark, itemLabel(it))
	if it.Description != nil {
		r.words(it.Description)
	}
	const maxChanges = 12
	for i, c := range it.Changes {
		if i == maxChanges {
			fmt.Fprintf(r.w, "      … and %d more\n", len(it.Changes)-maxChanges)
			break
		}
		ptr := c.Pointer
		if ptr != "" {
			ptr = " " + visible(ptr)
		}
		fmt.Fprintf(r.w, "      %s %s%s: %s\n", c.Severity, c.Rule, ptr, c.Reason)
		if c.Rule == warrant.RuleDescriptionChanged || c.Rule == warrant.RuleInstructionsChanged {
			continue // shown as a word diff above
		}
		if len(c.Old) > 0 {
			fmt.Fprintf(r.w, "        - %s\n", value(c.Old))
		}
		if len(c.New) > 0 {
			fmt.Fprintf(r.w, "        + %s\n", value(c.New))
		}
	}
}

// value shows a canonical JSON value on one bounded line, suspicious characters escaped.
func value(raw json.RawMessage) string {
	s := visible(jsonCompact(raw))
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	return s
}

// lockLinesV2 maps each server ("s"), profile ("s\x00p") and item
// ("s\x00p\x00kind\x00key") of a version 2 lockfile in canonical layout to its 1-based line.
func lockLinesV2(data []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var server, profile, list string
	keys := map[string]string{`"tools"`: "tool", `"prompts"`: "prompt", `"resources"`: "resource", `"resourceTemplates"`: "resourceTemplate"}
	keyField := map[string]string{"tool": "name", "prompt": "name", "resource": "uri", "resourceTemplate": "uriTemplate"}
	unquote := func(s string) (string, bool) {
		var v string
		return v, json.Unmarshal([]byte(s), &v) == nil
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		indent := len(line) - len(strings.TrimLeft(line, " "))
		t := strings.TrimSpace(line)
		switch {
		case indent == 4 && strings.HasSuffix(t, ": {"):
			if v, ok := unquote(strings.TrimSuffix(t, ": {")); ok {
				server, profile = v, ""
				out[server] = n
			}
		case indent == 8 && strings.HasSuffix(t, ": {") && server != "":
			if v, ok := unquote(strings.TrimSuffix(t, ": {")); ok {
				profile = v
				out[server+"\x00"+profile] = n
			}
		case indent == 10 && strings.HasSuffix(t, ": ["):
			list = keys[strings.TrimSuffix(t, ": [")]
		case indent == 14 && list != "" && profile != "":
			field := `"` + keyField[list] + `": `
			if strings.HasPrefix(t, field) {
				if v, ok := unquote(strings.TrimSuffix(strings.TrimPrefix(t, field), ",")); ok {
					out[server+"\x00"+profile+"\x00"+list+"\x00"+v] = n
				}
			}
		case indent == 6 && t == `"package": {` && server != "":
			out[server+"\x00package"] = n
		case indent == 10 && strings.HasPrefix(t, `"instructionsHash"`):
			out[server+"\x00"+profile+"\x00instructions\x00"] = n
		}
	}
	return out
}

// finding is one graded change for annotations and SARIF.
type finding struct {
	rule     warrant.Rule
	severity warrant.Severity
	failing  bool // at or above --fail-on
	message  string
	file     string
	line     int
	key      string // stable identity of the change, for fingerprints
	// next is what to do, for annotations ("": review with diff, accept with lock).
	next string
}

func findingsV2(rep *lockfile.ReportV2, lines map[string]int, file string, failOn warrant.Severity) []finding {
	var out []finding
	for _, s := range rep.Servers {
		if d := s.Package; d != nil {
			line := cmp.Or(lines[s.Server+"\x00package"], lines[s.Server])
			for _, c := range d.Changes {
				out = append(out, finding{rule: c.Rule, severity: c.Severity, failing: d.Grade >= failOn, file: file, line: line,
					message: fmt.Sprintf("server %q package %s: %s", s.Server, visible(packageLabel(d)), c.Reason),
					key:     strings.Join([]string{s.Server, "package", string(c.Rule), c.Pointer, string(c.New)}, "\x00")})
			}
		}
		for _, p := range s.Profiles {
			for _, it := range p.Items {
				line := lines[s.Server+"\x00"+p.Profile+"\x00"+string(it.Kind)+"\x00"+it.Name]
				if line == 0 {
					line = lines[s.Server+"\x00"+p.Profile]
				}
				if line == 0 {
					line = lines[s.Server]
				}
				prefix := fmt.Sprintf("server %q (%s) %s: ", s.Server, p.Profile, itemLabel(it))
				for _, c := range it.Changes {
					msg := prefix + c.Reason
					if c.Pointer != "" {
						msg = prefix + "at " + visible(c.Pointer) + ": " + c.Reason
					}
					out = append(out, finding{rule: c.Rule, severity: c.Severity, failing: it.Grade >= failOn, message: msg, file: file, line: line,
						key: strings.Join([]string{s.Server, p.Profile, string(it.Kind), it.Name, string(c.Rule), c.Pointer, it.LiveDigest}, "\x00")})
				}
			}
		}
	}
	return out
}

// annotationsFrom prints GitHub Actions annotations: ::error for changes at or above
// --fail-on, ::warning for the rest.
func (a *app) annotationsFrom(fs []finding) {
	for _, f := range fs {
		kind := "warning"
		if f.failing {
			kind = "error"
		}
		props := "file=" + ghaProp(f.file)
		if f.line > 0 {
			props += fmt.Sprintf(",line=%d", f.line)
		}
		props += ",title=" + ghaProp(fmt.Sprintf("agentgate: %s %s", f.severity, f.rule))
		next := f.next
		if next == "" {
			next = "run 'agentgate diff' to review, 'agentgate lock' to accept"
		}
		fmt.Fprintf(a.ghaOut, "::%s %s::%s\n", kind, props, ghaData(f.message+"; "+next))
	}
}
