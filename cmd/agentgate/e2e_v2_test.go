package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var (
	mutatorOnce sync.Once
	mutatorDir  string
	mutatorErr  error
)

// mutator builds test/fixtures/mutator (a relay that changes one thing in what a real
// server answers) once per test binary.
func mutator(t *testing.T) string {
	t.Helper()
	mutatorOnce.Do(func() {
		mutatorDir, mutatorErr = os.MkdirTemp("", "agentgate-mutator-")
		if mutatorErr != nil {
			return
		}
		cmd := exec.Command(testenv.LookPath(t, "go"), "build", "-o", filepath.Join(mutatorDir, "mutator"), "./test/fixtures/mutator")
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			mutatorErr = fmt.Errorf("go build ./test/fixtures/mutator: %v\n%s", err, out)
		}
	})
	t.Cleanup(func() {})
	if mutatorErr != nil {
		t.Fatal(mutatorErr)
	}
	return filepath.Join(mutatorDir, "mutator")
}

// TestV2RealServers is the "done when" against the npm servers in test/: locked at
// version 2, each single upstream change (made by the mutator relay in front of the real
// server) makes ci exit 1 with the change named and graded; and server-everything locked
// as the generic and vscode clients pins 14 and 19 tools.
func TestV2RealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	node := testenv.LookPath(t, "node")
	everything := filepath.Join(testenv.NodeModule(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	filesystem := filepath.Join(testenv.NodeModule(t, "@modelcontextprotocol/server-filesystem"), "dist", "index.js")
	relay := mutator(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {
		"everything": {"command": %s, "args": ["-mutate", "${MUTATE:-none}", "--", %s, %s, "stdio"]},
		"filesystem": {"command": %s, "args": [%s, "${workspaceFolder}"]}
	}}`, jsonStr(relay), jsonStr(node), jsonStr(everything), jsonStr(node), jsonStr(filesystem)))
	d := testDeps(dir)

	r := runCLI(t, d, nil, "lock", "--profile", "generic,vscode", "--server", "everything")
	if r.code != 0 {
		t.Fatalf("lock = %+v", r)
	}
	if r := runCLI(t, d, nil, "lock", "--server", "filesystem"); r.code != 0 {
		t.Fatalf("lock --server filesystem = %+v", r)
	}
	lf, warns, err := lockfile.ParseV2([]byte(readFile(t, filepath.Join(dir, "agentgate.lock"))))
	if err != nil || len(warns) != 0 {
		t.Fatalf("lockfile: %v %v", err, warns)
	}
	ev := lf.Servers["everything"].Profiles
	if len(ev["generic"].Tools) != 14 || len(ev["vscode"].Tools) != 19 {
		t.Errorf("server-everything: generic %d tools, vscode %d; want 14 and 19", len(ev["generic"].Tools), len(ev["vscode"].Tools))
	}
	in := func(p lockfile.ProfileV2, name string) bool {
		for _, tool := range p.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	}
	if !in(ev["vscode"], "trigger-sampling-request") || in(ev["generic"], "trigger-sampling-request") {
		t.Error("trigger-sampling-request, shown only to a client declaring sampling, is not pinned under vscode alone")
	}
	if len(ev["generic"].Prompts) == 0 || len(ev["generic"].Resources) == 0 || len(ev["generic"].ResourceTemplates) == 0 || ev["generic"].InstructionsHash == "" {
		t.Errorf("server-everything generic surface: %d prompts, %d resources, %d templates", len(ev["generic"].Prompts), len(ev["generic"].Resources), len(ev["generic"].ResourceTemplates))
	}
	if r := runCLI(t, d, nil, "ci"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: 2 servers, 3 profiles") {
		t.Fatalf("ci before any change = %+v", r)
	}
	before := readFile(t, filepath.Join(dir, "agentgate.lock"))
	if r := runCLI(t, d, nil, "lock"); r.code != 0 || readFile(t, filepath.Join(dir, "agentgate.lock")) != before {
		t.Fatalf("a second lock changed the lockfile: %+v", r)
	}

	tests := []struct {
		mutate string
		line   string // in ci's output, for the generic profile
	}{
		{"title", `WARNING  server "everything" (generic) tool "echo": changed: title-changed /title`},
		{"annotation", `CRITICAL server "everything" (generic) tool "echo": changed: annotation-toward-danger /annotations/destructiveHint`},
		{"outputSchema", `server "everything" (generic) tool "echo": changed: schema-changed /outputSchema`},
		{"prompt", `CRITICAL server "everything" (generic) prompt "`},
		{"resource", `CRITICAL server "everything" (generic) resource "`},
		{"instructions", `CRITICAL server "everything" (generic) instructions: changed: instructions-changed /instructions`},
	}
	for _, tc := range tests {
		t.Run(tc.mutate, func(t *testing.T) {
			r := runCLI(t, d, map[string]string{"MUTATE": tc.mutate}, "ci")
			if r.code != 1 || !strings.Contains(r.stdout, tc.line) {
				t.Fatalf("ci after a %s change: code %d\n%s%s\nwant a line with %q", tc.mutate, r.code, r.stdout, r.stderr, tc.line)
			}
			// Only the one change, under each profile that sees it.
			if n := strings.Count(r.stdout, "\n") - 1; n != 2 {
				t.Errorf("%d changed items, want 1 per profile:\n%s", n, r.stdout)
			}
		})
	}
	// The same servers locked at version 1 still gate as version 1: a title change is not
	// drift there.
	v1 := filepath.Join(dir, "v1.lock")
	if r := runCLI(t, d, nil, "lock", "--lockfile", v1, "--lockfile-version", "1"); r.code != 0 {
		t.Fatalf("lock v1 = %+v", r)
	}
	if r := runCLI(t, d, map[string]string{"MUTATE": "title"}, "ci", "--lockfile", v1); r.code != 0 {
		t.Errorf("v1 ci after a title change = %+v", r)
	}
}
