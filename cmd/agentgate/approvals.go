package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/approvalproof"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/localfile"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Approvals (docs/agentgate.md, "Approvals: CI that proves every pinned tool was
// approved"): ci --approvals LOG --policy FILE reads toolwarrant's transparency log (a
// tlog-tiles directory or URL), verifies it under a tlog-policy file and fails when a locked
// tool digest is not its tool's approved digest as of the log's checkpoint; lock --approvals
// also writes agentgate.approvals.json, which ci --approvals FILE (or --offline) verifies
// without the log.

// approvalFlags are the --approvals flags of lock and ci.
type approvalFlags struct {
	source string // --approvals LOG|BUNDLE
	policy string // --policy FILE
	bundle string // lock --approvals-bundle PATH
}

// approvalsPlan is what the flags resolved to.
type approvalsPlan struct {
	// source is the log's directory or URL, or the bundle file (offline).
	source  string
	offline bool
	src     approvalproof.Source // the log (nil offline)
	policy  *checkpoint.Policy
	// bundle is where lock writes the bundle.
	bundle string
}

// The approvals flags' environment variables.
const (
	envApprovals       = "AGENTGATE_APPROVALS"
	envApprovalsPolicy = "AGENTGATE_APPROVALS_POLICY"
)

const approvalsHelp = `--approvals LOG --policy FILE (env AGENTGATE_APPROVALS, AGENTGATE_APPROVALS_POLICY) also proves
that every tool digest the lockfile pins was approved in toolwarrant: LOG is its transparency
log published as tlog-tiles ('toolwarrant tlog tiles --out DIR'), a directory or an http(s) URL,
and FILE a c2sp.org/tlog-policy file (the log's key, its witnesses, the quorum). The checkpoint
must verify under the policy as 'toolwarrant audit verify --policy' checks it, every entry must
hash to its root, and each locked digest must be its tool's approved digest as of that
checkpoint: else CRITICAL approval-missing (never approved) or approval-revoked (rejected or
superseded since), with the toolwarrant commands that review it.`

func (f *approvalFlags) register(cmd *cobra.Command, lock bool) {
	cmd.Flags().StringVar(&f.source, "approvals", "", "prove each locked tool digest was approved in toolwarrant's transparency log `LOG`: a tlog-tiles directory or http(s) URL"+
		map[bool]string{true: "", false: ", or an approvals bundle file (offline)"}[lock]+" (env "+envApprovals+"; needs --policy)")
	cmd.Flags().StringVar(&f.policy, "policy", "", "the c2sp.org/tlog-policy `FILE` the log's checkpoint must satisfy: its key, witnesses and quorum (env "+envApprovalsPolicy+")")
	if lock {
		cmd.Flags().StringVar(&f.bundle, "approvals-bundle", "", "with --approvals: write the approvals bundle to `PATH` (default: agentgate.approvals.json beside the lockfile)")
	}
}

// defaultBundle is agentgate.approvals.json for agentgate.lock, X.approvals.json for X.lock.
func defaultBundle(lock string) string {
	dir, base := filepath.Split(lock)
	return filepath.Join(dir, strings.TrimSuffix(base, ".lock")+".approvals.json")
}

// isURL reports whether s names an http(s) log.
func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// approvalsPlan resolves the approvals flags (flag > environment): nil when none is set.
// lock takes a log only; ci a log or a bundle, and under --offline a bundle (default
// beside the lockfile) or a local log. Every problem is reported at once.
func (a *app) approvalsPlan(cmd *cobra.Command, o opts, f approvalFlags, lock bool) (*approvalsPlan, error) {
	pick := func(flag, env, v string) string {
		if cmd.Flags().Changed(flag) {
			return v
		}
		return a.env.Getenv(env)
	}
	src, pol := pick("approvals", envApprovals, f.source), pick("policy", envApprovalsPolicy, f.policy)
	if src == "" && pol == "" && !cmd.Flags().Changed("approvals-bundle") {
		return nil, nil
	}
	var errs []error
	plan := &approvalsPlan{}
	if lock {
		plan.bundle = defaultBundle(o.lockfile)
		if f.bundle != "" {
			plan.bundle = a.abs(f.bundle)
		}
	}
	switch {
	case src == "" && !lock && a.pkg.offline:
		plan.source, plan.offline = defaultBundle(o.lockfile), true
	case src == "":
		what := "--policy"
		if pol == "" {
			what = "--approvals-bundle"
		}
		errs = append(errs, fmt.Errorf("%s goes with --approvals LOG: pass --approvals (a tlog-tiles directory or URL%s)", what, map[bool]string{true: "", false: ", or the approvals bundle"}[lock]))
	case isURL(src):
		if a.pkg.offline {
			errs = append(errs, fmt.Errorf("--offline reads no network: --approvals %s is a URL; pass the approvals bundle (agentgate lock --approvals writes it) or a local tiles directory", src))
			break
		}
		s, err := approvalproof.HTTP(src, o.timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("--approvals: %v", err))
			break
		}
		plan.source, plan.src = src, s
	default:
		p := a.abs(src)
		st, err := os.Stat(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--approvals %s: %v (want a tlog-tiles directory, an http(s) URL%s)", src, unwrapPath(err), map[bool]string{true: "", false: " or an approvals bundle file"}[lock]))
		case st.IsDir():
			plan.source, plan.src = src, approvalproof.Dir(p)
		case lock:
			errs = append(errs, fmt.Errorf("lock --approvals reads the log itself: %s is a file, not a tlog-tiles directory or URL", src))
		default:
			plan.source, plan.offline = p, true
		}
	}
	if pol == "" {
		errs = append(errs, errors.New("--approvals needs --policy FILE, the c2sp.org/tlog-policy the log's checkpoint must satisfy (its 'log <vkey>' line is what 'toolwarrant audit key --checkpoint' prints)"))
	} else {
		p, err := readApprovalsPolicy(a.abs(pol), pol)
		if err != nil {
			errs = append(errs, err)
		}
		plan.policy = p
	}
	if len(errs) > 0 {
		return nil, cli.Exit(cli.ExitUsage, errors.Join(errs...))
	}
	return plan, nil
}

// readApprovalsPolicy reads and parses a policy file as untrusted input (localfile), as
// 'toolwarrant audit verify --policy' reads it.
func readApprovalsPolicy(path, name string) (*checkpoint.Policy, error) {
	b, err := localfile.Read(path, checkpoint.MaxPolicyBytes)
	if err != nil {
		return nil, fmt.Errorf("--policy %s: cannot read: %v", name, unwrapPath(err))
	}
	p, err := checkpoint.ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %v", name, err)
	}
	if len(p.Logs) == 0 {
		return nil, fmt.Errorf("--policy %s names no log: add a line 'log <vkey>' with the key 'toolwarrant audit key --checkpoint' prints", name)
	}
	return p, nil
}

// approvalsRun is the log (online) or the bundle (offline) read and verified.
type approvalsRun struct {
	plan     *approvalsPlan
	log      *approvalproof.Log      // online
	verified *approvalproof.Verified // offline
}

// readApprovals reads and verifies the log or the bundle; anything that does not read or
// verify is an exit-2 error saying what and what to do.
func (a *app) readApprovals(ctx context.Context, plan *approvalsPlan) (*approvalsRun, error) {
	run := &approvalsRun{plan: plan}
	if plan.offline {
		data, err := localfile.Read(plan.source, approvalproof.MaxBundleBytes)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("approvals bundle %s not found: write it with 'agentgate lock --approvals LOG --policy FILE' and commit it", a.rel(plan.source)))
		}
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("approvals bundle %s: cannot read: %v", a.rel(plan.source), unwrapPath(err)))
		}
		v, err := approvalproof.VerifyBundle(data, plan.policy)
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("approvals bundle %s: %v", a.rel(plan.source), err))
		}
		run.verified = v
		return run, nil
	}
	l, err := approvalproof.Read(ctx, plan.src, plan.policy, approvalproof.Options{})
	if err != nil {
		if errors.Is(err, approvalproof.ErrUnreadable) {
			err = fmt.Errorf("%w; check the URL or directory, and that 'toolwarrant tlog tiles --out DIR' (or 'audit checkpoint --tiles DIR') published it", err)
		}
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--approvals %s: %v", plan.source, err))
	}
	run.log = l
	return run, nil
}

// check grades every tool digest of lf.
func (r *approvalsRun) check(lf *lockfile.LockfileV2) *approvalproof.Report {
	wants := approvalproof.WantsOf(lf)
	if r.plan.offline {
		return approvalproof.NewReport(r.plan.source, true, r.verified.Checkpoint, r.verified.Check(wants))
	}
	return approvalproof.NewReport(r.plan.source, false, r.log.Checkpoint, r.log.Check(wants))
}

// sourceName names the log or bundle in output: a URL as given, a path relative to the
// working directory.
func (a *app) sourceName(r *approvalproof.Report) string {
	if isURL(r.Source) {
		return r.Source
	}
	return a.rel(a.abs(r.Source))
}

// approvalLine is one failing digest in ci's text output and lock's refusal.
func approvalLine(x approvalproof.Result) string {
	return fmt.Sprintf("%-8s server %q tool %q %s: %s: %s; review it: %s, then %s", warrant.Critical, visible(x.Server), visible(x.Tool), x.Digest, x.Rule, x.Reason, visible(x.Review), visible(x.Approve))
}

// cosigned says who cosigned a report's checkpoint.
func cosigned(r *approvalproof.Report) string {
	if len(r.CosignedBy) == 0 {
		return "no witness cosignature required by the policy"
	}
	return "cosigned by " + strings.Join(r.CosignedBy, ", ")
}

// renderApprovals prints ci's approvals lines: one per failing digest, then a verdict,
// which says what an offline check does not prove.
func (a *app) renderApprovals(w io.Writer, r *approvalproof.Report) {
	for _, x := range r.Tools {
		if x.Failed() {
			fmt.Fprintln(w, approvalLine(x))
		}
	}
	where := fmt.Sprintf("checkpoint %d of %s in %s (%s)", r.Size, r.Origin, a.sourceName(r), cosigned(r))
	mode := ""
	if r.Offline {
		mode = " (offline)"
	}
	if r.Critical == 0 {
		fmt.Fprintf(w, "ok%s: %s approved as of %s\n", mode, cli.Count(r.Checked, "locked tool digest", ""), where)
	} else {
		fmt.Fprintf(w, "approvals%s: %d of %s not approved as of %s\n", mode, r.Critical, cli.Count(r.Checked, "locked tool digest is", "locked tool digests are"), where)
	}
	if r.Offline {
		fmt.Fprintf(w, "offline: the bundle proves each approval is in the log up to checkpoint %d; a rejection or a newer approval not in it is only seen online (agentgate ci --approvals LOG)\n", r.Size)
	}
}

// approvalFindings are the failing digests as findings, on the lockfile line of the tool
// (under the first profile that pins it).
func approvalFindings(r *approvalproof.Report, lines map[string]int, file string) []finding {
	var out []finding
	for _, x := range r.Tools {
		if !x.Failed() {
			continue
		}
		line := 0
		for _, p := range x.Profiles {
			if line = lines[x.Server+"\x00"+p+"\x00tool\x00"+x.Tool]; line != 0 {
				break
			}
		}
		if line == 0 {
			line = lines[x.Server]
		}
		out = append(out, finding{rule: x.Rule, severity: warrant.Critical, failing: true, file: file, line: line,
			message: fmt.Sprintf("server %q tool %q %s: %s", visible(x.Server), visible(x.Tool), x.Digest, x.Reason),
			key:     strings.Join([]string{"approval", x.Server, x.Tool, x.Digest, string(x.Rule)}, "\x00"),
			next:    "review it: " + visible(x.Review) + ", then " + visible(x.Approve)})
	}
	return out
}

// markdownApprovals is the approvals section of a pull request body.
func (a *app) markdownApprovals(r *approvalproof.Report) []byte {
	var b bytes.Buffer
	where := fmt.Sprintf("checkpoint %d of %s in %s (%s)", r.Size, mdCode(r.Origin), mdCode(a.sourceName(r)), cosigned(r))
	if r.Critical == 0 {
		fmt.Fprintf(&b, "\n### Approvals\n\n%s approved as of %s.\n", cli.Count(r.Checked, "locked tool digest", ""), where)
	} else {
		fmt.Fprintf(&b, "\n### Approvals\n\n**CRITICAL**: %d of %s not approved as of %s.\n\n| rule | server | tool | digest | why | review |\n|---|---|---|---|---|---|\n",
			r.Critical, cli.Count(r.Checked, "locked tool digest is", "locked tool digests are"), where)
		for _, x := range r.Tools {
			if x.Failed() {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", x.Rule, mdCell(x.Server), mdCell(x.Tool), mdCode(x.Digest), mdCell(x.Reason), mdCode(x.Review))
			}
		}
	}
	if r.Offline {
		fmt.Fprintf(&b, "\nOffline: the bundle proves each approval is in the log up to checkpoint %d; a rejection or a newer approval not in it is only seen online.\n", r.Size)
	}
	return b.Bytes()
}

// lockApprovals checks, for lock --approvals, every digest of next against the log, and
// returns the bundle to write. A digest that is not approved refuses the lock (exit 1):
// nothing is written.
func (a *app) lockApprovals(run *approvalsRun, next *lockfile.LockfileV2) ([]byte, error) {
	results := run.log.Check(approvalproof.WantsOf(next))
	rep := approvalproof.NewReport(run.plan.source, false, run.log.Checkpoint, results)
	if rep.Critical > 0 {
		for _, x := range results {
			if x.Failed() {
				fmt.Fprintf(a.env.Stderr, "agentgate: %s\n", approvalLine(x))
			}
		}
		return nil, cli.Exit(cli.ExitFound, fmt.Errorf("nothing was written: %d of %s not approved as of checkpoint %d of %s in %s; approve %s in toolwarrant (commands above) and publish its tiles, or lock without --approvals",
			rep.Critical, cli.Count(rep.Checked, "locked tool digest is", "locked tool digests are"), rep.Size, rep.Origin, a.sourceName(rep), map[bool]string{true: "it", false: "them"}[rep.Critical == 1]))
	}
	b, err := run.log.Bundle(results)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	data, err := b.Marshal()
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	a.lockOut.Approvals = &lockApprovalsResult{Bundle: a.rel(run.plan.bundle), Approvals: len(b.Approvals), Origin: rep.Origin, Size: rep.Size, CosignedBy: rep.CosignedBy}
	return data, nil
}

// lockApprovalsResult is lock --json's "approvals".
type lockApprovalsResult struct {
	Bundle     string   `json:"bundle"`
	Written    bool     `json:"written"`
	Approvals  int      `json:"approvals"`
	Origin     string   `json:"origin"`
	Size       int64    `json:"size"`
	CosignedBy []string `json:"cosignedBy"`
}

// writeBundle writes the approvals bundle when it changed, and says so.
func (a *app) writeBundle(o opts, plan *approvalsPlan, data []byte) error {
	r := a.lockOut.Approvals
	what := fmt.Sprintf("%s proven in checkpoint %d of %s", cli.Count(r.Approvals, "approval", ""), r.Size, r.Origin)
	if localfile.Same(plan.bundle, approvalproof.MaxBundleBytes, data) {
		a.say("%s is up to date: %s\n", a.rel(plan.bundle), what)
		return nil
	}
	if err := writeFileAtomic(plan.bundle, data); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %v", a.rel(plan.bundle), unwrapPath(err)))
	}
	r.Written = true
	a.say("wrote %s: %s; commit it with %s ('agentgate ci --approvals %s' verifies it offline)\n", a.rel(plan.bundle), what, a.rel(o.lockfile), a.rel(plan.bundle))
	return nil
}
