package toolwarrant

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// docsBlocks returns the "sh runnable" blocks of docs/transparency-log.md between the
// headings from and to.
func docsBlocks(t *testing.T, from, to string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "transparency-log.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "\n"+from+"\n"), strings.Index(s, "\n"+to+"\n")
	if i < 0 || j < i {
		t.Fatalf("docs/transparency-log.md has no %q before %q", from, to)
	}
	var blocks []string
	var cur *strings.Builder
	for _, l := range strings.Split(s[i:j], "\n") {
		switch {
		case cur == nil && l == "```sh runnable":
			cur = &strings.Builder{}
		case cur != nil && l == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(l + "\n")
		}
	}
	if cur != nil {
		t.Fatal("docs/transparency-log.md: a runnable block is not closed")
	}
	return blocks
}

// TestTransparencyDocsWitnessAndPolicy runs the runnable blocks of "Run a witness" and
// "Verifier policy" in docs/transparency-log.md as written, in order, in one bash, with the
// built toolwarrant on PATH and a fresh HOME; only the witness's port 7380 is replaced by a
// free one. The witness the blocks start in the background is stopped by their own
// `kill %1`; the test checks its process group is gone, and kills the group it started at
// the end in any case.
func TestTransparencyDocsWitnessAndPolicy(t *testing.T) {
	blocks := docsBlocks(t, "## Run a witness", "## A verifier that is not toolwarrant")
	if len(blocks) != 5 {
		t.Fatalf("%d runnable blocks in Run a witness and Verifier policy, want 5", len(blocks))
	}
	bin, _ := binaries(t)
	port := strconv.Itoa(testenv.FreePort(t))
	script := "set -eu\n" + strings.ReplaceAll(strings.Join(blocks, ""), "127.0.0.1:7380", "127.0.0.1:"+port) + "wait\n"
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.LookPath(t, "bash"), "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("the docs' blocks: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"wrote cps/2.cosig: 1 cosignature",
		"cosigned by witness.example.com/team-a",
		"log example.com/team-b/toolwarrant size 2 root ",
		"ok: 2 entries verified, head 2:",
		"cosigned by 1 of the policy's 2 witnesses (team-a), short of its quorum both (2 of team-a, team-c)",
		"exit 1\n",
		"toolwarrant: witness stopped\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the docs' blocks printed no %q:\n%s", want, out.String())
		}
	}
	// The block's own `kill %1` stopped the witness; `wait` saw it go.
	gone := false
	for range 50 {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			gone = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !gone {
		t.Error("the witness the docs started is still running after their kill %1")
	}
}
