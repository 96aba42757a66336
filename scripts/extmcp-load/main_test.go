package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// build compiles this command into the test's temporary directory: its servers are the
// binary re-executed with -child, which a test binary cannot be.
func build(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "extmcp-load")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestServerProcs drives both servers briefly at -server-procs 1: each reports the
// GOMAXPROCS it ran with, and every request is answered.
func TestServerProcs(t *testing.T) {
	exe := build(t)
	cmd := exec.Command(exe, "-rate", "200", "-duration", "250ms", "-server-procs", "1", "-json")
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("extmcp-load: %v\n%s", err, out)
	}
	var doc struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if len(doc.Results) != 4 {
		t.Fatalf("%d results, want tools/list and tools/call against processor and noop", len(doc.Results))
	}
	for _, r := range doc.Results {
		// (Server CPU is read from /proc in 10 ms ticks: 50 requests may well take less.)
		if r.ServerProcs != 1 || r.Sent != 50 || r.Errors != 0 || r.ServerCPUMicros < 0 {
			t.Errorf("%s against %s: GOMAXPROCS %d, sent %d, errors %d, server CPU %.1f µs; want 1, 50, 0 and no negative CPU",
				r.Method, r.Target, r.ServerProcs, r.Sent, r.Errors, r.ServerCPUMicros)
		}
	}
}

// TestServerProcsNeedsItsOwnServers: -server-procs cannot reach a server at -addr, so the
// pair is refused (exit 2) before anything runs.
func TestServerProcsNeedsItsOwnServers(t *testing.T) {
	exe := build(t)
	out, err := exec.Command(exe, "-addr", "127.0.0.1:9", "-server-procs", "1").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "set GOMAXPROCS where that server runs") {
		t.Fatalf("exit %v, output %q; want exit 2 and the reason", err, out)
	}
}
