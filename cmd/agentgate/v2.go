package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
)

// lockResult is lock --json: what was written.
type lockResult struct {
	Lockfile        string `json:"lockfile"`
	LockfileVersion int    `json:"lockfileVersion"`
	Written         bool   `json:"written"`
	// Snapshot is the snapshot file ("" with --no-snapshot); SnapshotWritten whether it
	// changed.
	Snapshot          string `json:"snapshot,omitempty"`
	SnapshotWritten   bool   `json:"snapshotWritten"`
	Upgraded          bool   `json:"upgraded,omitempty"`
	Dropped           string `json:"dropped,omitempty"`
	Servers           int    `json:"servers"`
	Profiles          int    `json:"profiles,omitempty"`
	Tools             int    `json:"tools"`
	Prompts           int    `json:"prompts,omitempty"`
	Resources         int    `json:"resources,omitempty"`
	ResourceTemplates int    `json:"resourceTemplates,omitempty"`
	// Packages counts the servers whose package identity is pinned; PackageWarnings are
	// the floating specs, with the command that pins them.
	Packages        int                       `json:"packages,omitempty"`
	PackageWarnings []lockfile.PackageWarning `json:"packageWarnings,omitempty"`
	// Findings are the first-sight findings on the definitions pinned for the first time
	// (docs/findings.md), most severe first.
	Findings []sightedFinding `json:"findings,omitempty"`
	// Approvals is what lock --approvals proved and wrote.
	Approvals *lockApprovalsResult `json:"approvals,omitempty"`
}

// say prints a line of lock's human output (nothing under --json).
func (a *app) say(format string, args ...any) {
	if !a.lockJSON {
		fmt.Fprintf(a.env.Stdout, format, args...)
	}
}

// profileFlags are lock's flags that choose the client profiles.
type profileFlags struct {
	names           []string
	capabilities    string
	profileName     string
	protocolVersion string
}

// explicit returns the profiles the flags name, or nil when none is given.
func (f profileFlags) explicit(cmd *cobra.Command) ([]mcpclient.Profile, error) {
	var out []mcpclient.Profile
	seen := map[string]bool{}
	for _, n := range f.names {
		for _, n := range strings.Split(n, ",") {
			n = strings.TrimSpace(n)
			p, ok := mcpclient.BuiltinProfile(n)
			if !ok {
				return nil, cli.Usage(cmd, "unknown profile %q; the built-in profiles are %s (or give --capabilities)", n, strings.Join(mcpclient.BuiltinProfileNames(), ", "))
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, p)
			}
		}
	}
	if f.capabilities != "" {
		p, err := mcpclient.NewProfile(f.profileName, f.protocolVersion, []byte(f.capabilities))
		if err != nil {
			return nil, cli.Usage(cmd, "--capabilities: %v", err)
		}
		if seen[p.Name] {
			return nil, cli.Usage(cmd, "--profile-name %q is also a --profile", p.Name)
		}
		out = append(out, p)
	} else if cmd.Flags().Changed("profile-name") || cmd.Flags().Changed("protocol-version") {
		return nil, cli.Usage(cmd, "--profile-name and --protocol-version go with --capabilities")
	}
	return out, nil
}

// lockedProfiles are the clients a server was locked as, from the lockfile.
func lockedProfiles(s lockfile.ServerV2) []mcpclient.Profile {
	var out []mcpclient.Profile
	for _, name := range s.SortedProfiles() {
		c := s.Profiles[name].Client
		out = append(out, mcpclient.Profile{Name: name, ProtocolVersion: c.ProtocolVersion, Capabilities: c.Capabilities})
	}
	return out
}

func genericProfile() mcpclient.Profile {
	p, _ := mcpclient.BuiltinProfile(mcpclient.ProfileGeneric)
	return p
}

// job is one server to list as one client.
type job struct {
	server  mcpclient.Server
	profile mcpclient.Profile
}

// listedV2 is the outcome of one job.
type listedV2 struct {
	job
	locked lockfile.ProfileV2
	defs   lockfile.Definitions
	tools  int
	notes  []string
	err    error
}

func (r listedV2) failure() error { return r.err }

// listAllV2 runs the jobs, at most maxParallel at a time, and returns their outcomes in
// order. Notes from the client (lines skipped, probes unanswered) are warnings.
func (a *app) listAllV2(ctx context.Context, o opts, jobs []job) []listedV2 {
	out := inParallel(a, jobs, "", false, func(j job) listedV2 { return a.listOneV2(ctx, o, j) })
	// Package runners started together can race on a cold cache (two npx installing into
	// ~/.npm/_npx at once): a server run by one that failed to start is tried once more, on
	// its own.
	var again []int
	for i, r := range out {
		if len(jobs) > 1 && ctx.Err() == nil && r.err != nil && errors.Is(r.err, mcpclient.ErrUnavailable) && runsFromPackage(r.server) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		fmt.Fprintf(a.env.Stderr, "agentgate: %d %s run by a package runner failed to start beside the others; trying %s once more, one at a time\n",
			len(again), plural(len(again), "server", "servers"), plural(len(again), "it", "them"))
		for _, i := range again {
			out[i] = a.listOneV2(ctx, o, jobs[i])
		}
	}
	for _, r := range out {
		for _, n := range r.notes {
			a.warnf("server %q (%s): %s", r.server.Name, r.profile.Name, n)
		}
	}
	return out
}

func (a *app) listOneV2(ctx context.Context, o opts, j job) listedV2 {
	p := j.profile
	opt := a.listOptions(o)
	opt.Profile, opt.Everything = &p, true
	l, err := a.deps.list(ctx, j.server, opt)
	r := listedV2{job: j}
	if err != nil {
		r.err = err
		return r
	}
	d := lockfile.Definitions{Instructions: l.Instructions}
	for _, t := range l.Tools {
		d.Tools = append(d.Tools, t.Raw)
	}
	for _, it := range l.Prompts {
		d.Prompts = append(d.Prompts, it.Raw)
	}
	for _, it := range l.Resources {
		d.Resources = append(d.Resources, it.Raw)
	}
	for _, it := range l.ResourceTemplates {
		d.ResourceTemplates = append(d.ResourceTemplates, it.Raw)
	}
	locked, defs, err := lockfile.LockProfile(lockfile.Client{ProtocolVersion: p.ProtocolVersion, Capabilities: p.Capabilities}, d)
	if err != nil {
		r.err = fmt.Errorf("server %q (%s): cannot be locked: %v", j.server.Name, p.Name, err)
		return r
	}
	r.locked, r.defs, r.tools = locked, defs, len(locked.Tools)
	r.notes = l.Notes
	return r
}

// surfaceOf gathers job results into a lockfile and its snapshot.
func surfaceOf(results []listedV2, generatedBy string, o opts, a *app) (*lockfile.LockfileV2, lockfile.SnapshotV2) {
	lf := &lockfile.LockfileV2{GeneratedBy: generatedBy, GeneratedAt: a.deps.now(), Servers: map[string]lockfile.ServerV2{}}
	snap := lockfile.SnapshotV2{}
	for _, r := range results {
		s, ok := lf.Servers[r.server.Name]
		if !ok {
			s = lockfile.ServerV2{Profiles: map[string]lockfile.ProfileV2{}}
			lf.Servers[r.server.Name] = s
			snap[r.server.Name] = map[string]lockfile.Definitions{}
		}
		s.Profiles[r.profile.Name] = r.locked
		snap[r.server.Name][r.profile.Name] = r.defs
	}
	return lf, snap
}

// lockV2 writes a version 2 lockfile. old is the lockfile being refreshed (nil for a new
// one or an upgrade from version 1).
func (a *app) lockV2(cmd *cobra.Command, o opts, cfg *mcpclient.Config, old *lockfile.LockfileV2, server string, explicit []mcpclient.Profile, withSnapshot bool, approvals *approvalsRun) error {
	var oldSnap lockfile.SnapshotV2
	if old != nil {
		oldSnap = a.readSnapshotV2(o)
	}
	servers, err := a.selectServers(cmd, o, cfg, server, old != nil && hasKey(old.Servers, server))
	if err != nil {
		return err
	}
	dropped := droppedName(server, servers)
	pkgs, err := a.lockPackages(cmd.Context(), o, servers)
	if err != nil {
		return err
	}
	var jobs []job
	for _, s := range servers {
		profiles := explicit
		if profiles == nil && old != nil {
			if ls, ok := old.Servers[s.Name]; ok {
				profiles = lockedProfiles(ls)
			}
		}
		if profiles == nil {
			profiles = []mcpclient.Profile{genericProfile()}
		}
		for _, p := range profiles {
			jobs = append(jobs, job{server: s, profile: p})
		}
	}
	results := a.listAllV2(cmd.Context(), o, jobs)
	if err := failures(a, results, "listings could not be done", "nothing was written"); err != nil {
		return err
	}
	next, snap := surfaceOf(results, "agentgate@"+a.deps.version, o, a)
	setPackages(next, pkgs)
	if server != "" && old != nil {
		keepOthers(next.Servers, snap, old.Servers, oldSnap, server, snapshotMatchesV2)
	}
	if old != nil && lockfile.SameSurfaceV2(old, next) {
		next.GeneratedAt = old.GeneratedAt
	}
	data, err := next.Marshal()
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	what := countsV2(next)
	upgraded, warnings := a.lockOut.Upgraded, a.lockOut.PackageWarnings
	a.lockOut = lockResult{Lockfile: a.rel(o.lockfile), LockfileVersion: lockfile.Version2, Upgraded: upgraded, Servers: len(next.Servers), PackageWarnings: warnings}
	for _, s := range next.Servers {
		if s.Package != nil {
			a.lockOut.Packages++
		}
		for _, p := range s.Profiles {
			a.lockOut.Profiles++
			a.lockOut.Tools += len(p.Tools)
			a.lockOut.Prompts += len(p.Prompts)
			a.lockOut.Resources += len(p.Resources)
			a.lockOut.ResourceTemplates += len(p.ResourceTemplates)
		}
	}
	a.lockOut.Findings = firstSight(snap, next, old)
	a.reportFirstSight(a.lockOut.Findings)
	var marshalSnap func() ([]byte, error)
	if withSnapshot {
		marshalSnap = func() ([]byte, error) { return lockfile.MarshalSnapshotV2(snap) }
	}
	if approvals == nil {
		return a.writeLock(o, data, " (lockfileVersion 2)", what, dropped, marshalSnap)
	}
	// Every digest must be approved before anything is written.
	bundle, err := a.lockApprovals(approvals, next)
	if err != nil {
		return err
	}
	if err := a.writeLock(o, data, " (lockfileVersion 2)", what, dropped, marshalSnap); err != nil {
		return err
	}
	return a.writeBundle(o, approvals.plan, bundle)
}

// snapshotMatchesV2 reports whether the snapshot entries of one server are exactly what s
// locks.
func snapshotMatchesV2(defs map[string]lockfile.Definitions, s lockfile.ServerV2) bool {
	if len(defs) != len(s.Profiles) {
		return false
	}
	for pn, p := range s.Profiles {
		d, ok := defs[pn]
		if !ok {
			return false
		}
		got, _, err := lockfile.LockProfile(p.Client, d)
		if err != nil || got.SurfaceHash != p.SurfaceHash {
			return false
		}
	}
	return true
}

// countsV2 says "2 servers, 3 profiles: 33 tools, 8 prompts, 14 resources, 4 resource templates".
func countsV2(lf *lockfile.LockfileV2) string {
	var profiles, tools, prompts, resources, templates int
	for _, s := range lf.Servers {
		for _, p := range s.Profiles {
			profiles++
			tools += len(p.Tools)
			prompts += len(p.Prompts)
			resources += len(p.Resources)
			templates += len(p.ResourceTemplates)
		}
	}
	return fmt.Sprintf("%d %s, %d %s: %d %s, %d %s, %d %s, %d %s",
		len(lf.Servers), plural(len(lf.Servers), "server", "servers"), profiles, plural(profiles, "profile", "profiles"),
		tools, plural(tools, "tool", "tools"), prompts, plural(prompts, "prompt", "prompts"),
		resources, plural(resources, "resource", "resources"), templates, plural(templates, "resource template", "resource templates"))
}

// readSnapshotV2 returns the version 2 snapshot, or nil when it is missing or unusable (it
// only adds detail to diffs; a problem with it is a warning).
func (a *app) readSnapshotV2(o opts) lockfile.SnapshotV2 {
	data, err := readLocal(o.snapshot, maxSnapshotBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.warnf("%s: cannot read: %v; changes cannot be graded rule by rule", a.rel(o.snapshot), unwrapPath(err))
		}
		return nil
	}
	s, warns, err := lockfile.ParseSnapshotV2(data)
	if err != nil {
		a.warnf("%s: %v; changes cannot be graded rule by rule", a.rel(o.snapshot), err)
		return nil
	}
	for _, w := range warns {
		a.warnf("%s: %s", a.rel(o.snapshot), w)
	}
	return s
}

// sortedJobs orders jobs by server then profile, for deterministic output.
func sortedJobs(jobs []job) {
	sort.SliceStable(jobs, func(i, j int) bool {
		if jobs[i].server.Name != jobs[j].server.Name {
			return lockfile.Less(jobs[i].server.Name, jobs[j].server.Name)
		}
		return lockfile.Less(jobs[i].profile.Name, jobs[j].profile.Name)
	})
}

// jsonCompact is used for values in human output.
func jsonCompact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
