package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/findings"
	"github.com/agentgate-dev/agentgate/internal/textguard"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// crawlJSON is one server's result in `crawl --json` (docs/toolwarrant.md).
type crawlJSON struct {
	Server      string            `json:"server"`
	OK          bool              `json:"ok"`
	Error       string            `json:"error,omitempty"`
	Crawl       int64             `json:"crawl,omitempty"`
	Transport   string            `json:"transport,omitempty"`
	Tools       int               `json:"tools"`
	Accepted    int               `json:"accepted"`
	NewVersions []newVersionJSON  `json:"newVersions"`
	Refused     []refusedToolJSON `json:"refused"`
	Removed     []string          `json:"removed"`
	// PolicyError says why the review policies could not be applied (the new versions
	// stay pending).
	PolicyError string `json:"policyError,omitempty"`
}

type newVersionJSON struct {
	Tool     string           `json:"tool"`
	Digest   warrant.Digest   `json:"digest"`
	Baseline warrant.Digest   `json:"baseline"`
	Grade    warrant.Severity `json:"grade"`
	Rules    []warrant.Rule   `json:"rules"`
	Flags    []string         `json:"flags"`
	// Findings are the first-sight findings of the new version that its baseline did not
	// have (docs/findings.md): what its text asks of the model.
	Findings []findings.Finding `json:"findings"`
	// ApprovedByPolicy is set when an active review policy approved the version at this
	// crawl: the policy, its digest, and what it accepted.
	ApprovedByPolicy *warrant.PolicyApproval `json:"approvedByPolicy,omitempty"`
}

type refusedToolJSON struct {
	Tool   string `json:"tool"`
	Index  int    `json:"index"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

func (a *app) crawlCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "crawl [NAME...]",
		Short: "List the tools of every server (or the named ones) and record what changed",
		Long: `List the tools of every server in the catalog, or of the named ones, directly over
Streamable HTTP (SSE fallback), and record one observation per tool. Every definition not
seen before becomes an immutable version with a pending proposal, graded against the
approved version (else the previous one). A tool whose definition is not valid I-JSON
(invalid UTF-8, a lone surrogate, a duplicate member name) or whose name is missing or
served twice is refused, naming the server, the tool and the byte offset; the rest of the
listing is still recorded.

Servers are listed concurrently ($TOOLWARRANT_CRAWL_CONCURRENCY, default 4), each bounded by
$TOOLWARRANT_CRAWL_TIMEOUT (default 30s), $TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES per
message (a body or a server-sent event; default 10 MiB), $TOOLWARRANT_CRAWL_MAX_LISTING_BYTES
for all pages of tools/list (24 MiB) and $TOOLWARRANT_CRAWL_MAX_SERVER_BYTES for everything
the server sends (32 MiB). A server over a bound is not recorded; the others are. Header values come from the variables named by
'server add --header-env'. Progress goes to stderr when it is a terminal.` +
			exitCodes("every server was crawled and nothing new was seen",
				"every server was crawled, and a new version was left pending or a tool refused (a version\n     an active review policy approved is not pending)") +
			"\n     (2 is also returned when some servers were crawled and others could not be; what\n     could be crawled is recorded)",
		Example: "  toolwarrant crawl\n  toolwarrant crawl weather --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cat, svc, cfg, err := a.open(ctx, cmd, false)
			if err != nil {
				return err
			}
			defer cat.Close()
			ccfg := a.deps.crawl
			ccfg.Concurrency, ccfg.Timeout, ccfg.MaxResponseBytes = cfg.CrawlConcurrency, cfg.CrawlTimeout, cfg.CrawlMaxResponseBytes
			ccfg.MaxListingBytes, ccfg.MaxServerBytes = cfg.CrawlMaxListingBytes, cfg.CrawlMaxServerBytes
			ccfg.ClientVersion = a.deps.version
			if cli.IsTerminal(a.env.Stderr) {
				ccfg.Progress = func(done, total int, name string) {
					fmt.Fprintf(a.env.Stderr, "\rcrawled %d/%d servers (last: %s)\x1b[K", done, total, name)
					if done == total {
						fmt.Fprint(a.env.Stderr, "\r\x1b[K")
					}
				}
			}
			outcomes, err := svc.Crawl(ctx, warrant.CrawlRequest{Servers: args, RefuseUnknown: true,
				Headers: config.HeaderResolver(a.env.Getenv, nil), Lister: crawler.Lister{Config: ccfg},
				Packages: crawler.PackageChecker(ccfg, a.pkgConfig(cfg))})
			var unknown *warrant.UnknownServerError
			switch {
			case errors.As(err, &unknown):
				return cli.Exit(cli.ExitUsage, fmt.Errorf("server %q is not in the catalog (see 'toolwarrant server list')", unknown.Name))
			case err != nil:
				return failed(err)
			case len(outcomes) == 0:
				if asJSON {
					return writeJSON(a.env.Stdout, map[string]any{"servers": []crawlJSON{}})
				}
				fmt.Fprintln(a.env.Stdout, "no servers to crawl; add one with 'toolwarrant server add NAME URL'")
				return nil
			}

			var results []crawlJSON
			failedAny, foundAny := false, false
			for _, o := range outcomes {
				r := crawlJSON{Server: o.Server, NewVersions: []newVersionJSON{}, Refused: []refusedToolJSON{}, Removed: []string{}}
				switch o.Failed {
				case "":
				case warrant.StageRecord:
					failedAny = true
					r.Error = fmt.Sprintf("server %q: record the crawl: %v", o.Server, o.Err)
					results = append(results, r)
					continue
				default:
					failedAny = true
					r.Error = o.Err.Error()
					results = append(results, r)
					continue
				}
				res := o.Result
				r.OK, r.Crawl, r.Transport, r.Tools, r.Accepted, r.Removed = true, res.Crawl, o.Transport, res.Tools, res.Accepted, res.Removed
				var siblings []string
				if len(res.New) > 0 {
					siblings = a.toolNames(cmd.Context(), svc, o.Server)
				}
				byPolicy := map[string]*warrant.PolicyApproval{}
				for _, pd := range res.ByPolicy {
					byPolicy[pd.Tool] = &pd.Policy
				}
				pending := 0
				for _, nv := range res.New {
					r.NewVersions = append(r.NewVersions, newVersionJSON{Tool: nv.Tool, Digest: nv.Digest, Baseline: nv.Baseline,
						Grade: nv.Drift.Grade, Rules: orEmpty(nv.Drift.Rules()), Flags: orEmpty(nv.Inspection.Flags()),
						Findings: a.firstSight(cmd.Context(), cat, o.Server, nv, siblings), ApprovedByPolicy: byPolicy[nv.Tool]})
					if byPolicy[nv.Tool] == nil {
						pending++
					}
				}
				r.PolicyError = res.PolicyError
				for _, e := range res.Refused {
					r.Refused = append(r.Refused, refusedToolJSON{Tool: e.Tool, Index: e.Index, Offset: e.Offset, Reason: e.Reason})
				}
				if pending > 0 || len(res.Refused) > 0 || res.PolicyError != "" {
					foundAny = true
				}
				results = append(results, r)
			}
			if asJSON {
				if err := writeJSON(a.env.Stdout, map[string]any{"servers": results}); err != nil {
					return err
				}
			} else {
				a.printCrawl(results)
			}
			switch {
			case failedAny:
				if asJSON {
					return cli.Exit(cli.ExitUsage, nil)
				}
				return cli.Exit(cli.ExitUsage, errors.New("some servers could not be crawled (see above)"))
			case foundAny:
				return cli.Found()
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (fields in docs/toolwarrant.md)")
	return c
}

// toolNames lists the tools the catalog knows on server, for the cross-tool rule of the
// first-sight findings ("" on a read error: the rule then knows no other names).
func (a *app) toolNames(ctx context.Context, svc *warrant.Service, server string) []string {
	rows, err := svc.List(ctx, false)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range rows {
		if r.Server == server {
			out = append(out, r.Tool)
		}
	}
	return out
}

// firstSight returns the findings nv's definition has and its baseline had not. A version
// that cannot be read back is reported as a finding, never silently skipped.
//
// It reads the two versions alone (one keyed read each), never the catalog's state: a first
// crawl of a server of thousands of tools scans each of them once.
func (a *app) firstSight(ctx context.Context, cat warrant.Catalog, server string, nv warrant.NewVersion, siblings []string) []findings.Finding {
	var before []byte
	to, err := cat.Version(ctx, server, nv.Tool, nv.Digest)
	if err == nil && nv.Baseline != "" {
		var from warrant.Version
		from, err = cat.Version(ctx, server, nv.Tool, nv.Baseline)
		before = from.Canonical
	}
	var fs []findings.Finding
	if err == nil {
		fs, err = findings.Introduced(warrant.KindTool, before, to.Canonical, siblings)
	}
	if err != nil {
		return []findings.Finding{{Rule: findings.RuleUnscanned, Severity: warrant.Warning, Pointer: "",
			Reason: "the recorded definition could not be read back to scan it: " + err.Error()}}
	}
	return orEmpty(fs)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *app) printCrawl(results []crawlJSON) {
	w := a.env.Stdout
	for _, r := range results {
		if !r.OK {
			fmt.Fprintf(w, "%s: error: %s\n", r.Server, visible(r.Error))
			continue
		}
		fmt.Fprintf(w, "%s: %s listed, %s (crawl %d)\n", r.Server, count(r.Tools, "tool"), count(len(r.NewVersions), "new version"), r.Crawl)
		for _, nv := range r.NewVersions {
			kind := "changed"
			if nv.Baseline == "" {
				kind = "new"
			}
			rules := make([]string, len(nv.Rules))
			for i, ru := range nv.Rules {
				rules[i] = string(ru)
			}
			flags := ""
			if len(nv.Flags) > 0 {
				flags = "  [" + strings.Join(nv.Flags, ",") + "]"
			}
			byPolicy := ""
			if p := nv.ApprovedByPolicy; p != nil {
				byPolicy = fmt.Sprintf("  approved by policy %s (%s)", p.Name, p.Digest.Short())
			}
			fmt.Fprintf(w, "  %-7s %s  %s  %s %s%s%s\n", kind, visibleName(nv.Tool, nv.Flags), nv.Digest.Short(), nv.Grade, strings.Join(rules, ","), flags, byPolicy)
			for _, f := range nv.Findings {
				fmt.Fprintf(w, "          finding %s %s at %s: %s\n", f.Severity, f.Rule, visible(f.Pointer), visible(f.Reason))
			}
		}
		for _, e := range r.Refused {
			fmt.Fprintf(w, "  refused %s\n", visible((&warrant.IngestError{Server: r.Server, Tool: e.Tool, Index: e.Index, Offset: e.Offset, Reason: e.Reason}).Error()))
		}
		for _, t := range r.Removed {
			fmt.Fprintf(w, "  removed %s (no longer listed)\n", visible(t))
		}
		if r.PolicyError != "" {
			fmt.Fprintf(w, "  review policies not applied, the new versions stay pending: %s\n", visible(r.PolicyError))
		}
	}
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// visibleName is visible, and for a name flagged as a look-alike (confusable or
// mixed-script) every non-ASCII character as \uXXXX, so the odd letter shows.
func visibleName(name string, flags []string) string {
	if !slices.Contains(flags, "confusable") && !slices.Contains(flags, "mixed-script") {
		return visible(name)
	}
	var b strings.Builder
	for _, r := range visible(name) {
		if r < 0x80 {
			b.WriteRune(r)
		} else if r > 0xFFFF {
			fmt.Fprintf(&b, "\\U%08X", r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// visible renders text for a terminal: every character textguard rates High is shown as
// an escape, never printed raw.
func visible(s string) string { return textguard.Render(s, textguard.High) }
