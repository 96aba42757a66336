// Package cli_test holds the four binaries to docs/cli.md, the single table of their shared
// command-line conventions: it builds agentgate, toolwarrant, lockerd and lockermcp as the
// Makefile does, runs each one's --version, version, version --json, a usage error on every
// command and every command's --help, and compares what they print and exit with the
// tables. A command added without a row, a row without a command, or a binary that drifts
// from the convention fails here.
package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

const (
	testVersion = "9.8.7-clitest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var binaries = []string{"agentgate", "toolwarrant", "lockerd", "lockermcp"}

// binaryRow is one row of docs/cli.md's "Every binary" table.
type binaryRow struct {
	line     string   // what --version prints, with VERSION and COMMIT
	members  []string // version --json members
	kinds    map[string]string
	usage    int
	refusals int
}

// tables reads docs/cli.md: the binary table and the exit codes by command.
func tables(t *testing.T) (map[string]binaryRow, map[string][]int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]binaryRow{}
	cmds := map[string][]int{}
	tick := regexp.MustCompile("`([^`]+)`")
	member := regexp.MustCompile("`([A-Za-z]+)`(?: \\((numbers?)\\))?")
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		name := tick.FindStringSubmatch(cells[0])[1]
		switch len(cells) {
		case 5: // binary | --version | version --json members | usage | refused
			r := binaryRow{line: tick.FindStringSubmatch(cells[1])[1], kinds: map[string]string{}}
			for _, m := range member.FindAllStringSubmatch(cells[2], -1) {
				r.members = append(r.members, m[1])
				r.kinds[m[1]] = m[2]
			}
			r.usage, _ = strconv.Atoi(cells[3])
			r.refusals, _ = strconv.Atoi(cells[4])
			bins[name] = r
		case 4: // command | 0 | 1 | 2
			var codes []int
			for i, c := range cells[1:] {
				if c != "—" {
					codes = append(codes, i)
				}
			}
			cmds[name] = codes
		}
	}
	if len(bins) != len(binaries) || len(cmds) < 30 {
		t.Fatalf("docs/cli.md: read %d binaries and %d commands; are the tables still there?", len(bins), len(cmds))
	}
	return bins, cmds
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs a built binary with an empty environment (but PATH and HOME) in dir, bounded.
func run(t *testing.T, dir, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	code, out, errs := testenv.RunCommand(t, cmd)
	return result{code, out, errs}
}

// commands walks a binary's help: every command without subcommands, and the binary itself
// when it also runs on its own (its Usage has a "NAME [flags]" line; lockerd, lockermcp).
// Groups such as 'toolwarrant server' only print their help, and are not listed.
func commands(t *testing.T, dir, bin string, path []string) []string {
	t.Helper()
	r := run(t, dir, bin, append(path, "--help")...)
	if r.code != 0 {
		t.Fatalf("%s %v --help: exit %d\n%s", filepath.Base(bin), path, r.code, r.stderr)
	}
	name := strings.Join(append([]string{filepath.Base(bin)}, path...), " ")
	var subs []string
	section := ""
	runnable := false
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " "):
			section = l
		case strings.TrimSpace(l) == "":
			section = ""
		case section == "Available Commands:":
			if f := strings.Fields(l)[0]; f != "help" && f != "completion" {
				subs = append(subs, f)
			}
		case section == "Usage:" && l == "  "+name+" [flags]":
			runnable = true
		}
	}
	var out []string
	if len(subs) == 0 || (runnable && len(path) == 0) {
		out = append(out, name)
	}
	for _, s := range subs {
		out = append(out, commands(t, dir, bin, append(slices.Clone(path), s))...)
	}
	return out
}

// helpCodes reads the "Exit codes" section of a --help: the codes listed, in order.
func helpCodes(help string) []int {
	var codes []int
	in := false
	code := regexp.MustCompile(`^  (\d+)  `)
	for _, l := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(l, "Exit codes"):
			in = true
		case in && strings.TrimSpace(l) == "":
			return codes
		case in:
			if m := code.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				codes = append(codes, n)
			}
		}
	}
	return codes
}

func TestBinariesFollowDocsCLI(t *testing.T) {
	bins, cmds := tables(t)
	bindir := testenv.BuildCommands(t, testVersion, testCommit)
	work := t.TempDir()

	for _, name := range binaries {
		t.Run(name, func(t *testing.T) {
			row, ok := bins[name]
			if !ok {
				t.Fatalf("docs/cli.md has no row for %s", name)
			}
			bin := filepath.Join(bindir, name)
			want := strings.NewReplacer("VERSION", testVersion, "COMMIT", testCommit).Replace(row.line) + "\n"
			for _, args := range [][]string{{"--version"}, {"version"}} {
				if r := run(t, work, bin, args...); r.code != 0 || r.stdout != want || r.stderr != "" {
					t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want %q", name, args, r.code, r.stdout, r.stderr, want)
				}
			}

			r := run(t, work, bin, "version", "--json")
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil {
				t.Fatalf("%s version --json: exit %d, %v: %s", name, r.code, err, r.stdout)
			}
			var got []string
			for k := range doc {
				got = append(got, k)
			}
			sort.Strings(got)
			wantMembers := slices.Sorted(slices.Values(row.members))
			if !slices.Equal(got, wantMembers) {
				t.Errorf("%s version --json members %v, docs/cli.md says %v", name, got, wantMembers)
			}
			for k, v := range map[string]string{"name": name, "version": testVersion, "commit": testCommit} {
				if s, _ := strconv.Unquote(string(doc[k])); s != v {
					t.Errorf("%s version --json %s = %s, want %q", name, k, doc[k], v)
				}
			}
			for k, kind := range row.kinds {
				var n float64
				var ns []float64
				switch kind {
				case "number":
					if json.Unmarshal(doc[k], &n) != nil {
						t.Errorf("%s version --json %s = %s, docs/cli.md says a number", name, k, doc[k])
					}
				case "numbers":
					if json.Unmarshal(doc[k], &ns) != nil || len(ns) == 0 {
						t.Errorf("%s version --json %s = %s, docs/cli.md says numbers", name, k, doc[k])
					}
				}
			}

			// Every command: in the table, with its example and exit codes; a bad flag is a
			// usage error with the documented code, pointing at that command's help.
			found := commands(t, work, bin, nil)
			for _, c := range found {
				codes, ok := cmds[c]
				if !ok {
					t.Errorf("%s is not in docs/cli.md's exit codes by command", c)
					continue
				}
				args := strings.Fields(c)[1:]
				h := run(t, work, bin, append(args, "--help")...)
				if !strings.Contains(h.stdout, "Examples:\n  ") {
					t.Errorf("%s --help has no example", c)
				}
				if got := helpCodes(h.stdout); !slices.Equal(got, codes) {
					t.Errorf("%s --help lists exit codes %v, docs/cli.md says %v", c, got, codes)
				}
				u := run(t, work, bin, append(args, "--no-such-flag")...)
				wantErr := name + ": unknown flag: --no-such-flag (see '" + c + " --help')\n"
				if u.code != row.usage || u.stderr != wantErr || u.stdout != "" {
					t.Errorf("%s --no-such-flag: exit %d, stderr %q; want exit %d, %q", c, u.code, u.stderr, row.usage, wantErr)
				}
			}
			for c := range cmds {
				if strings.HasPrefix(c+" ", name+" ") && !slices.Contains(found, c) {
					t.Errorf("docs/cli.md lists %s, which %s does not have", c, name)
				}
			}
			// An unknown command, and an argument where none is taken.
			u := run(t, work, bin, "no-such-command")
			if u.code != row.usage || !strings.HasSuffix(u.stderr, "(see '"+name+" --help')\n") || strings.Count(u.stderr, "\n") != 1 {
				t.Errorf("%s no-such-command: exit %d, stderr %q; want exit %d and one line", name, u.code, u.stderr, row.usage)
			}
			u = run(t, work, bin, "version", "extra")
			if want := name + ": " + name + " version takes no arguments; got \"extra\" (see '" + name + " version --help')\n"; u.code != row.usage || u.stderr != want {
				t.Errorf("%s version extra: exit %d, stderr %q; want %q", name, u.code, u.stderr, want)
			}
		})
	}
	t.Run("refused configuration", func(t *testing.T) { refusedConfiguration(t, bins, bindir, work) })
}

// refusedConfiguration checks the refused-configuration column, on a configuration each
// binary refuses at start.
func refusedConfiguration(t *testing.T, bins map[string]binaryRow, bindir, work string) {
	refuse := map[string][]string{
		"agentgate":   {"AGENTGATE_TIMEOUT=soon", "lock"},
		"toolwarrant": {"TOOLWARRANT_CRAWL_TIMEOUT=soon", "list"},
		"lockerd":     {"LOCKER_MODE=txid", "--port", "0"},
		"lockermcp":   {"LOCKER_TICKET_TRANSPORT=cookie", "inspect", "demo-pad-v1"},
	}
	for _, name := range binaries {
		args := refuse[name]
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(bindir, name), args[1:]...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "LOCKER_DB_PATH=" + filepath.Join(work, "l.db"),
			"LOCKER_URL=http://127.0.0.1:1", args[0]}
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != bins[name].refusals || strings.Count(string(out), "\n") != 1 {
			t.Errorf("%s with %s: %v, output %q; want exit %d and one line", name, args[0], err, out, bins[name].refusals)
		}
	}
}
