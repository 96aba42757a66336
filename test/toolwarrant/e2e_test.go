package toolwarrant

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds ./cmd/toolwarrant and ./test/fixtures/rugpull once per test binary.
func binaries(t *testing.T) (toolwarrant, rugpull string) {
	t.Helper()
	goBin := testenv.LookPath(t, "go")
	root := testenv.RepoRoot(t)
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "toolwarrant-e2e-"); binErr != nil {
			return
		}
		for _, pkg := range []string{"./cmd/toolwarrant", "./test/fixtures/rugpull"} {
			cmd := exec.Command(goBin, "build", "-o", binDir+string(os.PathSeparator), pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "toolwarrant"), filepath.Join(binDir, "rugpull")
}

type run struct {
	code           int
	stdout, stderr string
}

func (r run) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// tw runs the built toolwarrant with the catalog in dir.
func tw(t *testing.T, bin, dir string, args ...string) run {
	t.Helper()
	return twWith(t, bin, dir, nil, args...)
}

// twWith is tw with extra environment (later values win).
func twWith(t *testing.T, bin, dir string, env []string, args ...string) run {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// The transparency state (checkpoint key, last seen checkpoint) stays in the test's dir.
	cmd.Env = append(os.Environ(), "TOOLWARRANT_CATALOG="+filepath.Join(dir, "toolwarrant.db"), "TOOLWARRANT_IDENTITY=e2e@test",
		"TOOLWARRANT_CONFIG_DIR="+filepath.Join(dir, "config"))
	cmd.Env = append(cmd.Env, env...)
	code, stdout, stderr := testenv.RunCommand(t, cmd)
	return run{code, stdout, stderr}
}

type row struct {
	Server, Tool, State string
	Current, Approved   string
	Pending             bool
	Grade               string
	Rules, Flags        []string
	Versions            int
}

func list(t *testing.T, bin, dir string) map[string]row {
	t.Helper()
	r := tw(t, bin, dir, "list", "--json")
	var l struct{ Tools []row }
	if err := json.Unmarshal([]byte(r.stdout), &l); r.code != 0 || err != nil {
		t.Fatalf("list --json: %v %s", err, r)
	}
	m := map[string]row{}
	for _, x := range l.Tools {
		m[x.Server+"/"+x.Tool] = x
	}
	return m
}

// TestEndToEnd crawls server-everything (a real MCP server no one here wrote) over
// Streamable HTTP on loopback and the rug-pull fixture, then pulls the rug: the reworded
// description becomes a new version with a pending proposal, graded CRITICAL.
func TestEndToEnd(t *testing.T) {
	bin, rugpull := binaries(t)
	node := testenv.LookPath(t, "node")
	everything := filepath.Join(testenv.NodeModule(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	port := testenv.FreePort(t)
	ev := exec.Command(node, everything, "streamableHttp")
	ev.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	testenv.StartProcess(t, ev, func(l string) bool { return strings.Contains(l, strconv.Itoa(port)) })
	rp := exec.Command(rugpull, "-http", "127.0.0.1:0", "-lifetime", "5m")
	line := testenv.StartProcess(t, rp, func(l string) bool { return strings.HasPrefix(l, "listening on ") })
	rugURL := strings.TrimPrefix(line, "listening on ")

	dir := t.TempDir()
	if r := tw(t, bin, dir, "init"); r.code != 0 {
		t.Fatalf("init: %s", r)
	}
	if r := tw(t, bin, dir, "server", "add", "everything", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), "--allow-private"); r.code != 0 {
		t.Fatalf("server add everything: %s", r)
	}
	if r := tw(t, bin, dir, "server", "add", "weather", rugURL, "--allow-private"); r.code != 0 {
		t.Fatalf("server add weather: %s", r)
	}
	r := tw(t, bin, dir, "crawl")
	if r.code != 1 || !regexp.MustCompile(`(?m)^everything: \d+ tools listed, \d+ new versions \(crawl 1\)$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "weather: 5 tools listed, 5 new versions (crawl 1)\n") {
		t.Fatalf("first crawl: %s", r)
	}
	before := list(t, bin, dir)
	n := 0
	for k, x := range before {
		if strings.HasPrefix(k, "everything/") {
			n++
			if x.State != "PENDING" || !strings.HasPrefix(x.Current, "sha256:") || len(x.Current) != 71 {
				t.Errorf("%s: %+v", k, x)
			}
		}
	}
	if n < 5 || before["everything/echo"].Current == "" {
		t.Errorf("server-everything: %d tools in the catalog, echo = %+v", n, before["everything/echo"])
	}
	// A real server that did not change: nothing new, exit 0.
	if r := tw(t, bin, dir, "crawl", "everything"); r.code != 0 || !strings.Contains(r.stdout, "0 new versions (crawl 2)") {
		t.Errorf("second crawl of server-everything: %s", r)
	}

	// The fixture has been listed once, so it now serves the reworded description.
	r = tw(t, bin, dir, "crawl", "weather")
	if r.code != 1 || !regexp.MustCompile(`  changed get_forecast  sha256:[0-9a-f]{12}  CRITICAL description-changed,suspicious-text-added  \[invisible\]`).MatchString(r.stdout) {
		t.Fatalf("crawl after the rug pull: %s", r)
	}
	after := list(t, bin, dir)
	fc := after["weather/get_forecast"]
	if fc.Versions != 2 || fc.Current == before["weather/get_forecast"].Current || !fc.Pending || fc.Grade != "CRITICAL" || fc.State != "PENDING" {
		t.Errorf("get_forecast after the rug pull: %+v", fc)
	}
	r = tw(t, bin, dir, "list", "--pending")
	if r.code != 0 || !strings.Contains(r.stdout, "weather     get_forecast") || !strings.Contains(r.stdout, "CRITICAL description-changed +1 more  invisible") {
		t.Errorf("list --pending: %s", r)
	}
	r = tw(t, bin, dir, "diff", "weather", "get_forecast")
	if r.code != 1 || !strings.Contains(r.stdout, "grade: CRITICAL") || !strings.Contains(r.stdout, `\u200b`) || strings.Contains(r.stdout, "\u200b") {
		t.Errorf("diff: %s", r)
	}
	if r := tw(t, bin, dir, "show", "everything", "echo"); r.code != 0 || !strings.HasPrefix(r.stdout, "{") {
		t.Errorf("show everything echo: %s", r)
	}
}
