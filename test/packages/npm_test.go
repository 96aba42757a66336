// Package packages_test locks a real npm server with the built agentgate and checks its
// package identity against the real npm registry: the integrity in agentgate.lock is the
// one `npm view NAME@VERSION dist.integrity` prints and the one test/package-lock.json
// recorded when `npm ci` installed it; a tampered integrity makes ci fail with a CRITICAL
// naming the package, without starting the server.
//
// It is the one test that talks to an address beyond loopback (registry.npmjs.org), so it
// runs only when AGENTGATE_REQUIRE_NPM_REGISTRY=1 (.ci/run sets it; the machine that runs
// `npm ci` reaches the registry anyway); the server itself runs from test/node_modules.
package packages_test

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

const everything = "@modelcontextprotocol/server-everything"

func TestRealNPMPackageIdentity(t *testing.T) {
	if !testenv.Required(testenv.NPMRegistry) {
		t.Skip("talks to registry.npmjs.org; set " + string(testenv.NPMRegistry) + "=1 to run it")
	}
	root := testenv.RepoRoot(t)
	testenv.NodeModule(t, everything)
	npx, npm := testenv.LookPath(t, "npx"), testenv.LookPath(t, "npm")

	// The version npm ci installed, and the integrity it recorded.
	var pl struct {
		Packages map[string]struct{ Version, Integrity string } `json:"packages"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "test", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pl); err != nil {
		t.Fatal(err)
	}
	installed := pl.Packages["node_modules/"+everything]
	if installed.Version == "" || installed.Integrity == "" {
		t.Fatalf("test/package-lock.json has no %s", everything)
	}

	// What npm itself says of that version.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	view := exec.CommandContext(ctx, npm, "view", everything+"@"+installed.Version, "dist.integrity")
	view.Dir = t.TempDir()
	code, out, errOut := testenv.RunCommand(t, view)
	if code != 0 {
		t.Fatalf("npm view: exit %d: %s", code, errOut)
	}
	viewed := strings.TrimSpace(out)

	bin := testenv.BuildCommand(t, "./cmd/agentgate")
	dir := t.TempDir()
	config := func(spec string) {
		cfg := fmt.Sprintf(`{"mcpServers": {"everything": {"command": %q, "args": ["-y", %q], "cwd": %q}}}`, npx, spec, filepath.Join(root, "test"))
		if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "AGENTGATE_NPM_REGISTRY=", "npm_config_registry=")
		return testenv.RunCommand(t, cmd)
	}
	config(everything + "@" + installed.Version)
	if code, out, errOut := run("lock", "--timeout", "60s"); code != 0 {
		t.Fatalf("lock: exit %d\n%s%s", code, out, errOut)
	}
	lockPath := filepath.Join(dir, "agentgate.lock")
	data, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	lf, _, err := lockfile.ParseV2(data)
	if err != nil {
		t.Fatal(err)
	}
	p := lf.Servers["everything"].Package
	if p == nil || p.Type != lockfile.PackageNPM || p.Name != everything || p.Version != installed.Version {
		t.Fatalf("package = %+v", p)
	}
	if p.Integrity != viewed || p.Integrity != installed.Integrity {
		t.Fatalf("integrity in agentgate.lock %s\n  npm view:          %s\n  package-lock.json: %s", p.Integrity, viewed, installed.Integrity)
	}
	if code, out, errOut := run("ci", "--timeout", "60s"); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("ci: exit %d\n%s%s", code, out, errOut)
	}

	// Another valid integrity for the same version: what a re-published package looks like.
	sum := sha512.Sum512([]byte("not the package"))
	forged := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	if err := os.WriteFile(lockPath, []byte(strings.Replace(string(data), p.Integrity, forged, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("ci", "--timeout", "60s")
	want := fmt.Sprintf(`CRITICAL server "everything" package %s@%s: dist.integrity changed for the same version`, everything, installed.Version)
	if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, `server "everything" was not started`) {
		t.Fatalf("ci with a forged integrity: exit %d\n%s%s", code, out, errOut)
	}

	// @latest in the config: offline, a WARNING with the pinned command, and no failure.
	if err := os.WriteFile(lockPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	config(everything + "@latest")
	code, out, errOut = run("ci", "--offline")
	pinned := fmt.Sprintf("pin it in .mcp.json: %s -y %s@%s", npx, everything, installed.Version)
	if code != 0 || !strings.Contains(out, "WARNING  server \"everything\" runs "+everything+"@latest, which names the dist-tag latest") || !strings.Contains(out, pinned) {
		t.Fatalf("ci --offline with @latest: exit %d\n%s%s", code, out, errOut)
	}
}
