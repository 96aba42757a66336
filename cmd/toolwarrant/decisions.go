package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) decisionsCmd() *cobra.Command {
	var (
		asJSON, windows bool
		servers, outs   []string
		point, since    string
	)
	c := &cobra.Command{
		Use:   "decisions",
		Short: "What the enforcement points let agents see and call, and what they stopped, from the audit log",
		Long: `List the decision records that 'toolwarrant serve' (ExtMcp), 'toolwarrant proxy' and the
AgentCore interceptor write to the audit log (signed decisions_recorded entries, every
--record-every and on SIGTERM): per server, tool, method, live digest, outcome and approval
set, how many decisions there were.

Outcomes: allowed (a listed tool was kept, or a tools/call passed), filtered (a listed tool
was removed from the listing), denied (a tools/call, or a whole message that could not be
decided, was refused), would-deny (shadow mode let through what enforcement would have
stopped). CAUSE says why (unknown, unapproved, drifted, unlisted, refused, stale,
malformed, method, ...). APPROVALS names the approval set the decisions were made under
(the first 12 hex digits of a SHA-256 over the server's sorted "tool digest" lines): two
points that show the same name decided on the same approvals.

The table sums the windows per point, server, tool, method, outcome, cause, digest and
approval set, with the first and last window; --windows prints one row per record of every
window instead; --json prints the entries themselves (fields in docs/toolwarrant.md).
--since takes a duration (24h) or an RFC 3339 time.` + remoteNote + exitCodes("listed (also when there is nothing to list)", ""),
		Example: "  toolwarrant decisions\n  toolwarrant decisions --outcome would-deny --since 24h\n  toolwarrant decisions --server weather --json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, o := range outs {
				if !slices.Contains(warrant.DecisionOutcomes, o) {
					return cli.Usage(cmd, "--outcome %q: use one of %s", o, strings.Join(warrant.DecisionOutcomes, ", "))
				}
			}
			var from time.Time
			if since != "" {
				if d, err := time.ParseDuration(since); err == nil && d > 0 {
					from = time.Now().Add(-d)
				} else if t, err := time.Parse(time.RFC3339, since); err == nil {
					from = t
				} else {
					return cli.Usage(cmd, "--since %q: use a duration such as 24h or an RFC 3339 time such as 2026-12-01T00:00:00Z", since)
				}
			}
			recs, err := a.auditRecords(cmd)
			if err != nil {
				return err
			}
			entries, err := warrant.ParseDecisions(recs)
			if err != nil {
				return failed(err)
			}
			entries = filterDecisions(entries, servers, outs, point, from)
			if asJSON {
				if entries == nil {
					entries = []warrant.DecisionEntry{}
				}
				return writeJSON(a.env.Stdout, map[string]any{"decisions": entries})
			}
			if len(entries) == 0 {
				fmt.Fprintln(a.env.Stdout, "no decision records; 'toolwarrant serve' and 'toolwarrant proxy' write them every --record-every and when they stop")
				return nil
			}
			if windows {
				return writeDecisionWindows(a.env.Stdout, entries)
			}
			return writeDecisionSums(a.env.Stdout, entries)
		},
	}
	a.addRemoteFlag(c)
	f := c.Flags()
	f.StringArrayVar(&servers, "server", nil, "only this `SERVER` (repeatable)")
	f.StringArrayVar(&outs, "outcome", nil, "only this `OUTCOME`: allowed, filtered, denied or would-deny (repeatable)")
	f.StringVar(&point, "point", "", "only this enforcement `POINT`: extmcp, proxy or agentcore")
	f.StringVar(&since, "since", "", "only windows that ended after `WHEN` (a duration such as 24h, or an RFC 3339 time)")
	f.BoolVar(&windows, "windows", false, "one row per record of every window, instead of sums")
	f.BoolVar(&asJSON, "json", false, "print the entries as one JSON document")
	return c
}

// auditRecords reads the whole audit log, from the catalog or from --remote.
func (a *app) auditRecords(cmd *cobra.Command) ([]warrant.AuditRecord, error) {
	r, err := a.remote(cmd)
	if err != nil {
		return nil, err
	}
	if r != nil {
		pr, pw := io.Pipe()
		go func() {
			_, _, err := r.ExportAudit(cmd.Context(), pw, 0, nil)
			pw.CloseWithError(err)
		}()
		recs, err := audit.ParseExport(pr)
		pr.Close()
		if err != nil {
			return nil, remoteFailed(err)
		}
		return recs, nil
	}
	cat, _, _, err := a.open(cmd.Context(), cmd, true)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	var recs []warrant.AuditRecord
	err = eachRecord(cmd, cat, func(r warrant.AuditRecord) error {
		if r.Type == warrant.EventDecisionsRecorded {
			recs = append(recs, r)
		}
		return nil
	})
	return recs, failed(err)
}

// filterDecisions keeps the records that match, and the entries left with any.
func filterDecisions(entries []warrant.DecisionEntry, servers, outcomes []string, point string, from time.Time) []warrant.DecisionEntry {
	var out []warrant.DecisionEntry
	for _, e := range entries {
		if (point != "" && e.Point != point) || (!from.IsZero() && e.To.Before(from)) {
			continue
		}
		var keep []warrant.DecisionCount
		for _, r := range e.Records {
			if (len(servers) == 0 || slices.Contains(servers, r.Server)) && (len(outcomes) == 0 || slices.Contains(outcomes, r.Outcome)) {
				keep = append(keep, r)
			}
		}
		if len(keep) > 0 {
			e.Records = keep
			out = append(out, e)
		}
	}
	return out
}

func pointLabel(e warrant.DecisionEntry) string {
	if e.Shadow {
		return e.Point + " (shadow)"
	}
	return e.Point
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortDigest(d warrant.Digest) string { return shortOrDash(d) }

func writeDecisionWindows(w io.Writer, entries []warrant.DecisionEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TO\tPOINT\tINSTANCE\tSERVER\tTOOL\tMETHOD\tOUTCOME\tCAUSE\tCOUNT\tDIGEST\tAPPROVALS")
	for _, e := range entries {
		for _, r := range e.Records {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.To.UTC().Format(time.RFC3339), pointLabel(e), e.Instance,
				dash(r.Server), dash(visibleName(r.Tool, nil)), r.Method, r.Outcome, dash(r.Cause), r.Count, shortDigest(r.Digest), shortDigest(r.Approvals))
		}
	}
	return tw.Flush()
}

func writeDecisionSums(w io.Writer, entries []warrant.DecisionEntry) error {
	type key struct {
		point                                string
		server, tool, method, outcome, cause string
		digest, approvals                    warrant.Digest
	}
	type sum struct {
		n           uint64
		first, last time.Time
	}
	sums := map[key]*sum{}
	for _, e := range entries {
		for _, r := range e.Records {
			k := key{pointLabel(e), r.Server, r.Tool, r.Method, r.Outcome, r.Cause, r.Digest, r.Approvals}
			s := sums[k]
			if s == nil {
				s = &sum{first: e.From, last: e.To}
				sums[k] = s
			}
			s.n += r.Count
			if e.From.Before(s.first) {
				s.first = e.From
			}
			if e.To.After(s.last) {
				s.last = e.To
			}
		}
	}
	keys := make([]key, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int {
		return cmp.Or(cmp.Compare(x.server, y.server), cmp.Compare(x.tool, y.tool), cmp.Compare(x.method, y.method),
			cmp.Compare(x.outcome, y.outcome), cmp.Compare(x.point, y.point), cmp.Compare(x.cause, y.cause),
			cmp.Compare(x.digest, y.digest), cmp.Compare(x.approvals, y.approvals))
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tMETHOD\tOUTCOME\tCAUSE\tCOUNT\tPOINT\tDIGEST\tAPPROVALS\tFROM\tTO")
	for _, k := range keys {
		s := sums[k]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", dash(k.server), dash(visibleName(k.tool, nil)), k.method, k.outcome,
			dash(k.cause), s.n, k.point, shortDigest(k.digest), shortDigest(k.approvals), s.first.UTC().Format(time.RFC3339), s.last.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
