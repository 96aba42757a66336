// Package readme_test runs README.md's shell examples as written, the way a newcomer
// follows them: every fenced block whose info string is "sh runnable" runs, in order, in one
// working directory, with bash -euo pipefail, against a fresh build of the four binaries
// (./bin in that directory) and a lockerd of its own on a free loopback port (the README's
// http://127.0.0.1:8000 is replaced by that daemon's URL, and LOCKER_URL points at it). An
// MCP client config (.mcp.json) with one stdio server — the rug-pull fixture, which
// serves its original tools to every new process — stands in for yours, and an SSH key in
// a fresh HOME for your ~/.ssh/id_ed25519. Each block must
// exit 0 within a minute and print no Padlock error body. Blocks that need the network or
// a running gateway are left unmarked.
package readme_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// block is one runnable example: its first line in README.md and its text.
type block struct {
	line int
	text string
}

// runnable returns README.md's blocks whose info string is info ("sh runnable", "sh
// release"), in order.
func runnable(t *testing.T, readme, info string) []block {
	t.Helper()
	var out []block
	var cur *block
	for i, l := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```"+info:
			cur = &block{line: i + 1}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: the runnable block is not closed", cur.line)
	}
	return out
}

var servingRE = regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`)

// startLockerd runs the built lockerd on a free loopback port until the test ends (killed
// by PID) and returns its URL.
func startLockerd(t *testing.T, bin, db string) string {
	t.Helper()
	cmd := exec.Command(bin, "--port", "0", "--db", db)
	cmd.Env = append(os.Environ(), "LOCKER_LOG_LEVEL=warn")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	select {
	case u := <-urlc:
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("lockerd did not start within 20s")
		return ""
	}
}

// readmeBlocks returns README.md's code blocks fenced with info (see runnable).
func readmeBlocks(t *testing.T, root, info string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return runnable(t, string(data), info)
}

func TestREADMEExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs README.md's examples against a lockerd")
	}
	root := testenv.RepoRoot(t)
	blocks := readmeBlocks(t, root, "sh runnable")
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d runnable blocks; the set-up, lockermcp, agentgate and Padlock examples should be marked ```sh runnable", len(blocks))
	}
	bash := testenv.LookPath(t, "bash")
	for _, tool := range []string{"curl", "jq"} {
		for _, b := range blocks {
			if strings.Contains(b.text, tool+" ") {
				testenv.LookPath(t, tool) // the examples that run need it
				break
			}
		}
	}

	bindir := testenv.BuildCommands(t, "0.0.0-readme", "")
	rugpull := filepath.Join(bindir, "rugpull")
	build := exec.Command("go", "build", "-o", rugpull, "./test/fixtures/rugpull")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build rugpull: %v\n%s", err, out)
	}

	work, home := t.TempDir(), t.TempDir()
	if err := os.Symlink(bindir, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	mcp := `{"mcpServers": {"weather": {"command": "` + rugpull + `", "args": ["-lifetime", "1m"]}}}`
	if err := os.WriteFile(filepath.Join(work, ".mcp.json"), []byte(mcp), 0o644); err != nil {
		t.Fatal(err)
	}
	// A newcomer has an SSH key; toolwarrant's trust init names its public half.
	keygen := testenv.LookPath(t, "ssh-keygen")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "alice@example.com", "-f", filepath.Join(home, ".ssh", "id_ed25519")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	url := startLockerd(t, filepath.Join(bindir, "lockerd"), filepath.Join(t.TempDir(), "locker.db"))
	env := []string{"PATH=" + bindir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home,
		"LOCKER_URL=" + url, "NO_COLOR=1", "LANG=C.UTF-8"}

	for _, b := range blocks {
		script := strings.ReplaceAll(b.text, "http://127.0.0.1:8000", url)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = work, env
		cmd.WaitDelay = 5 * time.Second
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: the block failed: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.line, err, b.text, out.String(), errb.String())
			continue
		}
		if strings.Contains(out.String(), `"error":`) {
			t.Errorf("README.md:%d: the daemon answered an error:\n%s\nstdout:\n%s", b.line, b.text, out.String())
		}
		t.Logf("README.md:%d: ok\n%s", b.line, strings.TrimSpace(out.String()))
	}
}

// TestREADMEReleaseRuns runs README.md's "```sh release" blocks as written, in order, in a
// fresh clone of this repository with a fresh HOME: make the release key and allowed_signers,
// tag, make release, make verify-release (issue 20: the tag did not exist and the
// allowed_signers format was not said). The environment narrows the release to lockerd for
// linux/amd64 (PLATFORMS, ONLY: a whole one takes minutes) and builds the image on the local
// base (IMAGE_BASE=local: no registry is reachable here); README.md says so. The output
// directory is a temporary one in place of /tmp/agentgate-v0.1.0.
func TestREADMEReleaseRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release")
	}
	root := testenv.RepoRoot(t)
	blocks := readmeBlocks(t, root, "sh release")
	if len(blocks) != 2 {
		t.Fatalf("README.md has %d ```sh release blocks, want 2 (the key once, then each release)", len(blocks))
	}
	bash, git := testenv.LookPath(t, "bash"), testenv.LookPath(t, "git")
	testenv.LookPath(t, "make")
	testenv.LookPath(t, "ssh-keygen")
	// Without podman the release is built without its image (IMAGES=0), unless podman is
	// required (CI), where its absence fails the test.
	images := "IMAGES=1"
	if _, err := exec.LookPath("podman"); err != nil {
		if testenv.Required(testenv.External) {
			t.Fatalf("podman is not on PATH: the release's image cannot be built (required because %s=1)", testenv.External)
		}
		images = "IMAGES=0"
		t.Log("podman is not on PATH: building the release without its image")
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		testenv.Missing(t, testenv.External, "not a git checkout: "+root)
	}
	clone, home, out := filepath.Join(t.TempDir(), "agentgate"), t.TempDir(), filepath.Join(t.TempDir(), "agentgate-v0.1.0")
	if msg, err := exec.Command(git, "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, msg)
	}
	env := append(os.Environ(), "HOME="+home, "PLATFORMS=linux/amd64", "ONLY=lockerd", "IMAGE_BASE=local", images,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_COMMITTER_NAME=readme", "GIT_COMMITTER_EMAIL=readme@example.com")
	for _, b := range blocks {
		if !strings.Contains(b.text, "/tmp/agentgate-v0.1.0") && strings.Contains(b.text, "make release") {
			t.Fatalf("README.md:%d: the release block no longer writes /tmp/agentgate-v0.1.0; update this test", b.line)
		}
		script := strings.ReplaceAll(b.text, "/tmp/agentgate-v0.1.0", out)
		ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
		cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env, cmd.WaitDelay = clone, env, 5*time.Second
		msg, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d: the block failed: %v\n%s\n%s", b.line, err, b.text, msg)
		}
		t.Logf("README.md:%d: ok\n%s", b.line, lastLines(string(msg), 3))
	}
	if _, err := os.Stat(filepath.Join(out, "SHA256SUMS.sig")); err != nil {
		t.Errorf("the release is not signed: %v", err)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestMakeRunNamesTheOtherParts: `make run` serves lockerd only, so before it starts it says
// how to start the other two parts (issue 20: a newcomer got no pointer to them).
func TestMakeRunNamesTheOtherParts(t *testing.T) {
	make := testenv.LookPath(t, "make")
	cmd := exec.Command(make, "-n", "run")
	cmd.Dir = testenv.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	for _, want := range []string{"./bin/agentgate lock", "./bin/toolwarrant init", "bin/lockerd"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make run does not mention %s:\n%s", want, out)
		}
	}
}
