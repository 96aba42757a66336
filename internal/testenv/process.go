package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// The end-to-end suites' shared helpers: build one of this module's commands, run one to
// its exit code, find a free loopback port, start a process and wait until it says it is
// ready, and stop it by PID.

// ReadyTimeout bounds how long StartProcess waits for a process to say it is ready.
const ReadyTimeout = 30 * time.Second

// BuildCommand builds a package of this module (such as "./cmd/lockerd") with
// CGO_ENABLED=0 into the test's temporary directory and returns the binary's path.
func BuildCommand(t testing.TB, pkg string) string {
	t.Helper()
	goBin := LookPath(t, "go")
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	cmd := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// RunCommand runs cmd to completion with its stdout and stderr captured and returns its
// exit code (0 on success; -1, as ExitCode says, when a signal ended it) and both outputs.
// A command that cannot be run at all (not found, not started) fails the test.
func RunCommand(t testing.TB, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartProcess starts cmd and waits (at most ReadyTimeout) until a line of its stderr
// satisfies ready, which it returns. At cleanup the process is killed by its PID and
// reaped, and the test fails if it is still running.
func StartProcess(t testing.TB, cmd *exec.Cmd, ready func(line string) bool) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if Alive(pid) {
			t.Errorf("%s (PID %d) still running after kill", cmd.Path, pid)
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() { // read to EOF, so the process never blocks on a full pipe
			if !sent && ready(sc.Text()) {
				lines <- sc.Text()
				sent = true
			}
		}
	}()
	select {
	case l := <-lines:
		return l
	case <-time.After(ReadyTimeout):
		t.Fatalf("%s did not become ready within %s", cmd.Path, ReadyTimeout)
		return ""
	}
}

// Alive reports whether pid is a running process (not gone, not a zombie), from /proc.
func Alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return !(i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
}
