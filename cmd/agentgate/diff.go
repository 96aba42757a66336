package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) diffCmd() *cobra.Command {
	var server string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show how the live surface differs from agentgate.lock",
		Long: `diff lists every configured server and compares it with agentgate.lock.

For a version 2 lockfile it lists each server as every client profile it was locked as and
grades every change CRITICAL, WARNING or INFO with the rules toolwarrant uses
(docs/drift-grading.md): a reworded description or instructions, a tool that now says it is
destructive, a widened schema are CRITICAL; a new tool, a title or _meta change WARNING; a
removed tool INFO. A reworded description is shown word by word ([-old-]{+new+}) when
agentgate.snapshot.json holds the locked text; without it a change cannot be graded rule
by rule and counts as CRITICAL.

For a version 1 lockfile it shows, per server, the tools added, removed and changed, and
which of name, description and inputSchema changed, as version 1 always has.

Invisible characters are written as escapes (\u200b, <U+E0041>) so that they cannot hide.
--json prints one JSON document instead (fields documented in docs/agentgate.md).
--markdown prints a pull or merge request body instead: a table of the changes, most
severe first, and the diff in a fenced block; whatever a server sent is in code spans or
the block, so it cannot mention, link or break the page.` + exitCodes("no drift: the live surface matches the lockfile", "drift: something was added, removed or changed"),
		Example: `  agentgate diff
  agentgate diff --server filesystem --json
  agentgate diff --markdown > drift.md && gh pr create --title "MCP drift" --body-file drift.md`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.compare(cmd, server, asJSON, false, "", "", "")
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "compare only the server `NAME`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&a.md.stdout, "markdown", false, "print the report as Markdown, for a pull or merge request body (version 2 lockfiles)")
	cmd.MarkFlagsMutuallyExclusive("json", "markdown")
	return cmd
}

func (a *app) ciCmd() *cobra.Command {
	var asJSON bool
	var failOn, sarif string
	cmd := &cobra.Command{
		Use:   "ci",
		Short: "Fail (exit 1) if any server's surface drifted from agentgate.lock",
		Long: `ci is diff for pipelines: it lists every configured server, compares with agentgate.lock,
prints one line per change and exits 1 on drift. A server that cannot be listed is an
error (exit 2), never a pass.

With a version 2 lockfile every line carries its grade (CRITICAL, WARNING, INFO), and
--fail-on LEVEL (env AGENTGATE_FAIL_ON; default info: every change fails) sets the lowest
grade that fails the build: with --fail-on critical a new tool (WARNING) is reported but
passes. A version 1 lockfile fails on every change.

--sarif FILE also writes the changes as SARIF 2.1.0 for GitHub code scanning (one result
per graded change, on the lockfile line of the item). Under GitHub Actions
(GITHUB_ACTIONS=true) each change is also printed as an annotation on that line: ::error at
or above --fail-on, ::warning below it.

` + approvalsHelp + `
An approvals bundle (agentgate lock --approvals writes it), given as --approvals FILE, or
with --offline and --policy alone (agentgate.approvals.json beside the lockfile), is
verified without the log: the checkpoint against the policy and each approval's inclusion
proof. That proves each approval is in the log up to the bundle's checkpoint; a rejection
or a newer approval since is only seen online.` + exitCodes("no drift, or none at or above --fail-on; every locked digest approved (with --approvals)",
			"drift at or above --fail-on: run 'agentgate diff' to see it, and 'agentgate lock' to accept it;\n     a locked digest not approved (with --approvals: approval-missing, approval-revoked)") +
			"\n     (2 also when the approvals log, bundle or policy cannot be read or does not verify)",
		Example: `  agentgate ci --config .mcp.json --lockfile agentgate.lock
  agentgate ci --fail-on warning --sarif agentgate.sarif
  agentgate ci --approvals https://tlog.example.com/toolwarrant/ --policy toolwarrant.policy
  agentgate ci --offline --policy toolwarrant.policy    # verifies agentgate.approvals.json
  # as a GitHub Actions step (action.yml in this repository):
  #   - uses: agentgate-dev/agentgate@main
  #     with: {fail-on: warning}`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, from := failOn, "--fail-on "
			if !cmd.Flags().Changed("fail-on") {
				if v := a.env.Getenv("AGENTGATE_FAIL_ON"); v != "" {
					level, from = v, "AGENTGATE_FAIL_ON="
				}
			}
			return a.compare(cmd, "", asJSON, true, level, from, sarif)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (as diff --json, with failOn and failing)")
	cmd.Flags().StringVar(&failOn, "fail-on", "info", "the lowest grade that fails: `LEVEL` info, warning or critical (env AGENTGATE_FAIL_ON; version 2 lockfiles)")
	cmd.Flags().StringVar(&sarif, "sarif", "", "also write the changes as SARIF 2.1.0 to `FILE` (for GitHub code scanning)")
	cmd.Flags().StringVar(&a.md.file, "markdown", "", "also write the report as Markdown to `FILE`, for a pull or merge request body (version 2 lockfiles)")
	cmd.Flags().BoolVar(&a.pkg.offline, "offline", false, "start no server and ask no registry: check only that the config still runs the locked packages and versions (and, with --policy, the approvals bundle)")
	a.appr.register(cmd, false)
	return cmd
}

// compare implements diff and ci. failOnFrom names where failOnFlag came from, as its
// error shows it ("--fail-on " or "AGENTGATE_FAIL_ON=").
func (a *app) compare(cmd *cobra.Command, server string, asJSON, ci bool, failOnFlag, failOnFrom, sarifPath string) (err error) {
	gha := ci && a.env.Getenv("GITHUB_ACTIONS") == "true"
	a.ghaOut = a.env.Stdout
	if asJSON {
		a.ghaOut = a.env.Stderr
	}
	failOn := warrant.Info
	var badGrade error
	if failOnFlag != "" {
		var ok bool
		if failOn, ok = parseFailOn(failOnFlag); !ok {
			badGrade = cli.Usage(cmd, "%s%q is not a grade: use info, warning or critical", failOnFrom, failOnFlag)
		}
	}
	o, err := a.resolve(cmd, true)
	switch {
	case err != nil && badGrade != nil: // every problem named at once
		return a.annotateError(gha, cli.Exit(cli.ExitUsage, errors.Join(err, badGrade)))
	case err != nil:
		return a.annotateError(gha, err)
	case badGrade != nil:
		return a.annotateError(gha, badGrade)
	}
	defer func() { err = a.annotateError(gha, err) }()
	if sarifPath != "" {
		sarifPath = a.abs(sarifPath)
		// A run that could not check writes its SARIF too, saying why, so that the upload
		// step that follows has a file and shows the failure.
		defer func() {
			var ee *cli.ExitError
			if err != nil && !a.sarifWritten && !(errors.As(err, &ee) && ee.Code == cli.ExitFound) {
				if werr := a.writeSARIFFailure(sarifPath, err); werr != nil {
					err = errors.Join(err, werr)
				}
			}
		}()
	}

	version, err := a.lockfileVersion(o)
	if err != nil {
		return err
	}
	var plan *approvalsPlan
	if ci {
		if plan, err = a.approvalsPlan(cmd, o, a.appr, false); err != nil {
			return err
		}
	}
	if plan != nil && version != lockfile.Version2 {
		if version == 0 {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("%s not found; run 'agentgate lock' and commit it", a.rel(o.lockfile)))
		}
		return cli.Usage(cmd, "--approvals checks the tool digests of a version 2 lockfile; %s is version %d (upgrade it with 'agentgate lock --lockfile-version 2')", a.rel(o.lockfile), version)
	}
	if version == lockfile.Version2 {
		cfg, err := a.loadConfig(o)
		if err != nil {
			return err
		}
		return a.compareV2(cmd, o, cfg, server, asJSON, ci, failOn, sarifPath, gha, plan)
	}
	if a.pkg.offline {
		return usageOffline(version, a.rel(o.lockfile))
	}
	if a.md.stdout || a.md.file != "" {
		return cli.Usage(cmd, "--markdown needs lockfile version 2: %s is version %d (upgrade it with 'agentgate lock --lockfile-version 2')", a.rel(o.lockfile), version)
	}
	if version == lockfile.Version && failOn != warrant.Info {
		return cli.Usage(cmd, "--fail-on %s needs lockfile version 2: %s is version 1, where every change fails (upgrade it with 'agentgate lock --lockfile-version 2')", strings.ToLower(failOn.String()), a.rel(o.lockfile))
	}

	locked, missing, err := a.readLockfile(o)
	if err != nil {
		return err
	}
	if missing {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s not found; run 'agentgate lock' and commit it", a.rel(o.lockfile)))
	}
	cfg, err := a.loadConfig(o)
	if err != nil {
		return err
	}
	servers, err := a.selectServers(cmd, o, cfg, server, hasKey(locked.Servers, server))
	if err != nil {
		return err
	}
	results := a.listAll(cmd.Context(), o, servers)
	if err := failures(a, results, "servers could not be listed", "cannot compare"); err != nil {
		return err
	}
	live := lockfile.Surface{}
	for _, r := range results {
		live[r.name] = r.defs
	}
	liveLock, err := lockfile.New(live, "", a.deps.now())
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	if server != "" {
		only := *locked
		only.Servers = map[string]lockfile.Server{}
		if s, ok := locked.Servers[server]; ok {
			only.Servers[server] = s
		}
		locked = &only
	}
	report := lockfile.Compare(locked, liveLock, lockfile.CompareOptions{Locked: a.readSnapshot(o), Live: live})

	switch {
	case asJSON:
		if err := writeJSON(a.env.Stdout, report); err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
	case ci:
		a.renderCI(a.env.Stdout, report, o, liveLock)
	default:
		r := renderer{w: a.env.Stdout, color: colorOK(a.env), lockName: a.rel(o.lockfile), configName: a.rel(o.config)}
		r.report(report, liveLock)
	}
	if gha {
		a.annotations(report, o)
	}
	if sarifPath != "" {
		data, _ := readLocal(o.lockfile, maxLockfileBytes)
		if err := a.writeSARIF(sarifPath, findingsV1(report, lockLines(data), a.workspaceRel(o.lockfile), filepath.Base(o.lockfile), a.rel(o.config))); err != nil {
			return err
		}
	}
	if report.Drift {
		return cli.Found()
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func colorOK(env cli.Env) bool {
	return env.Getenv("NO_COLOR") == "" && cli.IsTerminal(env.Stdout)
}

// renderCI prints one line per drifted server or tool, and a verdict.
func (a *app) renderCI(w io.Writer, rep *lockfile.Report, o opts, live *lockfile.Lockfile) {
	lockName, configName := a.rel(o.lockfile), a.rel(o.config)
	if !rep.Drift {
		tools := 0
		for _, s := range live.Servers {
			tools += len(s.Tools)
		}
		fmt.Fprintf(w, "ok: %s match %s\n", counts(len(live.Servers), tools), lockName)
		return
	}
	for _, line := range driftLines(rep, lockName, configName) {
		fmt.Fprintln(w, line.text)
	}
	fmt.Fprintf(w, "drift: %s; run 'agentgate diff' to review, 'agentgate lock' to accept\n", summary(rep))
}

type driftLine struct {
	server, tool string // tool "" for a server-level line
	text         string
}

func driftLines(rep *lockfile.Report, lockName, configName string) []driftLine {
	var out []driftLine
	for _, s := range rep.Servers {
		switch s.Change {
		case lockfile.Added:
			out = append(out, driftLine{s.Server, "", fmt.Sprintf("server %q: not in %s (%s); lock it", s.Server, lockName, cli.Count(len(s.Tools), "tool", ""))})
			continue
		case lockfile.Removed:
			out = append(out, driftLine{s.Server, "", fmt.Sprintf("server %q: locked but no longer in %s", s.Server, configName)})
			continue
		}
		for _, t := range s.Tools {
			var what string
			switch {
			case t.Change == lockfile.Added:
				what = "added"
			case t.Change == lockfile.Removed:
				what = "removed"
			case t.OldName != "":
				what = fmt.Sprintf("renamed from %q", visible(t.OldName))
			default:
				what = fieldList(t.Fields) + " changed"
			}
			out = append(out, driftLine{s.Server, t.Tool, fmt.Sprintf("server %q tool %q: %s", s.Server, visible(t.Tool), what)})
		}
	}
	return out
}

func fieldList(fs []lockfile.Field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, " and ")
}

func summary(rep *lockfile.Report) string {
	var added, removed, changed, tools int
	for _, s := range rep.Servers {
		switch s.Change {
		case lockfile.Added:
			added++
		case lockfile.Removed:
			removed++
		default:
			changed++
			tools += len(s.Tools)
		}
	}
	var parts []string
	if changed > 0 {
		parts = append(parts, fmt.Sprintf("%d %s with %d tool %s", changed, plural(changed, "server", "servers"), tools, plural(tools, "change", "changes")))
	}
	if added > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not locked", added, plural(added, "server", "servers")))
	}
	if removed > 0 {
		parts = append(parts, fmt.Sprintf("%d locked %s gone", removed, plural(removed, "server", "servers")))
	}
	return strings.Join(parts, ", ")
}

// counts says "1 server, 3 tools".
func counts(servers, tools int) string {
	return fmt.Sprintf("%d %s, %d %s", servers, plural(servers, "server", "servers"), tools, plural(tools, "tool", "tools"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// annotations prints GitHub Actions ::error commands, one per drift, on the lockfile line
// of the server or tool.
func (a *app) annotations(rep *lockfile.Report, o opts) {
	data, _ := readLocal(o.lockfile, maxLockfileBytes)
	lines := lockLines(data)
	file := a.workspaceRel(o.lockfile)
	for _, d := range driftLines(rep, filepath.Base(o.lockfile), a.rel(o.config)) {
		props := "file=" + ghaProp(file)
		key := d.server
		if d.tool != "" {
			key += "\x00" + d.tool
		}
		if n, ok := lines[key]; ok {
			props += fmt.Sprintf(",line=%d", n)
		} else if n, ok := lines[d.server]; ok {
			props += fmt.Sprintf(",line=%d", n)
		}
		props += ",title=" + ghaProp("agentgate: tool surface drift")
		fmt.Fprintf(a.ghaOut, "::error %s::%s\n", props, ghaData(d.text+"; run 'agentgate diff' to review, 'agentgate lock' to accept"))
	}
}

// annotateError also prints an exit-2 error as an annotation under GitHub Actions.
func (a *app) annotateError(gha bool, err error) error {
	if !gha || err == nil {
		return err
	}
	var ee *cli.ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return err
	}
	fmt.Fprintf(a.ghaOut, "::error title=%s::%s\n", ghaProp("agentgate: cannot check the tool surface"), ghaData(err.Error()))
	return err
}

// workspaceRel makes path relative to GITHUB_WORKSPACE (the repository root in Actions),
// which is what annotation file= expects.
func (a *app) workspaceRel(path string) string {
	if ws := a.env.Getenv("GITHUB_WORKSPACE"); ws != "" {
		if r, err := filepath.Rel(ws, path); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return filepath.ToSlash(a.rel(path))
}

// ghaData escapes an annotation message as the Actions runner expects.
func ghaData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghaProp escapes an annotation property value.
func ghaProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
