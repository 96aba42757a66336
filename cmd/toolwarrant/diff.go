package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// diffJSON is `diff --json` (docs/toolwarrant.md).
type diffJSON struct {
	Server  string           `json:"server"`
	Tool    string           `json:"tool"`
	From    warrant.Digest   `json:"from"`
	To      warrant.Digest   `json:"to"`
	Grade   warrant.Severity `json:"grade"`
	Changes []warrant.Change `json:"changes"`
	// FromFlags and ToFlags are textguard's flags for each version.
	FromFlags []string `json:"fromFlags"`
	ToFlags   []string `json:"toFlags"`
}

func (a *app) diffCmd() *cobra.Command {
	var asJSON, accept bool
	var from, to string
	c := &cobra.Command{
		Use:   "diff SERVER TOOL",
		Short: "Grade the changes between two versions of a tool, with JSON pointers",
		Long: `Compare two versions of a tool with a semantic diff of the tool object and its schemas,
and grade every change CRITICAL, WARNING or INFO with its rule and reason
(docs/drift-grading.md). Each change names the JSON pointer it is at.

--to defaults to the current version (the last crawl's); --from to the approved version,
else the previous one seen. With neither and only one version, the tool is graded as new.
DIGEST is a full digest or a unique prefix of at least 8 hex digits.

Old and new values are printed with suspicious characters as escapes (\u200b, <U+E0041>;
in --json, JSON \u escapes: the same value); --accept-suspicious prints them raw.` + remoteNote + exitCodes("the two versions are the same (no drift)", "the versions differ (the changes are printed)"),
		Example: "  toolwarrant diff weather get_forecast\n  toolwarrant diff weather get_forecast --from 1a2b3c4d --to 5e6f7a8b --json",
		Args:    cli.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var dv warrant.DiffView
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				ans, err := r.Diff(cmd.Context(), args[0], args[1], from, to)
				if err != nil {
					return remoteFailed(err)
				}
				dv = ans.View()
			} else {
				cat, svc, _, err := a.open(cmd.Context(), cmd, true)
				if err != nil {
					return err
				}
				defer cat.Close()
				if dv, err = svc.Diff(cmd.Context(), args[0], args[1], from, to); err != nil {
					return failed(err)
				}
			}
			suspicious := dv.ToInspection.Suspicious() || dv.FromInspection.Suspicious()
			changes := dv.Drift.Changes
			if asJSON {
				// JSON keeps the values as JSON: the suspicious characters become \u escapes
				// (surrogate pairs above the BMP), the same value in other bytes.
				render := func(v json.RawMessage) json.RawMessage {
					if v == nil || accept {
						return v
					}
					return warrant.VisibleJSON(v)
				}
				changes = make([]warrant.Change, len(dv.Drift.Changes))
				for i, ch := range dv.Drift.Changes {
					ch.Old, ch.New = render(ch.Old), render(ch.New)
					changes[i] = ch
				}
				err = writeJSON(a.env.Stdout, diffJSON{Server: dv.Server, Tool: dv.Tool, From: dv.From, To: dv.To, Grade: dv.Drift.Grade,
					Changes: changes, FromFlags: orEmpty(dv.FromInspection.Flags()), ToFlags: orEmpty(dv.ToInspection.Flags())})
				if err != nil {
					return err
				}
			} else {
				// A person reads the raw values through textguard's rendering, as agentgate's
				// diff does: a tag character is <U+E0041>, not the pair \udb40\udc41.
				show := visible
				if accept {
					show = func(s string) string { return s }
				}
				a.printDiff(dv, changes, show)
			}
			if suspicious && !accept {
				what, in := "the new version", dv.ToInspection
				if !in.Suspicious() {
					what, in = "the old version", dv.FromInspection
				}
				fmt.Fprintf(a.env.Stderr, "toolwarrant: server %q tool %q: %s has %s; not printed raw: shown as escapes, pass --accept-suspicious to print raw\n",
					dv.Server, visibleName(dv.Tool, dv.ToInspection.Flags()), what, visible(in.Summary()))
			}
			if len(changes) > 0 {
				return cli.Found()
			}
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the old version: a `DIGEST` or unique prefix (default: the approved one, else the previous one)")
	c.Flags().StringVar(&to, "to", "", "the new version: a `DIGEST` or unique prefix (default: the current one)")
	c.Flags().BoolVar(&accept, "accept-suspicious", false, "print suspicious characters raw")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (fields in docs/toolwarrant.md)")
	a.addRemoteFlag(c)
	return c
}

func (a *app) printDiff(dv warrant.DiffView, changes []warrant.Change, show func(string) string) {
	w := a.env.Stdout
	from := "(nothing: a new tool)"
	if dv.From != "" {
		from = string(dv.From)
	}
	fmt.Fprintf(w, "%s %s\n  from %s\n  to   %s\n", dv.Server, visibleName(dv.Tool, dv.ToInspection.Flags()), from, dv.To)
	if len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
		return
	}
	fmt.Fprintf(w, "grade: %s (%s)\n", dv.Drift.Grade, count(len(changes), "change"))
	for _, ch := range changes {
		ptr := ch.Pointer
		if ptr == "" {
			ptr = "(whole tool)"
		}
		fmt.Fprintf(w, "\n%-8s %s %s %s\n", ch.Severity, ch.Rule, ch.Kind, visible(ptr))
		fmt.Fprintf(w, "  %s\n", visible(ch.Reason))
		if ch.Old != nil {
			fmt.Fprintf(w, "  - %s\n", indentValue(show(string(ch.Old))))
		}
		if ch.New != nil {
			fmt.Fprintf(w, "  + %s\n", indentValue(show(string(ch.New))))
		}
	}
}

func indentValue(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
