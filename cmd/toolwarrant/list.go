package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) listCmd() *cobra.Command {
	var asJSON, pending bool
	c := &cobra.Command{
		Use:   "list",
		Short: "One row per tool: state, current and approved digest, drift grade, flags",
		Long: `List every tool in the catalog, sorted by server then tool: its state, the digest the
last crawl saw, the approved digest, the grade of the drift between them (or against the
previous version, for a tool never approved) and textguard's flags.

States: APPROVED (the last crawl saw the approved digest), DRIFT (it saw another one),
PENDING (nothing approved, and the digest seen is undecided), REJECTED (nothing approved,
and the digest seen was rejected), REFUSED (the last crawl refused the definition),
REMOVED (the server's last crawl did not list the tool). Flags: invisible (characters
that hide or reorder text), confusable (the name looks like another tool's), mixed-script.

--pending keeps the tools whose current digest is undecided.

GRADE is the grade, its first rule (the most severe) and how many more there are
("CRITICAL description-changed +3 more"); every rule is in 'list --json', and
'toolwarrant diff SERVER TOOL' explains each change.

CURRENT and APPROVED show the first 12 hex digits of each digest. 'approve', 'reject',
'rollback' and 'show --version' take them as they are (any unique prefix of at least 8
hex digits); the full digests are in 'list --json', 'show SERVER TOOL --json' and on
the page of 'toolwarrant review'.` + remoteNote + exitCodes("success", ""),
		Example: "  toolwarrant list\n  toolwarrant list --pending --json\n  toolwarrant list --pending --remote https://abc123.execute-api.eu-west-1.amazonaws.com",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rows []warrant.ToolRow
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				if _, rows, err = r.Tools(cmd.Context(), pending); err != nil {
					return remoteFailed(err)
				}
			} else {
				cat, svc, _, err := a.open(cmd.Context(), cmd, true)
				if err != nil {
					return err
				}
				defer cat.Close()
				if rows, err = svc.List(cmd.Context(), pending); err != nil {
					return failed(err)
				}
			}
			if asJSON {
				if rows == nil {
					rows = []warrant.ToolRow{}
				}
				return writeJSON(a.env.Stdout, map[string]any{"tools": rows})
			}
			if len(rows) == 0 {
				if pending {
					fmt.Fprintln(a.env.Stdout, "no pending proposals")
				} else {
					fmt.Fprintln(a.env.Stdout, "no tools yet; add a server and run 'toolwarrant crawl'")
				}
				return nil
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tCURRENT\tAPPROVED\tGRADE\tFLAGS")
			for _, r := range rows {
				flags := strings.Join(r.Flags, ",")
				if flags == "" {
					flags = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Server, visibleName(r.Tool, r.Flags), r.State, shortOrDash(r.Current), approvedCell(r), gradeCell(r), flags)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.env.Stderr, "toolwarrant: digests are shortened to 12 hex digits; approve, reject and show --version take them as they are; the full digests: 'toolwarrant list --json', 'toolwarrant show SERVER TOOL --json' or 'toolwarrant review'; every rule of a grade: 'toolwarrant list --json' or 'toolwarrant diff SERVER TOOL'")
			return nil
		},
	}
	a.addRemoteFlag(c)
	c.Flags().BoolVar(&pending, "pending", false, "only tools whose current digest is undecided")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (fields in docs/toolwarrant.md)")
	return c
}

func shortOrDash(d warrant.Digest) string {
	if d == "" {
		return "-"
	}
	return d.Short()
}

// gradeCell is list's GRADE: the grade and its first rule, the most severe (a drift's
// rules come in the order of its changes, most severe first), and how many more, so that
// a change that trips every rule still fits a row; "-" when not graded.
func gradeCell(r warrant.ToolRow) string {
	switch {
	case r.Grade == warrant.SeverityNone:
		return "-"
	case len(r.Rules) == 0:
		return r.Grade.String()
	case len(r.Rules) == 1:
		return r.Grade.String() + " " + string(r.Rules[0])
	}
	return fmt.Sprintf("%s %s +%d more", r.Grade, r.Rules[0], len(r.Rules)-1)
}

// approvedCell is the APPROVED column: the approved digest, and the review policy that
// approved it, if one did.
func approvedCell(r warrant.ToolRow) string {
	if p := r.ByPolicy(); p != "" {
		return shortOrDash(r.Approved) + " (policy " + visible(p) + ")"
	}
	return shortOrDash(r.Approved)
}
