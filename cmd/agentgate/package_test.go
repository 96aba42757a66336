package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
)

const (
	integrity1 = "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ=="
	integrity2 = "sha512-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=="
)

// fakeNPM is an npm registry on loopback serving @acme/weather: versions (with their
// integrity) and dist-tags.latest can be changed by the test; requests are counted.
type fakeNPM struct {
	mu       sync.Mutex
	versions map[string]string
	latest   string
	requests atomic.Int32
	srv      *httptest.Server
}

func newFakeNPM(t *testing.T) *fakeNPM {
	f := &fakeNPM{versions: map[string]string{"1.0.0": integrity1}, latest: "1.0.0"}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.mu.Lock()
		defer f.mu.Unlock()
		name, version, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		if name != "@acme%2Fweather" {
			http.NotFound(w, r)
			return
		}
		if version == "" {
			vs := map[string]any{}
			for v, i := range f.versions {
				vs[v] = map[string]any{"dist": map[string]string{"integrity": i}}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"dist-tags": map[string]string{"latest": f.latest}, "versions": vs})
			return
		}
		i, ok := f.versions[version]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "@acme/weather", "version": version, "dist": map[string]string{"integrity": i}})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeNPM) set(version, integrity string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[version] = integrity
}

// countingList wraps a list function and counts the servers it was asked to start.
func countingList(list func(context.Context, mcpclient.Server, mcpclient.Options) (*mcpclient.Listing, error), n *atomic.Int32) func(context.Context, mcpclient.Server, mcpclient.Options) (*mcpclient.Listing, error) {
	return func(ctx context.Context, s mcpclient.Server, o mcpclient.Options) (*mcpclient.Listing, error) {
		n.Add(1)
		return list(ctx, s, o)
	}
}

func packageProject(t *testing.T, spec string) (string, deps, *atomic.Int32) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"weather": {"command": "npx", "args": ["-y", %q]}, "local": {"command": "node", "args": ["server.js"]}}}`, spec))
	surface := &fakeSurface{tools: []string{`{"name":"get_forecast","description":"Get the forecast.","inputSchema":{"type":"object"}}`}}
	d := testDeps(dir)
	var started atomic.Int32
	d.list = countingList(fakeListV2(map[string]*fakeSurface{"weather": surface, "local": surface}), &started)
	return dir, d, &started
}

// lock pins the exact version's integrity; ci passes while the registry serves the same
// content, and when the same version is re-published with other content ci fails with a
// CRITICAL naming the package, without starting the server.
func TestPackageLockAndCI(t *testing.T) {
	npm := newFakeNPM(t)
	env := map[string]string{"AGENTGATE_NPM_REGISTRY": npm.srv.URL}
	dir, d, started := packageProject(t, "@acme/weather@1.0.0")
	if r := runCLI(t, d, env, "lock"); r.code != 0 || r.stderr != "" {
		t.Fatalf("lock = %+v", r)
	}
	lf, _, err := lockfile.ParseV2([]byte(readFile(t, filepath.Join(dir, "agentgate.lock"))))
	if err != nil {
		t.Fatal(err)
	}
	want := lockfile.Package{Type: lockfile.PackageNPM, Name: "@acme/weather", Version: "1.0.0", Integrity: integrity1}
	if p := lf.Servers["weather"].Package; p == nil || !p.Equal(want) || lf.Servers["local"].Package != nil {
		t.Fatalf("weather package %+v, local %+v", p, lf.Servers["local"].Package)
	}
	if r := runCLI(t, d, env, "ci"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: 2 servers") {
		t.Fatalf("ci = %+v", r)
	}

	npm.set("1.0.0", integrity2)
	started.Store(0)
	r := runCLI(t, d, env, "ci")
	if r.code != 1 || !strings.Contains(r.stdout, `CRITICAL server "weather" package @acme/weather@1.0.0: dist.integrity changed for the same version`) ||
		!strings.Contains(r.stdout, "(package-integrity-changed)") || !strings.Contains(r.stdout, `server "weather" was not started`) {
		t.Fatalf("ci after re-publish = %+v", r)
	}
	if started.Load() != 1 {
		t.Errorf("%d servers started; want only local (weather's package failed its check)", started.Load())
	}
	r = runCLI(t, d, env, "ci", "--json")
	var rep struct {
		Grade   string
		Servers []struct {
			Server  string
			Package *lockfile.PackageDiff
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 || rep.Grade != "CRITICAL" || len(rep.Servers) != 1 ||
		rep.Servers[0].Package == nil || !rep.Servers[0].Package.NotStarted || rep.Servers[0].Package.Live.Integrity != integrity2 {
		t.Fatalf("ci --json = %+v (%v)", r, err)
	}
	sarif := filepath.Join(dir, "out.sarif")
	r = runCLI(t, d, env, "ci", "--sarif", sarif)
	lines := strings.Split(readFile(t, filepath.Join(dir, "agentgate.lock")), "\n")
	if lines[30] != `      "package": {` || !strings.Contains(lines[29], `"weather"`) {
		t.Fatalf("line 31 of the lockfile is %q, not weather's package", lines[30])
	}
	if s := readFile(t, sarif); r.code != 1 || !strings.Contains(s, `"ruleId": "package-integrity-changed"`) || !strings.Contains(s, `"startLine": 31`) {
		t.Errorf("SARIF (exit %d):\n%s", r.code, s)
	}

	// Offline, ci reads only the lockfile and the config: the same package and version.
	npm.srv.Close()
	started.Store(0)
	if r := runCLI(t, d, env, "ci", "--offline"); r.code != 0 || started.Load() != 0 || !strings.Contains(r.stderr, "--offline: 2 servers were checked by their package identities only") ||
		r.stdout != "ok (offline): 1 package identity matches agentgate.lock; no surface was listed\n" {
		t.Fatalf("ci --offline = %+v (%d started)", r, started.Load())
	}
	// A registry that cannot be reached fails ci: it does not pass what it cannot check.
	if r := runCLI(t, d, env, "ci"); r.code != 2 || !strings.Contains(r.stderr, `server "weather": cannot check its package @acme/weather@1.0.0`) ||
		!strings.Contains(r.stderr, "cannot reach it") || !strings.Contains(r.stderr, "--offline") {
		t.Fatalf("ci with the registry down = %+v", r)
	}
	// An edited version is a WARNING offline too.
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"weather": {"command": "npx", "args": ["-y", "@acme/weather@1.1.0"]}, "local": {"command": "node", "args": ["server.js"]}}}`)
	if r := runCLI(t, d, env, "ci", "--offline"); r.code != 1 || !strings.Contains(r.stdout, `WARNING  server "weather" package @acme/weather@1.0.0: the config now runs another version`) {
		t.Fatalf("ci --offline after an edit = %+v", r)
	}
	if r := runCLI(t, d, env, "ci", "--offline", "--fail-on", "critical"); r.code != 0 {
		t.Fatalf("ci --offline --fail-on critical = %+v", r)
	}
}

// A floating spec is locked as what it resolves to now, with a warning giving the pinned
// command; ci warns the same way without failing, and a new version published under
// latest is a WARNING (new code runs), not a CRITICAL.
func TestPackageFloating(t *testing.T) {
	npm := newFakeNPM(t)
	env := map[string]string{"AGENTGATE_NPM_REGISTRY": npm.srv.URL}
	dir, d, _ := packageProject(t, "@acme/weather@latest")
	const warn = `server "weather" runs @acme/weather@latest, which names the dist-tag latest: it runs whatever the registry serves when it starts (now @acme/weather@1.0.0); pin it in .mcp.json: npx -y @acme/weather@1.0.0`
	r := runCLI(t, d, env, "lock", "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "agentgate: warning: "+warn+"\n") || !strings.Contains(r.stdout, `"pinned": "npx -y @acme/weather@1.0.0"`) || !strings.Contains(r.stdout, `"packages": 1`) {
		t.Fatalf("lock = %+v", r)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "agentgate.lock")), `"version": "1.0.0"`) {
		t.Fatal("the resolved version is not locked")
	}
	if r := runCLI(t, d, env, "ci"); r.code != 0 || !strings.Contains(r.stdout, "WARNING  "+warn+" (package-floating; not failing)\nok: ") {
		t.Fatalf("ci = %+v", r)
	}
	npm.set("1.1.0", integrity2)
	npm.mu.Lock()
	npm.latest = "1.1.0"
	npm.mu.Unlock()
	r = runCLI(t, d, env, "ci")
	if r.code != 1 || !strings.Contains(r.stdout, `WARNING  server "weather" package @acme/weather@1.0.0: the config now runs another version than the locked one`) || strings.Contains(r.stdout, "CRITICAL") {
		t.Fatalf("ci after a new latest = %+v", r)
	}
	if r := runCLI(t, d, env, "ci", "--fail-on", "critical"); r.code != 0 {
		t.Fatalf("ci --fail-on critical = %+v", r)
	}
}

// A lockfile written before package identity keeps passing ci unchanged, and lock
// --no-package writes none; a registry that cannot answer fails lock with nothing written.
func TestPackageOptional(t *testing.T) {
	npm := newFakeNPM(t)
	env := map[string]string{"AGENTGATE_NPM_REGISTRY": npm.srv.URL}
	dir, d, _ := packageProject(t, "@acme/weather@1.0.0")
	if r := runCLI(t, d, env, "lock", "--no-package"); r.code != 0 || strings.Contains(readFile(t, filepath.Join(dir, "agentgate.lock")), `"package"`) {
		t.Fatalf("lock --no-package = %+v", r)
	}
	before := npm.requests.Load()
	if r := runCLI(t, d, env, "ci"); r.code != 0 || npm.requests.Load() != before {
		t.Fatalf("ci of a lockfile without packages = %+v (%d registry requests)", r, npm.requests.Load()-before)
	}
	lock := readFile(t, filepath.Join(dir, "agentgate.lock"))
	npm.srv.Close()
	r := runCLI(t, d, env, "lock")
	if r.code != 2 || !strings.Contains(r.stderr, `server "weather": cannot pin its package @acme/weather@1.0.0`) || !strings.Contains(r.stderr, "--no-package") {
		t.Fatalf("lock with the registry down = %+v", r)
	}
	if readFile(t, filepath.Join(dir, "agentgate.lock")) != lock {
		t.Error("the lockfile changed")
	}
	// A command agentgate cannot read a package from is locked by its surface, with a warning.
	writeFile(t, filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"weather": {"command": "npx", "args": ["-y", "github:acme/weather"]}}}`)
	if err := os.Remove(filepath.Join(dir, "agentgate.lock")); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, d, env, "lock"); r.code != 0 || !strings.Contains(r.stderr, `server "weather": npx: its package cannot be pinned`) || !strings.Contains(r.stderr, "its surface is locked, its package is not") {
		t.Fatalf("lock of a git spec = %+v", r)
	}
	if r := runCLI(t, d, env, "ci", "--offline", "--lockfile", "missing.lock"); r.code != 2 || !strings.Contains(r.stderr, "run 'agentgate lock' first") {
		t.Fatalf("ci --offline without a lockfile = %+v", r)
	}
}
