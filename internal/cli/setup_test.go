package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestSetupVersionAndArgs: the conventions Setup and the argument checks give every binary.
func TestSetupVersionAndArgs(t *testing.T) {
	newRoot := func(env Env) *cobra.Command {
		root := &cobra.Command{Use: "t"}
		root.AddCommand(&cobra.Command{Use: "diff SERVER TOOL [--json]", Args: ExactArgs(2), RunE: func(*cobra.Command, []string) error { return nil }})
		root.AddCommand(&cobra.Command{Use: "list", Args: NoArgs, RunE: func(*cobra.Command, []string) error { return nil }})
		group := &cobra.Command{Use: "server", Args: NoArgs, RunE: func(c *cobra.Command, _ []string) error { return c.Help() }}
		group.AddCommand(&cobra.Command{Use: "add NAME URL", Args: ExactArgs(2), RunE: func(*cobra.Command, []string) error { return nil }})
		root.AddCommand(group)
		Setup(root, env, VersionInfo{Name: "t", Version: "1.2.3", Commit: "abc", Extra: map[string]any{"lockfileVersion": 2}, Note: "writes 2"})
		return root
	}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--version"}, 0, "t 1.2.3 (abc); writes 2\n", ""},
		{[]string{"version"}, 0, "t 1.2.3 (abc); writes 2\n", ""},
		{[]string{"version", "--json"}, 0, "{\n  \"commit\": \"abc\",\n  \"lockfileVersion\": 2,\n  \"name\": \"t\",\n  \"version\": \"1.2.3\"\n}\n", ""},
		{[]string{"version", "--json", "--help"}, 0, "", ""}, // stdout checked below: it names every member
		{[]string{"diff", "a"}, 2, "", "t: t diff takes 2 arguments, SERVER TOOL; got 1: \"a\" (see 't diff --help')\n"},
		{[]string{"list", "x"}, 2, "", "t: t list takes no arguments; got \"x\" (see 't list --help')\n"},
		{[]string{"server", "remove"}, 2, "", "t: unknown command \"remove\" for \"t server\" (see 't server --help')\n"},
		{[]string{"server", "add", "a"}, 2, "", "t: t server add takes 2 arguments, NAME URL; got 1: \"a\" (see 't server add --help')\n"},
		{[]string{"server", "add", "--nope"}, 2, "", "t: unknown flag: --nope (see 't server add --help')\n"},
		{[]string{"nope"}, 2, "", "t: unknown command \"nope\" for \"t\" (see 't --help')\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
			code := Run(t.Context(), newRoot(env), tc.args, env)
			if slices.Contains(tc.args, "--help") {
				if !strings.Contains(out.String(), "with the members\nname, version, commit, lockfileVersion.") {
					t.Errorf("version --help does not name every member of --json:\n%s", out.String())
				}
				out.Reset()
			}
			if code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestCountAndExitCodes(t *testing.T) {
	for n, want := range map[int]string{0: "0 tools", 1: "1 tool", 2: "2 tools"} {
		if got := Count(n, "tool", ""); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Count(1, "mismatch", "mismatches") + ", " + Count(3, "mismatch", "mismatches"); got != "1 mismatch, 3 mismatches" {
		t.Errorf("Count with a plural = %q", got)
	}
	if got, want := ExitCodes("ok", "", ""), "\n\nExit codes:\n  0  ok\n  2  could not run: usage error"; got != want {
		t.Errorf("ExitCodes = %q, want %q", got, want)
	}
}
