// Package hostile_test runs the built agentgate and toolwarrant binaries against MCP
// servers that answer as an attacker would (internal/mcpclient/hostile) and against
// lockfiles that are not files, all on loopback: each is refused with exit 2, a message
// naming the bound, nothing written, memory bounded and signals obeyed.
package hostile_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/mcpclient/hostile"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// maxRSS is the most memory a command may use against any hostile server.
const maxRSS = 256 << 20

var agentgateBin, toolwarrantBin string

// TestMain builds both binaries once for every test and benchmark here.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostile-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		for _, b := range []struct {
			pkg string
			out *string
		}{{"./cmd/agentgate", &agentgateBin}, {"./cmd/toolwarrant", &toolwarrantBin}} {
			*b.out = filepath.Join(dir, filepath.Base(b.pkg))
			cmd := exec.Command("go", "build", "-o", *b.out, b.pkg)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
				return 2
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func bins(testing.TB) {}

// switchable serves a well-behaved fixture until hostile is set, then the hostile server.
type switchable struct {
	good    http.Handler
	hostile atomic.Pointer[hostile.Server]
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.hostile.Load(); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	s.good.ServeHTTP(w, r)
}

type result struct {
	code           int
	stdout, stderr string
	rss            int64
	elapsed        time.Duration
}

// run runs bin in dir and reports its exit code, output and peak RSS.
func run(t testing.TB, dir, bin string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TOOLWARRANT_IDENTITY=tester@ci")
	start := time.Now()
	code, out, errOut := testenv.RunCommand(t, cmd)
	r := result{code: code, stdout: out, stderr: errOut, elapsed: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = ru.Maxrss << 10 // KiB on Linux
	}
	return r
}

func project(t testing.TB, url string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{"mcpServers":{"h":{"url":%q}}}`, url)
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLockAndCIRefuseHostileServers: the cases measured in issue 31, each against an
// existing lockfile that must stay byte for byte as it was.
func TestLockAndCIRefuseHostileServers(t *testing.T) {
	bins(t)
	cases := []struct {
		name  string
		srv   *hostile.Server
		bound string
	}{
		{"a 1 GiB body", &hostile.Server{Mode: hostile.Body, Size: 1 << 30}, "an HTTP body exceeded the message bound of 16 MiB (raise it with --max-message-bytes"},
		{"an SSE event that never ends", &hostile.Server{Mode: hostile.EndlessEvent}, "a server-sent event exceeded the message bound of 16 MiB"},
		{"a 256 MiB body", &hostile.Server{Mode: hostile.Body, Size: 256 << 20}, "an HTTP body exceeded the message bound"},
		{"a 50 MB description", &hostile.Server{Mode: hostile.Body, Size: 50e6}, "an HTTP body exceeded the message bound"},
		{"nine fat pages", &hostile.Server{Mode: hostile.Pages, Pages: 9, Size: 12 << 20}, "the pages of tools/list exceeded the listing bound of 64 MiB (raise it with --max-listing-bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sw := &switchable{good: fixture.New(fixture.Tools("t", 2)...)}
			hs := httptest.NewServer(sw)
			defer hs.Close()
			dir := project(t, hs.URL+"/mcp")
			if r := run(t, dir, agentgateBin, "lock"); r.code != 0 {
				t.Fatalf("lock of the good server: %d %s", r.code, r.stderr)
			}
			lock, snap := read(t, filepath.Join(dir, "agentgate.lock")), read(t, filepath.Join(dir, "agentgate.snapshot.json"))
			sw.hostile.Store(tc.srv)
			for _, command := range []string{"lock", "ci"} {
				r := run(t, dir, agentgateBin, command)
				if r.code != 2 || !strings.Contains(r.stderr, tc.bound) {
					t.Errorf("%s: exit %d, stderr %q; want 2 naming %q", command, r.code, r.stderr, tc.bound)
				}
				if r.rss > maxRSS {
					t.Errorf("%s: peak RSS %d MiB, over %d MiB", command, r.rss>>20, maxRSS>>20)
				}
				t.Logf("%s: exit %d in %v, peak RSS %d MiB", command, r.code, r.elapsed.Round(time.Millisecond), r.rss>>20)
			}
			if !bytes.Equal(read(t, filepath.Join(dir, "agentgate.lock")), lock) || !bytes.Equal(read(t, filepath.Join(dir, "agentgate.snapshot.json")), snap) {
				t.Error("the lockfile or snapshot changed")
			}
			// A bound raised by its flag lets a trusted large server through.
			if tc.name == "a 50 MB description" {
				r := run(t, dir, agentgateBin, "lock", "--max-message-bytes", "64MiB", "--no-snapshot")
				if r.code != 0 {
					t.Errorf("lock --max-message-bytes 64MiB: %d %s", r.code, r.stderr)
				}
			}
		})
	}
}

// TestCrawlRefusesHostileServerOnly: toolwarrant crawl records the good servers and refuses
// the hostile one, bounded across pages.
func TestCrawlRefusesHostileServerOnly(t *testing.T) {
	bins(t)
	dir := t.TempDir()
	good := httptest.NewServer(fixture.New(fixture.Tools("t", 3)...))
	defer good.Close()
	pages := &hostile.Server{Mode: hostile.Pages, Size: 9 << 20}
	bad := httptest.NewServer(pages)
	defer bad.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "good", good.URL + "/mcp", "--allow-private"}, {"server", "add", "endless", bad.URL + "/mcp", "--allow-private"}} {
		if r := run(t, dir, toolwarrantBin, args...); r.code != 0 {
			t.Fatalf("toolwarrant %v: %d %s", args, r.code, r.stderr)
		}
	}
	r := run(t, dir, toolwarrantBin, "crawl")
	if r.code != 2 || !strings.Contains(r.stdout, `endless: error: server "endless": invalid server response: the pages of tools/list exceeded the listing bound of 24 MiB (raise it with TOOLWARRANT_CRAWL_MAX_LISTING_BYTES`) ||
		!strings.Contains(r.stdout, "good: 3 tools listed") {
		t.Fatalf("crawl: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r.rss > maxRSS {
		t.Errorf("crawl: peak RSS %d MiB", r.rss>>20)
	}
	if n := pages.Lists(); n > 4 {
		t.Errorf("the endless server was asked for %d pages", n)
	}
	l := run(t, dir, toolwarrantBin, "list", "--json")
	if l.code != 0 || !strings.Contains(l.stdout, `"good"`) || strings.Contains(l.stdout, `"endless"`) && strings.Contains(l.stdout, `"tool": "t0"`) {
		t.Errorf("list after the crawl: %d %s", l.code, l.stdout)
	}
	t.Logf("crawl: %v, peak RSS %d MiB; stderr: %s", r.elapsed.Round(time.Millisecond), r.rss>>20, r.stderr)
}

// TestLockfileThatIsNotAFile: a lockfile committed as a symlink to /dev/zero, a FIFO or a
// 1 GiB file is refused at once.
func TestLockfileThatIsNotAFile(t *testing.T) {
	bins(t)
	hs := httptest.NewServer(fixture.New(fixture.Tools("t", 2)...))
	defer hs.Close()
	for _, tc := range []struct {
		name, says string
		make       func(path string) error
	}{
		{"a symlink to /dev/zero", "a symbolic link out of the repository", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"a FIFO", "not a regular file: it is a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"a 1 GiB file", "over the size bound", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1 << 30)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, hs.URL+"/mcp")
			if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(dir, "agentgate.lock")
			if err := tc.make(lock); err != nil {
				t.Fatal(err)
			}
			for _, command := range [][]string{{"ci"}, {"diff"}, {"lock"}, {"ci", "--offline"}} {
				r := run(t, dir, agentgateBin, command...)
				if r.code != 2 || !strings.Contains(r.stderr, "agentgate.lock: cannot read: "+tc.says) || r.elapsed > time.Second {
					t.Errorf("%v: exit %d after %v, stderr %q; want 2 within a second saying %q", command, r.code, r.elapsed, r.stderr, tc.says)
				}
			}
			if fi, err := os.Lstat(lock); err != nil || fi.Mode().IsRegular() && fi.Size() != 1<<30 {
				t.Errorf("the lockfile was replaced: %v", err)
			}
		})
	}
}

// TestSignalEndsACommandPromptly: SIGTERM (and SIGINT) end a lock waiting on a slow
// server within a second, stop the server it started and write nothing.
func TestSignalEndsACommandPromptly(t *testing.T) {
	bins(t)
	slow := httptest.NewServer(&hostile.Server{Mode: hostile.Hang, MaxDuration: time.Minute})
	defer slow.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "server.pid")
			// A stdio server that never answers and ignores stdin closing, and a remote one
			// that never answers tools/list.
			cfg := fmt.Sprintf(`{"mcpServers":{"stuck":{"command":"sh","args":["-c","echo $$ > %s; exec sleep 60"]},"slow":{"url":%q}}}`, pidFile, slow.URL+"/mcp")
			if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), agentgateBin, "lock", "--timeout", "60s")
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var serverPID int
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && serverPID == 0; time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
					serverPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
			if serverPID == 0 {
				t.Fatal("the stdio server did not start")
			}
			time.Sleep(300 * time.Millisecond) // both listings are now waiting
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5s after %v; stderr: %s", sig, stderr.String())
			}
			if took := time.Since(sent); took > time.Second {
				t.Errorf("ended %v after %v; want within a second", took, sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("exit %d, stderr %q; want 2 and 'interrupted'", code, stderr.String())
			}
			if testenv.Alive(serverPID) {
				t.Errorf("the stdio server (PID %d) outlived the command", serverPID)
				_ = syscall.Kill(serverPID, syscall.SIGKILL)
			}
			if _, err := os.Stat(filepath.Join(dir, "agentgate.lock")); err == nil {
				t.Error("a lockfile was written")
			}
		})
	}
}
