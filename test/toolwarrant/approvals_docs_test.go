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

// TestTransparencyDocsCIApprovals runs the runnable blocks of "CI that proves approvals" in
// docs/transparency-log.md as written, in order, in one bash, with the built toolwarrant
// and agentgate on PATH and a fresh HOME. Two things are replaced: the npx command by the
// pinned server-everything of test/package-lock.json (the same package and version, without
// reaching the registry), and the port 3001 by a free one. The blocks' own `kill %1` stops
// the server; the test checks its process group is gone, and kills it at the end anyway.
// It checks what the docs promise: lock --approvals proves 14 approvals, ci passes online
// and offline, and after a rejection ci fails online (exit 1, approval-revoked, naming the
// toolwarrant commands) while the offline bundle still passes.
func TestTransparencyDocsCIApprovals(t *testing.T) {
	blocks := docsBlocks(t, "## CI that proves approvals", "## Compared with Tessera and Sigsum")
	if len(blocks) != 3 {
		t.Fatalf("%d runnable blocks in CI that proves approvals, want 3", len(blocks))
	}
	script := strings.Join(blocks, "")
	const npx = "npx -y @modelcontextprotocol/server-everything@2026.8.31"
	if !strings.Contains(script, npx) || !strings.Contains(script, "127.0.0.1:3001") {
		t.Fatalf("the docs' blocks no longer start the server with %q on 127.0.0.1:3001:\n%s", npx, script)
	}
	tw, _ := binaries(t)
	ag := testenv.BuildCommand(t, "./cmd/agentgate")
	binDir := t.TempDir()
	for name, bin := range map[string]string{"toolwarrant": tw, "agentgate": ag} {
		if err := os.Symlink(bin, filepath.Join(binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"jq", "ssh-keygen"} {
		testenv.LookPath(t, tool)
	}
	node := testenv.LookPath(t, "node")
	everything := filepath.Join(testenv.NodeModule(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	port := strconv.Itoa(testenv.FreePort(t))
	script = strings.ReplaceAll(script, npx, node+" "+everything)
	script = strings.ReplaceAll(script, "PORT=3001", "PORT="+port)
	script = strings.ReplaceAll(script, "127.0.0.1:3001", "127.0.0.1:"+port)
	script = strings.ReplaceAll(script, "/dev/tcp/127.0.0.1/3001", "/dev/tcp/127.0.0.1/"+port)
	script = "set -eu\n" + script + "wait\n"

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.LookPath(t, "bash"), "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the docs' blocks: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"everything: 14 tools listed, 14 new versions (crawl 1)",
		"wrote agentgate.approvals.json: 14 approvals proven in checkpoint 31 of ",
		"ok: 14 locked tool digests approved as of checkpoint 31 of ",
		"ok (offline): 14 locked tool digests approved as of checkpoint 31 of ",
		"a rejection or a newer approval not in it is only seen online",
		`CRITICAL server "everything" tool "echo" sha256:`,
		": approval-revoked: approved at entry 18, then rejected by alice@example.com at entry 32;",
		"review it: toolwarrant show everything echo --version sha256:",
		"approvals: 1 of 14 locked tool digests are not approved as of checkpoint 32 of ",
		"exit 1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the docs' blocks printed no %q:\n%s", want, got)
		}
	}
	// After the rejection the offline run still passes: its output follows the online failure.
	if i := strings.Index(got, "exit 1\n"); i < 0 || !strings.Contains(got[i:], "ok (offline): 14 locked tool digests approved as of checkpoint 31 of ") {
		t.Errorf("after the rejection, ci --offline did not pass on the bundle of checkpoint 31:\n%s", got)
	}
	for _, f := range []string{"agentgate.lock", "agentgate.approvals.json", "tlog/checkpoint", "toolwarrant.policy"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the docs' blocks left no %s: %v", f, err)
		}
	}
	gone := false
	for range 50 {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			gone = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !gone {
		t.Error("the server the docs started is still running after their kill %1")
	}
}
