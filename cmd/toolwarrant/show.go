package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// showJSON is `show --json` (docs/toolwarrant.md): the version document, with the
// definition's suspicious characters \u-escaped unless --accept-suspicious (the same JSON
// value, other bytes).
type showJSON struct {
	warrant.VersionDoc
	Suspicious bool `json:"suspicious"`
}

func (a *app) showCmd() *cobra.Command {
	var asJSON, accept bool
	var version string
	c := &cobra.Command{
		Use:   "show SERVER TOOL",
		Short: "Print one version of a tool as canonical JSON, suspicious characters made visible",
		Long: `Print one version of a tool — the current one (the last crawl's), or --version DIGEST (a
full digest or a unique prefix of at least 8 hex digits) — as its RFC 8785 canonical JSON,
the exact bytes its digest is the SHA-256 of.

If the definition holds characters that can hide or reorder text (zero-width, bidi, tag,
control, variation selectors) or its name is a look-alike, toolwarrant refuses to print it
raw: those characters are printed as JSON \u escapes (still valid JSON with the same value),
stderr says what was found, and the command exits 1. --accept-suspicious prints the exact
canonical bytes.` + remoteNote + exitCodes("printed", "printed with suspicious characters escaped (see stderr)"),
		Example: "  toolwarrant show weather get_forecast\n  toolwarrant show weather get_forecast --version 3f2a9c1d",
		Args:    cli.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v warrant.VersionView
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				ans, err := r.Version(cmd.Context(), args[0], args[1], version)
				if err != nil {
					return remoteFailed(err)
				}
				v = ans.View()
			} else {
				cat, svc, _, err := a.open(cmd.Context(), cmd, true)
				if err != nil {
					return err
				}
				defer cat.Close()
				if v, err = svc.Show(cmd.Context(), args[0], args[1], version); err != nil {
					return failed(err)
				}
			}
			def := v.Version.Canonical
			suspicious := v.Inspection.Suspicious()
			if suspicious && !accept {
				def = warrant.VisibleDefinition(def, v.Version.Tool, v.Inspection)
			}
			if asJSON {
				doc := v.Doc()
				doc.Definition = def
				out := showJSON{VersionDoc: doc, Suspicious: suspicious}
				if err := writeJSON(a.env.Stdout, out); err != nil {
					return err
				}
			} else {
				if _, err := fmt.Fprintf(a.env.Stdout, "%s\n", def); err != nil {
					return err
				}
			}
			if suspicious && !accept {
				fmt.Fprintf(a.env.Stderr, "toolwarrant: server %q tool %q version %s: not printed raw: %s; the characters are shown as \\u escapes; pass --accept-suspicious to print the exact bytes\n",
					v.Version.Server, visibleName(v.Version.Tool, v.Inspection.Flags()), v.Version.Digest, visible(v.Inspection.Summary()))
				return cli.Found()
			}
			return nil
		},
	}
	c.Flags().StringVar(&version, "version", "", "the version to show: a `DIGEST` or a unique prefix of at least 8 hex digits (default: the current one)")
	c.Flags().BoolVar(&accept, "accept-suspicious", false, "print suspicious characters raw (the exact canonical bytes)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document with the definition and what is known about it")
	a.addRemoteFlag(c)
	return c
}
