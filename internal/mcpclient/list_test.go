package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// The test binary doubles as a scripted stdio MCP server (see fakeServer) when this
// variable is set, so that the exact bytes a server sends are under the test's control.
const fakeServerEnv = "MCPCLIENT_TEST_FAKE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		fakeServer(os.Getenv(fakeServerEnv))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rawTools are sent verbatim by the fake server: odd spacing, escapes, numbers that a
// decode/encode round trip would change, and fields the SDK's Tool type does not know.
var rawTools = []string{
	`{ "name" : "odd",  "description":"caf\u00e9 \u200b", "inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.0E2,"default":10000000000000000001}}},"x-vendor":[1.0, 2e0] }`,
	`{"inputSchema":{"type":"object"},"name":"second","_meta":{"k":"v"}}`,
	`{"name":"third","inputSchema":{"type":"object"}}`,
}

// fakeServer answers initialize and tools/list (two pages) on stdin/stdout. mode is a
// comma-separated list of behaviours: "hang" never answers; "exit" prints to stderr and
// exits at once; "pad=N" pages forever, N bytes a page; the misbehaviours of misbehaving_test.go ("ignore-unknown",
// "exit-on-unknown", "banner", "flood", "slow=MS") and "everything" (prompts, resources,
// templates and instructions; the instructions echo the capabilities the client declared).
func fakeServer(mode string) {
	flags := map[string]string{}
	for _, f := range strings.Split(mode, ",") {
		k, v, _ := strings.Cut(f, "=")
		flags[k] = v
	}
	if _, ok := flags["hang"]; ok {
		time.Sleep(60 * time.Second)
		return
	}
	if _, ok := flags["exit"]; ok {
		fmt.Fprintln(os.Stderr, "fatal: FAKE_API_KEY is not set")
		os.Exit(3)
	}
	if _, ok := flags["node-crash"]; ok { // what Node prints for an uncaught error
		fmt.Fprint(os.Stderr, "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n\x1b[31mError: Cannot find module 'zod'\x1b[39m\n"+
			"Require stack:\n- /root/.npm/_npx/abc/node_modules/srv/dist/index.js\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n"+
			"    at Module._load (node:internal/modules/cjs/loader:1051:27) {\n  code: 'MODULE_NOT_FOUND'\n}\n\nNode.js v20.20.2\n")
		os.Exit(1)
	}
	_, ignoreUnknown := flags["ignore-unknown"]
	_, exitOnUnknown := flags["exit-on-unknown"]
	_, banner := flags["banner"]
	_, everything := flags["everything"]
	slow, _ := strconv.Atoi(flags["slow"])
	if banner {
		fmt.Println("Fake MCP server v1.0 starting...")
		fmt.Println("")
		fmt.Println("\x1b[32mready\x1b[0m on stdio")
	}
	if _, ok := flags["flood"]; ok {
		for i := range 5000 {
			fmt.Printf("debug line %d\n", i)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor       string          `json:"cursor"`
				Capabilities json.RawMessage `json:"capabilities"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		if slow > 0 {
			time.Sleep(time.Duration(slow) * time.Millisecond)
		}
		var result string
		switch req.Method {
		case "initialize":
			caps := `{"tools":{}}`
			instructions := ""
			if everything {
				caps = `{"tools":{},"prompts":{},"resources":{}}`
				b, _ := json.Marshal(string(req.Params.Capabilities))
				instructions = `,"instructions":` + string(b)
			}
			result = `{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"serverInfo":{"name":"fake","version":"9.9"}` + instructions + `}`
			if banner {
				fmt.Println("initialized; serving tools")
			}
		case "tools/list":
			switch {
			case flags["pad"] != "":
				// "pad=N": endless pages, each with a tool whose description is N bytes.
				n, _ := strconv.Atoi(flags["pad"])
				result = `{"tools":[{"name":"t","inputSchema":{"type":"object"},"description":"` + strings.Repeat("a", n) + `"}],"nextCursor":"p` + req.Params.Cursor + `x"}`
			case req.Params.Cursor == "":
				result = `{"tools":[` + rawTools[0] + `,` + rawTools[1] + `],"nextCursor":"p2"}`
			default:
				result = `{"tools":[` + rawTools[2] + `]}`
			}
		case "prompts/list":
			result = `{"prompts":[{"name":"greet","description":"Greet someone.","arguments":[{"name":"who","required":true}]}]}`
		case "resources/list":
			result = `{"resources":[{"uri":"fake://readme","name":"readme","mimeType":"text/plain","size":12}]}`
		case "resources/templates/list":
			result = `{"resourceTemplates":[{"uriTemplate":"fake://doc/{id}","name":"doc"}]}`
		default:
			if exitOnUnknown {
				fmt.Fprintf(os.Stderr, "unknown method %s; exiting\n", req.Method)
				os.Exit(1)
			}
			if ignoreUnknown {
				continue
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", req.ID)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
}

func fakeStdio(t *testing.T, mode string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: "fake-" + mode, Transport: TransportStdio, Command: exe, Env: map[string]string{fakeServerEnv: mode}}
}

func TestListToolsKeepsRawBytes(t *testing.T) {
	l, err := ListTools(t.Context(), fakeStdio(t, "ok"), Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pages != 2 || len(l.Tools) != 3 {
		t.Fatalf("got %d pages, %d tools; want 2 and 3", l.Pages, len(l.Tools))
	}
	for i, tool := range l.Tools {
		if string(tool.Raw) != rawTools[i] {
			t.Errorf("tool %d raw = %s\nwant exactly %s", i, tool.Raw, rawTools[i])
		}
	}
	if l.Tools[0].Name != "odd" || l.ServerName != "fake" || l.ServerVersion != "9.9" || l.ProtocolVersion != "2025-06-18" {
		t.Errorf("listing metadata = %+v", l)
	}
	waitGone(t, l.PID)
}

func TestListToolsErrors(t *testing.T) {
	start := time.Now()
	l, err := ListTools(t.Context(), fakeStdio(t, "hang"), Options{Timeout: 500 * time.Millisecond})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "within 500ms") || !strings.Contains(err.Error(), `server "fake-hang"`) {
		t.Errorf("hanging server: %v", err)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("hanging server took %v to give up", el)
	}
	if l != nil {
		waitGone(t, l.PID)
	}

	_, err = ListTools(t.Context(), fakeStdio(t, "exit"), Options{Timeout: 5 * time.Second})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "FAKE_API_KEY is not set") {
		t.Errorf("exiting server: %v, want its stderr in the error", err)
	}

	// A Node crash reads as its Error and where, not as "Node.js v20.20.2" (issue 34, item 4).
	_, err = ListTools(t.Context(), fakeStdio(t, "node-crash"), Options{Timeout: 5 * time.Second})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "(server stderr: Error: Cannot find module 'zod' | Require stack: | - /root/.npm/_npx/abc/node_modules/srv/dist/index.js)") || strings.Contains(err.Error(), "Node.js v20") || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("crashing Node server: %v, want its Error without the version line or escapes", err)
	}

	_, err = ListTools(t.Context(), Server{Name: "nope", Transport: TransportStdio, Command: "agentgate-no-such-command"}, Options{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cannot start agentgate-no-such-command") {
		t.Errorf("missing command: %v", err)
	}
	// The server is named once, and the reason is the operating system's, not the session's.
	want := `server "nope": server unavailable: cannot start agentgate-no-such-command: executable file not found in $PATH`
	if err == nil || err.Error() != want {
		t.Errorf("missing command: %v, want %s", err, want)
	}
	_, err = ListTools(t.Context(), Server{Name: "nope", Transport: TransportStdio, Command: "/nonexistent/agentgate-cmd"}, Options{})
	if want := `server "nope": server unavailable: cannot start /nonexistent/agentgate-cmd: no such file or directory`; err == nil || err.Error() != want {
		t.Errorf("missing path: %v, want %s", err, want)
	}

	// A closed loopback port: refused at once, and not retried as SSE.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = ListTools(t.Context(), Server{Name: "down", Transport: TransportHTTP, URL: "http://" + addr + "/mcp"}, Options{Timeout: 5 * time.Second})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `server "down"`) {
		t.Errorf("closed port: %v", err)
	}
}

// goSDKServer is an in-process MCP server with n tools, paginated by pageSize.
func goSDKServer(n, pageSize int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	for i := range n {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%02d", i), Description: "tool", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	return s
}

func TestListToolsStreamableHTTPPaginationAndHeaders(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer(7, 3) }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.Header.Get("Authorization")+"|"+r.Header.Get("Mcp-Protocol-Version"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	l, err := ListTools(t.Context(), Server{Name: "paged", Transport: TransportHTTP, URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}},
		Options{Timeout: 10 * time.Second, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pages != 3 || len(l.Tools) != 7 || l.Tools[6].Name != "t06" || l.Transport != TransportHTTP {
		t.Fatalf("got %d pages, %d tools via %s", l.Pages, len(l.Tools), l.Transport)
	}
	mu.Lock()
	defer mu.Unlock()
	// The initialize request itself carries no version; every tools/list page after it must
	// (the SDK's HTTP transport cannot see the version through our tapped connection, so
	// headerTransport adds it).
	versioned := 0
	for i, a := range auth {
		if !strings.Contains(a, "Bearer t0k|") {
			t.Errorf("request %d lacks the configured Authorization header: %q", i, a)
		}
		if !strings.HasSuffix(a, "|") {
			versioned++
		}
	}
	if versioned < 3 || strings.HasSuffix(auth[len(auth)-1], "|") {
		t.Errorf("requests (method auth|version): %q; want every page after initialize versioned", auth)
	}
}

func TestListToolsBoundsPages(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer(5, 1) }, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, err := ListTools(t.Context(), Server{Name: "many", URL: srv.URL}, Options{MaxPages: 3})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "more than 3 pages") {
		t.Errorf("ListTools with MaxPages 3 = %v", err)
	}
}

// An HTTP client timeout that fires before the listing's own deadline is the server not
// answering in time, not an invalid answer: the SDK wraps it in a JSON-RPC "rejected by
// transport" error, which must still classify as unavailable.
func TestListToolsHTTPClientTimeoutIsUnavailable(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer(1, 1) }, nil)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/list"`)) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(release)
	_, err := ListTools(t.Context(), Server{Name: "hung", Transport: TransportHTTP, URL: srv.URL},
		Options{Timeout: 20 * time.Second, HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}})
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrProtocol) {
		t.Fatalf("ListTools against a hung tools/list = %v, want ErrUnavailable only", err)
	}
}

func TestParseToolsPage(t *testing.T) {
	tests := []struct {
		in       string
		tools    int
		next     string
		errMatch string
	}{
		{in: `{"tools":[{"name":"a"}],"nextCursor":"c"}`, tools: 1, next: "c"},
		{in: `{"tools":[],"nextCursor":null}`},
		{in: `{"Tools":[{"name":"a"}]}`}, // keys are exact
		{in: `{"tools":{}}`, errMatch: "not an array"},
		{in: `{"tools":[1]}`, errMatch: "tools[0] is not a JSON object"},
		{in: `{"tools":[],"nextCursor":5}`, errMatch: "nextCursor"},
		{in: `[]`, errMatch: "not a JSON object"},
	}
	for _, tc := range tests {
		tools, next, err := parseToolsPage(json.RawMessage(tc.in))
		if tc.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
				t.Errorf("parseToolsPage(%s) error = %v, want %q", tc.in, err, tc.errMatch)
			}
			continue
		}
		if err != nil || len(tools) != tc.tools || next != tc.next {
			t.Errorf("parseToolsPage(%s) = %d tools, %q, %v", tc.in, len(tools), next, err)
		}
	}
}

// --- real servers, installed by `npm ci --prefix test` ---

func nodeServer(t *testing.T, name, pkg string, args ...string) Server {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, pkg)
	return Server{Name: name, Transport: TransportStdio, Command: node, Args: append([]string{filepath.Join(dir, "dist", "index.js")}, args...)}
}

func TestRealServersOverStdio(t *testing.T) {
	tests := []struct {
		server   Server
		mustHave []string
	}{
		{nodeServer(t, "everything", "@modelcontextprotocol/server-everything", "stdio"), []string{"echo", "get-sum"}},
		{nodeServer(t, "filesystem", "@modelcontextprotocol/server-filesystem", t.TempDir()), []string{"read_text_file", "list_directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.server.Name, func(t *testing.T) {
			t.Parallel()
			l, err := ListTools(t.Context(), tc.server, Options{Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tool := range l.Tools {
				names[tool.Name] = true
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(tool.Raw, &obj); err != nil || obj["inputSchema"] == nil {
					t.Errorf("tool %q raw is not a tool object: %s", tool.Name, tool.Raw)
				}
			}
			for _, n := range tc.mustHave {
				if !names[n] {
					t.Errorf("%s lists no %q (got %d tools)", tc.server.Name, n, len(l.Tools))
				}
			}
			waitGone(t, l.PID)
		})
	}
}

// startEverythingHTTP runs server-everything in the given mode ("streamableHttp" or "sse")
// on a free loopback port and returns its base URL. The process is killed by PID at cleanup.
func startEverythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/server-everything")
	port := testenv.FreePort(t)
	cmd := exec.Command(node, filepath.Join(dir, "dist", "index.js"), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		waitGone(t, pid)
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), strconv.Itoa(port)) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("server-everything %s did not report listening on port %d within 20s", mode, port)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

func TestRealServerOverStreamableHTTP(t *testing.T) {
	base := startEverythingHTTP(t, "streamableHttp")
	l, err := ListTools(t.Context(), Server{Name: "everything-http", Transport: TransportHTTP, URL: base + "/mcp"}, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Transport != TransportHTTP || len(l.Tools) < 5 {
		t.Errorf("got %d tools via %s", len(l.Tools), l.Transport)
	}
}

func TestRealServerSSEFallback(t *testing.T) {
	base := startEverythingHTTP(t, "sse")
	l, err := ListTools(t.Context(), Server{Name: "everything-sse", Transport: TransportHTTP, URL: base + "/sse"}, Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.Transport != TransportSSE || len(l.Tools) < 5 {
		t.Errorf("got %d tools via %s, want the SSE fallback", len(l.Tools), l.Transport)
	}
}

// --- the rug-pull fixture (test/fixtures/rugpull), for process-group cleanup ---

var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

// rugpullBinary builds test/fixtures/rugpull once per test run.
func rugpullBinary(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rugpull-fixture-")
		if err != nil {
			fixtureErr = err
			return
		}
		fixturePath = filepath.Join(dir, "rugpull")
		cmd := exec.Command(goTool(), "build", "-o", fixturePath, "./test/fixtures/rugpull")
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixtureErr = fmt.Errorf("go build rugpull: %v\n%s", err, out)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixturePath
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

func TestNoOrphans(t *testing.T) {
	bin := rugpullBinary(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	l, err := ListTools(t.Context(), Server{Name: "spawner", Transport: TransportStdio, Command: bin, Args: []string{"-spawn", "-pidfile", pidfile, "-page-size", "2"}}, Options{Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) != 5 || l.Pages != 3 {
		t.Errorf("got %d tools in %d pages, want 5 in 3", len(l.Tools), l.Pages)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) != 2 {
		t.Fatalf("pidfile = %q, want the server's and its child's PID", data)
	}
	if pids[0] != strconv.Itoa(l.PID) {
		t.Errorf("Listing.PID = %d, pidfile says %s", l.PID, pids[0])
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		waitGone(t, pid)
	}
}

// waitGone fails unless process pid has exited (or is a zombie awaiting its reaper) within
// five seconds.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatal("no PID recorded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !alive(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running after the listing returned", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
