package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var servingRE = regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`)

// startLockerd runs lockerd on a free loopback port and returns its URL; it is killed by
// PID when the test ends.
func startLockerd(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "--port", "0", "--db", filepath.Join(t.TempDir(), "locker.db"))
	return servingRE.FindStringSubmatch(testenv.StartProcess(t, cmd, servingRE.MatchString))[1]
}

// inspectorCLI returns the command line that runs the pinned MCP Inspector in CLI mode.
func inspectorCLI(t *testing.T) []string {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/inspector")
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil || json.Unmarshal(raw, &pkg) != nil || pkg.Bin["mcp-inspector"] == "" {
		t.Fatalf("cannot read the inspector's bin entry: %v", err)
	}
	return []string{node, filepath.Join(dir, pkg.Bin["mcp-inspector"]), "--cli"}
}

// runBounded runs argv with a deadline; the process is killed by PID when it expires.
func runBounded(t *testing.T, env []string, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// inspectorSetup skips in -short mode; otherwise it builds lockermcp (mcpBin) and lockerd,
// runs lockerd (at url), and returns the Inspector's environment (a fresh HOME and
// catalog) and base, the Inspector CLI command line driving mcpBin against url.
func inspectorSetup(t *testing.T) (mcpBin, url string, env, base []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds binaries and runs node")
	}
	argv := inspectorCLI(t) // first: skips or fails before building when node is missing
	mcpBin = testenv.BuildCommand(t, "./cmd/lockermcp")
	url = startLockerd(t, testenv.BuildCommand(t, "./cmd/lockerd"))
	home := t.TempDir()
	env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "catalog.json"), "NO_COLOR=1")
	base = append(argv, mcpBin, "-e", "LOCKER_URL="+url)
	return mcpBin, url, env, base
}

// TestInspectorOverStdio builds lockermcp and lockerd, runs lockerd, and drives lockermcp
// over real stdio with the MCP Inspector CLI: list the tools, then read demo-pad-v1.
func TestInspectorOverStdio(t *testing.T) {
	mcpBin, url, env, base := inspectorSetup(t)

	out, errs, err := runBounded(t, env, append(base, "--method", "tools/list", "--strict")...)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s\n%s", err, out, errs)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "locker_append,locker_create,locker_deposit,locker_manifest,locker_read_blocks,locker_seal" {
		t.Fatalf("tools = %v", names)
	}

	for _, tc := range []struct {
		args    []string
		verdict string
	}{
		{[]string{"pad_id=demo-pad-v1", "ticket=unused", "to_block=2"}, "internal_consistency_only"},
		{[]string{"pad_id=demo-pad-v1", "ticket=unused", "to_block=2", "expected_head_hash=" + locker.DemoHead}, "trusted_head_match"},
	} {
		out, errs, err := runBounded(t, env, append(append(base, "--method", "tools/call", "--tool-name", "locker_read_blocks", "--tool-arg"), tc.args...)...)
		if err != nil {
			t.Fatalf("tools/call: %v\n%s\n%s", err, out, errs)
		}
		var res struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Count     int `json:"count"`
				Integrity struct {
					Verdict string `json:"verdict"`
				} `json:"integrity"`
				Blocks []struct {
					CurrHash    string `json:"curr_hash"`
					PayloadUTF8 string `json:"payload_utf8"`
				} `json:"blocks"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("tools/call output: %v\n%s", err, out)
		}
		sc := res.StructuredContent
		if res.IsError || sc.Integrity.Verdict != tc.verdict || sc.Count != 3 || sc.Blocks[2].CurrHash != locker.DemoHead ||
			sc.Blocks[1].PayloadUTF8 != "Permanent read-only demo handoff pad.\n" {
			t.Fatalf("want verdict %s, got:\n%s", tc.verdict, out)
		}
	}

	// inspect, as a subprocess, against the same daemon.
	out, errs, err = runBounded(t, os.Environ(), mcpBin, "inspect", "demo-pad-v1", "--url", url, "--expected-head", locker.DemoHead)
	if err != nil || !strings.Contains(out, "trusted_head_match") {
		t.Fatalf("inspect: %v\n%s\n%s", err, out, errs)
	}
	_, _, err = runBounded(t, os.Environ(), mcpBin, "inspect", "demo-pad-v1", "--url", url, "--expected-head", strings.Repeat("0", 64))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("inspect with a wrong head: %v, want exit 2", err)
	}
}
