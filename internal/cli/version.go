package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// VersionInfo identifies a binary for `--version` and `version [--json]` (docs/cli.md).
type VersionInfo struct {
	// Name is the binary's name, the first word of every line it prints.
	Name string
	// Version is the release version, such as 0.1.0 or 0.1.0-dev.
	Version string
	// Commit is the full commit ID the binary was built from, "" when unknown.
	Commit string
	// Extra are more members of `version --json`, beside name, version and commit. Numbers
	// stay numbers: give them as int, not as strings.
	Extra map[string]any
	// Note is appended to the one-line text after a semicolon, such as "writes
	// lockfileVersion 2, reads 1 and 2". Empty adds nothing.
	Note string
}

// Line is what `--version` and `version` print: "NAME VERSION (COMMIT); NOTE", the commit
// and the note only when known.
func (v VersionInfo) Line() string {
	s := v.Name + " " + v.Version
	if v.Commit != "" {
		s += " (" + v.Commit + ")"
	}
	if v.Note != "" {
		s += "; " + v.Note
	}
	return s
}

// JSON is what `version --json` prints: one object with name, version, commit and Extra,
// members sorted by name.
func (v VersionInfo) JSON() ([]byte, error) {
	m := map[string]any{}
	for k, x := range v.Extra {
		m[k] = x
	}
	m["name"], m["version"], m["commit"] = v.Name, v.Version, v.Commit
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// versionCmd is every binary's `version` command.
func versionCmd(env Env, info VersionInfo) *cobra.Command {
	var asJSON bool
	members := "name, version, commit"
	if len(info.Extra) > 0 {
		extra := slices.Sorted(maps.Keys(info.Extra))
		members += ", " + strings.Join(extra, ", ")
	}
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this binary was built from (--json for machines)",
		Long: `Print the version and the commit this binary was built from, on one line: the same line
as --version. With --json, one JSON object (docs/cli.md) with the members
` + members + `.` + ExitCodes("always", "", ""),
		Example: "  " + info.Name + " version\n  " + info.Name + " version --json",
		Args:    NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !asJSON {
				_, err := fmt.Fprintln(env.Stdout, info.Line())
				return err
			}
			b, err := info.JSON()
			if err != nil {
				return err
			}
			_, err = env.Stdout.Write(b)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: "+members+" (docs/cli.md)")
	return c
}
