package main

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/pkgid"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Package identity (docs/agentgate.md, "Package identity"): lock pins what each server runs
// from — the npm or PyPI version and its content hashes, the image digest, the URL — and
// ci checks it against the registry before it starts any server, so that a package
// re-published under the same version is caught without running it.

// pkgFlags are the package identity flags of lock and ci.
type pkgFlags struct {
	none    bool // lock --no-package: pin the surfaces alone
	pinTLS  bool // lock --pin-tls: pin the TLS key of https servers
	offline bool // ci --offline: read only the lockfile and the config
}

// pkgOutcome is what is known of one server's package.
type pkgOutcome struct {
	server mcpclient.Server
	ref    pkgid.Ref
	// runs is true when the server runs from something agentgate can read a package from
	// (a package runner or a URL); unsupported is why it cannot be pinned then.
	runs        bool
	unsupported error
	// pkg is the package as resolved now (lock; ci online) or as the config names it (ci
	// offline); nil when nothing was resolved.
	pkg  *lockfile.Package
	diff *lockfile.PackageDiff // ci: how it differs from the locked one
	err  error                 // the registry could not say
}

func (p pkgOutcome) failure() error { return p.err }

// resolver returns the package resolver: the registries from the environment
// (AGENTGATE_NPM_REGISTRY, else npm's own npm_config_registry; AGENTGATE_PYPI_INDEX), one
// resolution within --timeout.
func (a *app) resolver(o opts) *pkgid.Resolver {
	return pkgid.New(pkgid.Config{
		NPMRegistry: cmp.Or(a.env.Getenv("AGENTGATE_NPM_REGISTRY"), a.env.Getenv("npm_config_registry")),
		PyPIIndex:   a.env.Getenv("AGENTGATE_PYPI_INDEX"),
		Timeout:     o.timeout,
	})
}

// serverRef reads the package a server runs from its config alone.
func serverRef(s mcpclient.Server) (ref pkgid.Ref, runs bool, err error) {
	if s.Transport == mcpclient.TransportStdio {
		return pkgid.Parse(s.Command, s.Args)
	}
	ref, err = pkgid.ParseURL(s.URL)
	return ref, true, err
}

// eachServer runs one for every server, at most maxParallel at a time, and returns the
// outcomes in the servers' order.
func eachServer(servers []mcpclient.Server, one func(mcpclient.Server) pkgOutcome) []pkgOutcome {
	out := make([]pkgOutcome, len(servers))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = one(s)
		}()
	}
	wg.Wait()
	return out
}

// lockPackages resolves the package of every server for lock. A server agentgate cannot
// read a package from is locked by its surface alone, with a warning; a registry that
// cannot answer fails the lock (nothing is written).
func (a *app) lockPackages(ctx context.Context, o opts, servers []mcpclient.Server) ([]pkgOutcome, error) {
	if a.pkg.none {
		return nil, nil
	}
	r := a.resolver(o)
	out := eachServer(servers, func(s mcpclient.Server) pkgOutcome {
		oc := pkgOutcome{server: s}
		oc.ref, oc.runs, oc.unsupported = serverRef(s)
		if !oc.runs || oc.unsupported != nil {
			return oc
		}
		p, err := r.Resolve(ctx, oc.ref)
		if err != nil {
			oc.err = fmt.Errorf("server %q: cannot pin its package %s: %w", s.Name, refLabel(oc.ref), err)
			return oc
		}
		if oc.ref.Type == lockfile.PackageRemote && a.pkg.pinTLS {
			if !strings.HasPrefix(p.URL, "https://") {
				oc.err = fmt.Errorf("server %q: --pin-tls pins the TLS key of an https server; %s is not https", s.Name, p.URL)
				return oc
			}
			if p.SPKI, err = r.SPKI(ctx, p.URL); err != nil {
				oc.err = fmt.Errorf("server %q: cannot pin its TLS key: %w", s.Name, err)
				return oc
			}
		}
		oc.pkg = &p
		return oc
	})
	if err := failures(a, out, "package identities could not be resolved", "nothing was written (check the registry, raise --timeout, or lock the surfaces alone with --no-package)"); err != nil {
		return nil, err
	}
	for _, oc := range out {
		if oc.unsupported != nil {
			a.warnf("server %q: %v; its surface is locked, its package is not", oc.server.Name, oc.unsupported)
		}
	}
	for _, w := range a.floatingWarnings(o, out) {
		a.warnf("%s", w.Message)
		a.lockOut.PackageWarnings = append(a.lockOut.PackageWarnings, w)
	}
	return out, nil
}

// setPackages writes the resolved packages into the lockfile's servers.
func setPackages(lf *lockfile.LockfileV2, outcomes []pkgOutcome) {
	for _, oc := range outcomes {
		if s, ok := lf.Servers[oc.server.Name]; ok && oc.pkg != nil {
			s.Package = oc.pkg
			lf.Servers[oc.server.Name] = s
		}
	}
}

// floatingWarnings are the warnings for servers whose config names no exact version, each
// with the command that pins what was resolved (or locked).
func (a *app) floatingWarnings(o opts, outcomes []pkgOutcome) []lockfile.PackageWarning {
	var out []lockfile.PackageWarning
	for _, oc := range outcomes {
		if !oc.runs || oc.unsupported != nil || !oc.ref.Floating {
			continue
		}
		w := lockfile.PackageWarning{Server: oc.server.Name, Rule: lockfile.RulePackageFloating, Severity: warrant.Warning}
		msg := fmt.Sprintf("server %q runs %s, which names %s: it runs whatever the registry serves when it starts", oc.server.Name, refLabel(oc.ref), floatWhy(oc.ref))
		if oc.pkg != nil && pinnable(*oc.pkg) {
			w.Pinned = oc.ref.PinnedCommand(*oc.pkg)
			msg += fmt.Sprintf(" (now %s); pin it in %s: %s", oc.pkg, a.rel(o.config), w.Pinned)
		} else {
			msg += fmt.Sprintf("; pin an exact version in %s", a.rel(o.config))
		}
		w.Message = msg
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return lockfile.Less(out[i].Server, out[j].Server) })
	return out
}

// pinnable reports whether p names what a pinned command needs.
func pinnable(p lockfile.Package) bool {
	switch p.Type {
	case lockfile.PackageNPM, lockfile.PackagePyPI:
		return p.Version != ""
	case lockfile.PackageOCI:
		return p.Digest != ""
	}
	return false
}

// floatWhy says how a spec floats: "no version", "the dist-tag latest".
func floatWhy(ref pkgid.Ref) string {
	if ref.Why == "no version" {
		return "no version"
	}
	return ref.Why
}

// refLabel names a package as the config asks for it: "@scope/name@latest", "mcp-server-fetch".
func refLabel(ref pkgid.Ref) string {
	switch ref.Type {
	case lockfile.PackageNPM:
		if ref.Spec != "" {
			return ref.Name + "@" + ref.Spec
		}
	case lockfile.PackagePyPI:
		return ref.Name + ref.Spec
	case lockfile.PackageOCI:
		s := ref.Name
		if ref.Spec != "" {
			s += ":" + ref.Spec
		}
		if ref.Digest != "" {
			s += "@" + ref.Digest
		}
		return s
	case lockfile.PackageRemote:
		return ref.URL
	}
	return ref.Name
}

// checkPackages checks, for ci and diff, the package of every selected server the lockfile
// pins one for: against the registry (the same version must have the same content), or,
// offline, against the config alone (the same package and version). A server the lockfile
// pins no package for is not checked (lockfiles written before package identity keep
// passing). A registry that cannot answer is an error: ci does not pass what it cannot
// check.
func (a *app) checkPackages(ctx context.Context, o opts, locked *lockfile.LockfileV2, servers []mcpclient.Server) ([]pkgOutcome, error) {
	r := a.resolver(o)
	out := eachServer(servers, func(s mcpclient.Server) pkgOutcome {
		oc := pkgOutcome{server: s}
		oc.ref, oc.runs, oc.unsupported = serverRef(s)
		ls, inLock := locked.Servers[s.Name]
		if !inLock || ls.Package == nil {
			return oc
		}
		if !oc.runs || oc.unsupported != nil {
			oc.diff = lockfile.ComparePackage(*ls.Package, nil, lockfile.PackageCompare{})
			return oc
		}
		live := oc.ref.Package()
		opt := lockfile.PackageCompare{ContentPinned: oc.ref.ContentPinned()}
		if !a.pkg.offline {
			var err error
			switch {
			case oc.ref.Type == lockfile.PackageRemote:
				if ls.Package.SPKI != "" && live.URL == ls.Package.URL {
					live.SPKI, err = r.SPKI(ctx, live.URL)
					opt.Resolved = true
				}
			default:
				live, err = r.Resolve(ctx, oc.ref)
				opt.Resolved = true
			}
			if err != nil {
				oc.err = fmt.Errorf("server %q: cannot check its package %s: %w", s.Name, refLabel(oc.ref), err)
				return oc
			}
		}
		oc.pkg = &live
		oc.diff = lockfile.ComparePackage(*ls.Package, &live, opt)
		return oc
	})
	what := "cannot compare: ci does not pass what it cannot check (--offline checks the names and versions the config asks for, without the registry)"
	if err := failures(a, out, "package identities could not be checked", what); err != nil {
		return nil, err
	}
	// The command to pin a floating spec names what it resolves to now, or offline, the
	// locked version when the config still names the locked package.
	for i, oc := range out {
		if oc.ref.Floating && (oc.pkg == nil || !pinnable(*oc.pkg)) {
			if ls, ok := locked.Servers[oc.server.Name]; ok && ls.Package != nil && ls.Package.Name == oc.ref.Name && ls.Package.Type == oc.ref.Type {
				p := *ls.Package
				out[i].pkg = &p
			}
		}
	}
	return out, nil
}

// packageDiffs collects the outcomes' diffs by server, for CompareV2.
func packageDiffs(outcomes []pkgOutcome) map[string]*lockfile.PackageDiff {
	m := map[string]*lockfile.PackageDiff{}
	for _, oc := range outcomes {
		if oc.diff != nil {
			m[oc.server.Name] = oc.diff
		}
	}
	return m
}

// refused reports whether a server's package failed its check so badly (CRITICAL: the same
// version with other content) that the server must not be started to list it.
func refused(oc pkgOutcome) bool { return oc.diff != nil && oc.diff.Grade >= warrant.Critical }

// packageLabel names a server's package in a report line: the locked one.
func packageLabel(d *lockfile.PackageDiff) string {
	if d.Locked != nil {
		return d.Locked.String()
	}
	if d.Live != nil {
		return d.Live.String()
	}
	return "?"
}

// offlineNote says how many servers' surfaces ci --offline left unchecked.
func (a *app) offlineNote(servers []mcpclient.Server) {
	if n := len(servers); n > 0 {
		fmt.Fprintf(a.env.Stderr, "agentgate: --offline: %d %s %s (run ci without --offline to list %s)\n",
			n, plural(n, "server", "servers"), plural(n, "was checked by its package identity only", "were checked by their package identities only"),
			plural(n, "its surface", "their surfaces"))
	}
}

// usageOffline refuses --offline where it cannot apply: no lockfile, or a version 1 one.
func usageOffline(version int, lockName string) error {
	if version == 0 {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("--offline checks what %s pins, and there is no %s: run 'agentgate lock' first", lockName, lockName))
	}
	return cli.Exit(cli.ExitUsage, fmt.Errorf("--offline checks the package identities of a version 2 lockfile; %s is version %d (upgrade it with 'agentgate lock --lockfile-version 2')", lockName, version))
}

// runsFromPackage reports whether a stdio server is started by a package runner (npx, uvx,
// docker run, ...), which fetches and installs before the server runs.
func runsFromPackage(s mcpclient.Server) bool {
	if s.Transport != mcpclient.TransportStdio {
		return false
	}
	_, runs, _ := pkgid.Parse(s.Command, s.Args)
	return runs
}
