// Package rietest runs Lambda bootstraps under the real aws-lambda-rie on loopback, for
// the end-to-end tests of functions/* (test/rie, test/warrantaws): find the emulator,
// build a function as SAM's build targets do, start it in its own process group (stopped
// by PID at cleanup), and invoke it.
package rietest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// Version is the aws-lambda-rie that .ci/run installs.
const Version = "v0.0.0-20261030222936-bef5c4ba774d"

// Find returns aws-lambda-rie from PATH, else from the Go bin directory `go install`
// writes to; missing, the test skips, or fails under AGENTGATE_REQUIRE_EXTERNAL=1.
func Find(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("aws-lambda-rie runs Linux binaries")
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var dirs []string
		if len(lines) > 0 && lines[0] != "" {
			dirs = append(dirs, lines[0])
		}
		if len(lines) > 1 {
			for _, gp := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
		for _, d := range dirs {
			p := filepath.Join(d, "aws-lambda-rie")
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	testenv.Missing(t, testenv.External, "aws-lambda-rie is not installed: go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+Version)
	return ""
}

// Build builds ./functions/<fn> as SAM's build-<Fn>Function target does (CGO_ENABLED=0,
// -tags lambda.norpc), for this machine's architecture, and returns the bootstrap path.
func Build(t testing.TB, fn string) string {
	t.Helper()
	return BuildPackage(t, "./functions/"+fn)
}

// BuildPackage builds the main package pkg (a path relative to the repository root) as
// Build does, into <tempdir>/<last element of pkg>/bootstrap.
func BuildPackage(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg), "bootstrap")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = testenv.RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// logs keeps the first MiB of what the emulator and the bootstrap print.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Emulator is aws-lambda-rie running one bootstrap.
type Emulator struct {
	// URL is the invoke endpoint.
	URL string
	// Started is when the process was started (for cold-start figures).
	Started time.Time
	addr    string // host:port of URL
	logs    *logs
	stop    func()
}

// Logs returns what the emulator and the bootstrap printed so far (the first MiB).
func (e *Emulator) Logs() string { return e.logs.String() }

// Start runs bootstrap under rie on loopback ports with env (plus PATH and a fresh HOME).
// The emulator gets its own process group, so Stop (and cleanup, which calls it) stops it
// and the bootstrap it spawned by PID (SIGTERM, then SIGKILL after 5 s); a failed test logs
// their output. aws-lambda-rie starts the bootstrap (the Lambda init phase) only when the
// first invocation arrives.
func Start(t testing.TB, rie, bootstrap string, env []string) *Emulator {
	t.Helper()
	api, runtimeAPI := "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t))
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", api, "--runtime-api-address", runtimeAPI, bootstrap)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	e := &Emulator{URL: "http://" + api + "/2015-03-31/functions/function/invocations", addr: api, logs: &logs{}}
	cmd.Stdout, cmd.Stderr = e.logs, e.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	e.Started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aws-lambda-rie: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			pid := cmd.Process.Pid
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-done
			}
		})
	}
	t.Cleanup(func() {
		e.stop()
		if t.Failed() {
			t.Logf("%s under aws-lambda-rie:\n%s", filepath.Base(filepath.Dir(bootstrap)), e.logs.String())
		}
	})
	return e
}

// Stop stops the emulator and its bootstrap now (cleanup does it otherwise). It is
// idempotent.
func (e *Emulator) Stop() { e.stop() }

// WaitListening waits until the emulator accepts connections on its invoke address
// (polling every 2 ms within ctx), without invoking anything: the bootstrap is not started
// yet, so the next Invoke is a cold start whose duration can be timed on its own.
func (e *Emulator) WaitListening(ctx context.Context) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", e.addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("aws-lambda-rie not listening on %s: %w (last: %v)", e.addr, ctx.Err(), err)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// initReport is the line aws-lambda-rie logs when the init phase ends: the time from
// starting the bootstrap to its first request for an event.
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// InitDuration returns the init phase's duration as aws-lambda-rie reported it (from the
// bootstrap's exec to its first request for an event), false before the report is logged.
func (e *Emulator) InitDuration() (time.Duration, bool) {
	m := initReport.FindStringSubmatch(e.Logs())
	if m == nil {
		return 0, false
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// Invoke posts one event (JSON) and returns the function's raw result. A refused
// invocation or a function error (errorMessage) is an error.
func (e *Emulator) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || bytes.Contains(raw, []byte(`"errorMessage"`)) {
		return nil, fmt.Errorf("invoke: RIE answered %d: %s", resp.StatusCode, raw)
	}
	return raw, nil
}

// FirstInvoke is Invoke retried while the emulator starts (at most 100 attempts, 50 ms
// apart, within ctx).
func (e *Emulator) FirstInvoke(ctx context.Context, event []byte) ([]byte, error) {
	var last error
	for range 100 {
		raw, err := e.Invoke(ctx, event)
		if err == nil {
			return raw, nil
		}
		var ne net.Error
		if !errors.As(err, &ne) && !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no first answer from the emulator: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("no first answer from the emulator after 100 attempts: %v", last)
}
