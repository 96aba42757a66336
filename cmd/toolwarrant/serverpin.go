package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/pkgid"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Package pins (docs/toolwarrant.md, "Package identity"): what a catalog server runs from,
// resolved by content, checked by every crawl before it lists the server.

// pkgConfig is the registries package pins are resolved against.
func (a *app) pkgConfig(cfg config.Toolwarrant) pkgid.Config {
	return pkgid.Config{NPMRegistry: cfg.NPMRegistry, PyPIIndex: cfg.PyPIIndex, Timeout: cfg.CrawlTimeout}
}

// pinJSON is a server's package pin in `server list --json` and `server pin --json`.
type pinJSON struct {
	Seq      int64           `json:"seq"`
	Spec     string          `json:"spec"`
	Identity json.RawMessage `json:"identity"`
	PinnedAt string          `json:"pinnedAt"`
	PinnedBy string          `json:"pinnedBy"`
}

func pinOut(p *warrant.PackagePin) *pinJSON {
	if p == nil {
		return nil
	}
	return &pinJSON{Seq: p.Seq, Spec: p.Spec, Identity: p.Identity, PinnedAt: p.PinnedAt.UTC().Format("2006-01-02T15:04:05Z"), PinnedBy: p.PinnedBy}
}

// pinSummary is a pin in one line for people: the spec and what pins it by content.
func pinSummary(p *warrant.PackagePin) string {
	if p == nil {
		return "-"
	}
	var pkg lockfile.Package
	if json.Unmarshal(p.Identity, &pkg) != nil {
		return p.Spec
	}
	switch {
	case pkg.Integrity != "":
		return p.Spec + " " + cut(pkg.Integrity, 22)
	case pkg.Digest != "":
		return p.Spec + " " + cut(pkg.Digest, 19)
	case pkg.SPKI != "":
		return p.Spec + " " + cut(pkg.SPKI, 19)
	case len(pkg.Files) > 0:
		return fmt.Sprintf("%s (%d files)", p.Spec, len(pkg.Files))
	}
	return p.Spec
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (a *app) serverPinCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "pin NAME SPEC",
		Short: "Pin what a server runs from: an npm or PyPI version, an image, or its TLS key",
		Long: `Pin what the server NAME runs from, by content, so that every crawl checks it before it
lists the server. SPEC is one of:

  npm:NAME@VERSION           an npm package version (its dist.integrity is pinned)
  pypi:NAME==VERSION         a PyPI project version (the sha256 of every file)
  oci:IMAGE[:TAG][@DIGEST]   an image (a tag is resolved to its manifest digest)
  tls                        the TLS key the server's https URL answers with (SPKI SHA-256)

A floating npm or PyPI spec (no version, a dist-tag such as @latest, a range) is resolved
now and pinned as the exact version it names: a pin says what is deployed. When the
deployment changes, pin again: each pin is numbered and written to the audit log
(package_pinned), and the newest is the one checked.

A crawl then resolves the pinned version again (the registries of $TOOLWARRANT_NPM_REGISTRY
and $TOOLWARRANT_PYPI_INDEX, or the server's TLS key through the crawler's address policy)
and refuses to list the server when it differs — the same version re-published with other
content is CRITICAL package-integrity-changed — or when the registry cannot say; the other
servers are crawled.` + exitCodes("the pin was recorded (or the newest pin already says this)", "") +
			"\n     (2 is also returned when the package or the TLS key cannot be resolved: nothing is recorded)",
		Example: `  toolwarrant server pin everything npm:@modelcontextprotocol/server-everything@2026.8.31
  toolwarrant server pin weather tls
  toolwarrant server pin tools oci:ghcr.io/acme/mcp-tools:1.4 --json`,
		Args: cli.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, spec := args[0], args[1]
			if err := warrant.ValidateServerName(name); err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			if _, err := pkgid.ParseSpec(spec); err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			ctx := cmd.Context()
			cat, svc, cfg, err := a.open(ctx, cmd, false)
			if err != nil {
				return err
			}
			defer cat.Close()
			srv, err := cat.Server(ctx, name)
			if errors.Is(err, warrant.ErrNotFound) {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("server %q is not in the catalog (see 'toolwarrant server list')", name))
			}
			if err != nil {
				return failed(err)
			}
			r := pkgid.New(a.withRoots(a.pkgConfig(cfg)))
			canonical, identity, err := r.Pin(ctx, spec, srv.URL, crawler.DialFor(a.deps.crawl, srv))
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("server %s: pin %s: %w; nothing was recorded", name, spec, err))
			}
			pin, changed, err := svc.PinPackage(ctx, warrant.PackagePin{Server: name, Spec: canonical, Identity: identity})
			if err != nil {
				return failed(err)
			}
			if asJSON {
				return writeJSON(a.env.Stdout, map[string]any{"server": name, "changed": changed, "pin": pinOut(&pin)})
			}
			if !changed {
				fmt.Fprintf(a.env.Stdout, "server %s is already pinned to %s (pin %d); nothing changed\n", name, pinSummary(&pin), pin.Seq)
				return nil
			}
			fmt.Fprintf(a.env.Stdout, "pinned server %s to %s (pin %d)\n", name, pinSummary(&pin), pin.Seq)
			if canonical != spec {
				fmt.Fprintf(a.env.Stderr, "note: %s floats; it was pinned as %s, what it names today\n", spec, canonical)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the pin as one JSON document")
	return c
}

// withRoots adds the crawler's TLS roots (a private CA, tests) to a resolver's config.
func (a *app) withRoots(rc pkgid.Config) pkgid.Config {
	if t := a.deps.crawl.TLSConfig; t != nil && rc.TLSRoots == nil {
		rc.TLSRoots = t.RootCAs
	}
	return rc
}
