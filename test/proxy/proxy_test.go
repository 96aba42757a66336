// Package proxy_test runs `toolwarrant proxy` end to end with real MCP peers no one here
// wrote: server-everything from npm behind it, the MCP Inspector CLI and the TypeScript
// SDK client in front of it, and the go-sdk client; plus the rug-pull fixture, whose
// description changes mid-session. The catalog is built with the toolwarrant binary
// itself: init, a trust list of one SSH key, server add, crawl, signed approvals.
package proxy_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var (
	buildOnce          sync.Once
	twBin, rugpullBin  string
	buildDir, buildErr = "", error(nil)
)

// binaries builds toolwarrant and the rug-pull fixture once per test binary.
func binaries(t *testing.T) (toolwarrant, rugpull string) {
	t.Helper()
	goBin := testenv.LookPath(t, "go")
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "proxy-test-"); buildErr != nil {
			return
		}
		for pkg, out := range map[string]*string{"./cmd/toolwarrant": &twBin, "./test/fixtures/rugpull": &rugpullBin} {
			*out = filepath.Join(buildDir, filepath.Base(pkg))
			cmd := exec.Command(goBin, "build", "-o", *out, pkg)
			cmd.Dir = testenv.RepoRoot(t)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return twBin, rugpullBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// world is one catalog with one upstream server, one approver (alice's SSH key) and the
// commands to run against it.
type world struct {
	t       *testing.T
	bin     string
	dir     string
	env     []string
	alice   string
	server  string
	digests map[string]string // tool → digest of the crawl
}

func newWorld(t *testing.T, server, url string) *world {
	t.Helper()
	bin, _ := binaries(t)
	sshKeygen := testenv.LookPath(t, "ssh-keygen")
	dir := t.TempDir()
	w := &world{t: t, bin: bin, dir: dir, server: server, alice: filepath.Join(dir, "alice"),
		env: append(os.Environ(), "TOOLWARRANT_CATALOG="+filepath.Join(dir, "toolwarrant.db"), "TOOLWARRANT_IDENTITY=crawler@test",
			"TOOLWARRANT_CONFIG_DIR="+filepath.Join(dir, "config"))}
	w.tw(0, "init")
	if out, err := exec.Command(sshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", w.alice).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	w.tw(0, "trust", "init", "--ssh-key", w.alice+".pub", "--principal", "alice@example.com")
	w.tw(0, "server", "add", server, url, "--allow-private")
	w.tw(1, "crawl")
	w.readDigests()
	return w
}

// tw runs toolwarrant and checks its exit code.
func (w *world) tw(want int, args ...string) string {
	w.t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	code, stdout, stderr := testenv.RunCommand(w.t, cmd)
	if code != want {
		w.t.Fatalf("toolwarrant %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout
}

func (w *world) readDigests() {
	w.t.Helper()
	var doc struct {
		Tools []struct {
			Tool    string `json:"tool"`
			Current string `json:"current"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(w.tw(0, "list", "--json")), &doc); err != nil {
		w.t.Fatal(err)
	}
	w.digests = map[string]string{}
	for _, x := range doc.Tools {
		w.digests[x.Tool] = x.Current
	}
}

func (w *world) approve(tools ...string) {
	w.t.Helper()
	for _, tool := range tools {
		if w.digests[tool] == "" {
			w.t.Fatalf("no crawled digest for %s (have %v)", tool, w.digests)
		}
		w.tw(0, "approve", w.server, tool, "--hash", w.digests[tool], "--sign-key", w.alice)
	}
}

// proxy is one running `toolwarrant proxy --listen`.
type proxy struct {
	base string
	cmd  *exec.Cmd
	done chan struct{}
}

// route is the MCP endpoint of the world's server through the proxy.
func (p *proxy) route(server string) string { return p.base + "/" + server + "/mcp" }

// startProxy starts the proxy on a free loopback port; it is stopped by PID at cleanup
// (with SIGTERM first, as stop does).
func (w *world) startProxy(args ...string) *proxy {
	w.t.Helper()
	port := testenv.FreePort(w.t)
	cmd := exec.Command(w.bin, append([]string{"proxy", "--listen", "127.0.0.1:" + strconv.Itoa(port)}, args...)...)
	cmd.Dir, cmd.Env = w.dir, w.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	p := &proxy{base: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	var log strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "toolwarrant proxy: serving") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() {
		p.stop(w.t)
		if testenv.Alive(cmd.Process.Pid) {
			w.t.Errorf("proxy (PID %d) still running", cmd.Process.Pid)
		}
		if w.t.Failed() {
			mu.Lock()
			w.t.Logf("proxy stderr:\n%s", log.String())
			mu.Unlock()
		}
	})
	select {
	case <-ready:
	case <-p.done:
		mu.Lock()
		defer mu.Unlock()
		w.t.Fatalf("the proxy exited at start:\n%s", log.String())
	case <-time.After(30 * time.Second):
		w.t.Fatal("the proxy did not start within 30s")
	}
	return p
}

// stop ends the proxy with SIGTERM (it writes its decision records) and waits; SIGKILL
// after 10 s.
func (p *proxy) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("the proxy did not stop within 10s of SIGTERM")
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// health reads /healthz.
func (p *proxy) health(t *testing.T) (fresh bool, approvals map[string]string) {
	t.Helper()
	resp, err := http.Get(p.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Fresh   bool `json:"fresh"`
		Servers []struct {
			Server    string `json:"server"`
			Approvals string `json:"approvals"`
		} `json:"servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	approvals = map[string]string{}
	for _, s := range doc.Servers {
		approvals[s.Server] = s.Approvals
	}
	return doc.Fresh, approvals
}

// startEverything runs server-everything over Streamable HTTP on a free loopback port.
func startEverything(t *testing.T) string {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/server-everything")
	port := strconv.Itoa(testenv.FreePort(t))
	cmd := exec.Command(node, filepath.Join(dir, "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	testenv.StartProcess(t, cmd, func(line string) bool { return strings.Contains(line, port) })
	return "http://127.0.0.1:" + port + "/mcp"
}

// startRugpull runs the rug-pull fixture with -control: POST /rug rewords get_forecast
// mid-session.
func startRugpull(t *testing.T) (mcpURL, base string) {
	t.Helper()
	_, bin := binaries(t)
	port := strconv.Itoa(testenv.FreePort(t))
	cmd := exec.Command(bin, "-http", "127.0.0.1:"+port, "-control", "-lifetime", "5m")
	testenv.StartProcess(t, cmd, func(line string) bool { return strings.Contains(line, "listening on") })
	base = "http://127.0.0.1:" + port
	return base + "/mcp", base
}

func rug(t *testing.T, base, path string) {
	t.Helper()
	resp, err := http.Post(base+path, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
}

// inspector runs the pinned MCP Inspector in CLI mode with args and returns its stdout.
func inspector(t *testing.T, args ...string) (string, error) {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/inspector")
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Bin["mcp-inspector"] == "" {
		t.Fatalf("cannot read the inspector's bin entry: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{filepath.Join(dir, pkg.Bin["mcp-inspector"]), "--cli"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(90*time.Second, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), fmt.Errorf("%v: %s", err, ee.Stderr)
	}
	return string(out), err
}

func listedNames(t *testing.T, out string) []string {
	t.Helper()
	var doc struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspector output is not a listing: %v\n%s", err, out)
	}
	var names []string
	for _, x := range doc.Tools {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	return names
}

// session connects the go-sdk client to url, offering protocol version (the client's
// default when "").
func session(t *testing.T, url, version string) *mcp.ClientSession {
	return testenv.MCPSession(t, url, version, true)
}

func names(t *testing.T, cs *mcp.ClientSession) []string { return testenv.ToolNames(t, cs) }

// TestInspectorAndEverything: server-everything behind the proxy, two of its tools
// approved. The MCP Inspector CLI lists exactly those two over Streamable HTTP and over the
// stdio bridge, calls one, and a call of an unapproved tool is refused by the proxy with a
// JSON-RPC error naming the tool.
func TestInspectorAndEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers and clients; runs in make test")
	}
	w := newWorld(t, "everything", startEverything(t))
	if len(w.digests) < 10 {
		t.Fatalf("server-everything listed %d tools", len(w.digests))
	}
	w.approve("echo", "get-sum")
	p := w.startProxy("--refresh", "200ms", "--record-every", "1s")

	out, err := inspector(t, p.route("everything"), "--transport", "http", "--method", "tools/list")
	if err != nil {
		t.Fatal(err)
	}
	if got := listedNames(t, out); !slices.Equal(got, []string{"echo", "get-sum"}) {
		t.Fatalf("the Inspector listed %v through the proxy, want [echo get-sum]", got)
	}
	out, err = inspector(t, p.route("everything"), "--transport", "http", "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=through the proxy")
	if err != nil || !strings.Contains(out, "through the proxy") {
		t.Fatalf("the Inspector's call of echo: %v\n%s", err, out)
	}

	// Over stdio: the editor entry {"command":"toolwarrant","args":["proxy","--stdio","everything"]}.
	out, err = inspector(t, "-e", "TOOLWARRANT_CATALOG="+filepath.Join(w.dir, "toolwarrant.db"), "-e", "TOOLWARRANT_IDENTITY=proxy@test",
		"--method", "tools/list", "--", w.bin, "proxy", "--stdio", "everything", "--connect", p.base)
	if err != nil {
		t.Fatal(err)
	}
	if got := listedNames(t, out); !slices.Equal(got, []string{"echo", "get-sum"}) {
		t.Fatalf("the Inspector listed %v through proxy --stdio, want [echo get-sum]", got)
	}

	// The TypeScript SDK client: the same listing, the approved call passes, the other is refused.
	c := startTSClient(t, p.route("everything"))
	if got := toolList(c.do("list")); !slices.Equal(got, []string{"echo", "get-sum"}) {
		t.Fatalf("the TypeScript client listed %v through the proxy", got)
	}
	if r := c.do(`call get-sum {"a":2,"b":3}`); r["ok"] != true || !strings.Contains(fmt.Sprint(r["text"]), "5") {
		t.Fatalf("the TypeScript client's call of get-sum: %v", r)
	}
	if r := c.do(`call get-env {}`); r["ok"] == true || !strings.Contains(fmt.Sprint(r["error"]), `tool "get-env" is unapproved`) {
		t.Fatalf("the TypeScript client's call of get-env: %v", r)
	}
	c.do("close")

	// A client that calls what it was never shown: the proxy answers, the server never sees it.
	cs := session(t, p.route("everything"), "")
	if got := names(t, cs); !slices.Equal(got, []string{"echo", "get-sum"}) {
		t.Fatalf("go-sdk client listed %v", got)
	}
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get-env", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `tool "get-env" is unapproved`) {
		t.Fatalf("call of the unapproved get-env: %v", err)
	}
}

// TestStdioBridgeInProcess: proxy --stdio without --connect runs the proxy in its own
// process and serves the one route it bridges.
func TestStdioBridgeInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node clients; runs in make test")
	}
	url, _ := startRugpull(t)
	w := newWorld(t, "weather", url)
	w.approve("add", "echo")
	out, err := inspector(t, "-e", "TOOLWARRANT_CATALOG="+filepath.Join(w.dir, "toolwarrant.db"), "-e", "TOOLWARRANT_IDENTITY=proxy@test",
		"-e", "TOOLWARRANT_CONFIG_DIR="+filepath.Join(w.dir, "config"), "--method", "tools/list", "--", w.bin, "proxy", "--stdio", "weather")
	if err != nil {
		t.Fatal(err)
	}
	if got := listedNames(t, out); !slices.Equal(got, []string{"add", "echo"}) {
		t.Fatalf("proxy --stdio listed %v, want [add echo]", got)
	}
}

// tsClient is the TypeScript SDK client (tsclient.mjs), driven line by line.
type tsClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startTSClient(t *testing.T, url string) *tsClient {
	t.Helper()
	node := testenv.LookPath(t, "node")
	testenv.NodeModule(t, "@modelcontextprotocol/sdk")
	cmd := exec.Command(node, filepath.Join(testenv.RepoRoot(t), "test", "proxy", "tsclient.mjs"), url)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		in.Close()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return &tsClient{t: t, in: in, out: bufio.NewScanner(stdout)}
}

// do sends one command and returns its JSON answer (within 30 s).
func (c *tsClient) do(line string) map[string]any {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		if c.out.Scan() {
			got <- c.out.Text()
		}
		close(got)
	}()
	select {
	case l, ok := <-got:
		if !ok {
			c.t.Fatalf("the TypeScript client exited on %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			c.t.Fatalf("%q: %s", line, l)
		}
		if m["op"] == "error" {
			c.t.Fatalf("%q: %s", line, m["error"])
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatalf("the TypeScript client did not answer %q within 30s", line)
		return nil
	}
}

func toolList(m map[string]any) []string {
	var out []string
	for _, x := range m["tools"].([]any) {
		out = append(out, x.(string))
	}
	slices.Sort(out)
	return out
}

// TestRugPullMidSession: the TypeScript SDK client lists and calls through the proxy; the
// upstream rewords get_forecast in the same session (and says its list changed); the
// client hears of it through the proxy, lists again and no longer sees the tool, and its
// call is refused. A go-sdk client that never lists again (MCP 2026-07-28, stateless) is
// refused too, within one probe.
func TestRugPullMidSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node clients; runs in make test")
	}
	url, base := startRugpull(t)
	w := newWorld(t, "weather", url)
	w.approve("add", "echo", "get_alerts", "get_forecast")
	p := w.startProxy("--refresh", "200ms", "--probe", "300ms", "--record-every", "1s")

	c := startTSClient(t, p.route("weather"))
	if got := toolList(c.do("list")); !slices.Equal(got, []string{"add", "echo", "get_alerts", "get_forecast"}) {
		t.Fatalf("listed %v before the rug pull", got)
	}
	if r := c.do(`call get_forecast {"city":"Oslo"}`); r["ok"] != true {
		t.Fatalf("call before the rug pull: %v", r)
	}
	modern := session(t, p.route("weather"), "2026-07-28")
	if got := names(t, modern); !slices.Contains(got, "get_forecast") || slices.Contains(got, "now") {
		t.Fatalf("2026-07-28 client listed %v", got)
	}
	if _, err := modern.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": "Oslo"}}); err != nil {
		t.Fatalf("2026-07-28 call before the rug pull: %v", err)
	}

	rug(t, base, "/rug")
	if r := c.do("wait-list-changed 10000"); r["seen"] != true {
		t.Fatal("the client was not told, through the proxy, that the tool list changed")
	}
	if got := toolList(c.do("list")); !slices.Equal(got, []string{"add", "echo", "get_alerts"}) {
		t.Fatalf("listed %v after the rug pull, want get_forecast gone", got)
	}
	r := c.do(`call get_forecast {"city":"Oslo"}`)
	if r["ok"] == true || !strings.Contains(fmt.Sprint(r["error"]), `tool "get_forecast" has drifted`) {
		t.Fatalf("call after the rug pull: %v", r)
	}
	// The 2026-07-28 client never listed again: refused all the same.
	_, err := modern.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": "Oslo"}})
	if err == nil || !strings.Contains(err.Error(), "drifted") {
		t.Fatalf("2026-07-28 call after the rug pull: %v", err)
	}
	c.do("close")

	// The catalog hears it from the proxy (off the request path, within a second or so):
	// DRIFT without a crawl.
	drift := regexp.MustCompile(`(?m)^weather\s+get_forecast\s+DRIFT\s`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := w.tw(0, "list")
		if drift.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list 10 s after the rug pull through the proxy:\n%s", out)
		}
	}
}

// TestProbeCatchesARugPullWithoutAListing: a client that listed before the rug pull and
// never lists again is refused within one probe interval.
func TestProbeCatchesARugPullWithoutAListing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in make test")
	}
	url, base := startRugpull(t)
	w := newWorld(t, "weather", url)
	w.approve("get_forecast")
	p := w.startProxy("--refresh", "200ms", "--probe", "300ms")
	cs := session(t, p.route("weather"), "2025-06-18")
	names(t, cs)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": "Oslo"}}); err != nil {
		t.Fatal(err)
	}
	rug(t, base, "/rug")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil && strings.Contains(err.Error(), "drifted") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still pass 5 s after the rug pull with a 300 ms probe (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNothingPassesAfterRevocation: four clients call an approved tool as fast as they
// can; the approval is revoked (rejected); once the proxy holds the new approval set, not
// one call started after that passes.
func TestNothingPassesAfterRevocation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in make test")
	}
	url, _ := startRugpull(t)
	w := newWorld(t, "weather", url)
	w.approve("echo", "add")
	p := w.startProxy("--refresh", "100ms", "--probe", "-1s")
	_, before := p.health(t)

	type result struct {
		start  time.Time
		passed bool
	}
	var mu sync.Mutex
	var results []result
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		cs := session(t, p.route("weather"), "2025-06-18")
		names(t, cs)
		wg.Go(func() {
			for i := 0; i < 20000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
				mu.Lock()
				results = append(results, result{start, err == nil})
				mu.Unlock()
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	w.tw(0, "reject", "weather", "echo", "--hash", w.digests["echo"], "--sign-key", w.alice)
	var acked time.Time
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, now := p.health(t); now["weather"] != before["weather"] {
			acked = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy did not take in the revocation within 5 s")
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	var passedBefore, after, passedAfter int
	for _, r := range results {
		switch {
		case r.start.After(acked):
			after++
			if r.passed {
				passedAfter++
			}
		case r.passed:
			passedBefore++
		}
	}
	t.Logf("calls: %d passed before the revocation was taken in; %d started after it, %d of them passed", passedBefore, after, passedAfter)
	if passedBefore == 0 || after == 0 {
		t.Fatalf("the test did not exercise both sides (%d passed before, %d after)", passedBefore, after)
	}
	if passedAfter != 0 {
		t.Errorf("%d calls started after the proxy took in the revocation passed, want 0", passedAfter)
	}
}

// TestShadowMode: --shadow lists and passes everything, and records what it would have
// stopped; toolwarrant decisions shows it, and the audit log with the records verifies.
func TestShadowMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in make test")
	}
	url, _ := startRugpull(t)
	w := newWorld(t, "weather", url)
	w.approve("add")
	p := w.startProxy("--shadow", "--refresh", "200ms", "--probe", "-1s", "--record-every", "1h")
	cs := session(t, p.route("weather"), "")
	if got := names(t, cs); len(got) != 5 {
		t.Fatalf("shadow mode listed %v, want all five tools", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "now", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("shadow mode refused the unapproved now: %v %v", res, err)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
		t.Fatal(err)
	}
	p.stop(t) // SIGTERM: the window is written although --record-every is an hour

	var doc struct {
		Decisions []warrant.DecisionEntry `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(w.tw(0, "decisions", "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, e := range doc.Decisions {
		if e.Point != "proxy" || !e.Shadow {
			t.Errorf("entry %d: point %q shadow %v", e.Seq, e.Point, e.Shadow)
		}
		for _, r := range e.Records {
			got[r.Tool+" "+r.Method+" "+r.Outcome] += r.Count
		}
	}
	for _, want := range []string{"now tools/call would-deny", "now tools/list would-deny", "add tools/call allowed", "add tools/list allowed", "echo tools/list would-deny"} {
		if got[want] == 0 {
			t.Errorf("no decision record %q (have %v)", want, got)
		}
	}
	table := w.tw(0, "decisions", "--outcome", "would-deny")
	if !regexp.MustCompile(`(?m)^weather\s+now\s+tools/call\s+would-deny\s+unapproved\s+1\s+proxy \(shadow\)`).MatchString(table) {
		t.Errorf("decisions table:\n%s", table)
	}
	w.tw(0, "audit", "verify")
}

// TestDemo: `toolwarrant demo` (README: See it block a rug pull) runs offline and reports
// the rug pull blocked: the reworded tool gone from the agent's listing, its call refused.
func TestDemo(t *testing.T) {
	bin, _ := binaries(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "demo", "--keep", filepath.Join(dir, "kept"))
	cmd.Env = append(os.Environ(), "TOOLWARRANT_CONFIG_DIR="+filepath.Join(dir, "config"))
	code, stdout, stderr := testenv.RunCommand(t, cmd)
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"agent: tools/list → echo, get_alerts, get_forecast\n", "agent: tools/list → echo, get_alerts\n",
		`refused: calling "tools/call": toolwarrant: tool "get_forecast" has drifted`, "CRITICAL description-changed", "\nBlocked: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kept", "toolwarrant.db")); err != nil {
		t.Errorf("--keep: %v", err)
	}
}
