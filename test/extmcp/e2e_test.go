// Package extmcp_test runs toolwarrant's ExtMcp processor end to end: a real upstream MCP
// server (server-everything from npm, or the rug-pull fixture), the processor serving
// gRPC on loopback, the configuration emit writes, a stand-in gateway that reads that
// configuration and calls the processor as agentgateway does, an MCP client listing and
// calling through it, and verify-gateway's checks against the live result.
package extmcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/gatewayconf"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/test/extmcp/standin"
)

const refresh = 100 * time.Millisecond

// stack is one running processor + stand-in gateway in front of one upstream.
type stack struct {
	t            *testing.T
	server       string
	upstream     string
	evidencePath string
	obsPath      string
	config       []byte
	gatewayURL   string // the client's MCP endpoint through the gateway
	evidence     *enforce.EvidenceDoc
}

// crawl lists the upstream directly (never through the gateway), as toolwarrant crawl does.
func crawl(t *testing.T, upstream string) map[string]string {
	t.Helper()
	l, err := gatewayconf.ListGateway(t.Context(), upstream, nil, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, x := range l {
		out[x.Name] = x.Digest
	}
	return out
}

// startStack crawls the upstream, approves the named tools, writes the evidence file,
// starts the processor, emits the gateway configuration and starts the stand-in gateway.
func startStack(t *testing.T, server, upstream string, approve ...string) *stack {
	t.Helper()
	dir := t.TempDir()
	s := &stack{t: t, server: server, upstream: upstream, evidencePath: filepath.Join(dir, "evidence.json"), obsPath: filepath.Join(dir, "observations.jsonl")}
	crawled := crawl(t, upstream)
	es := enforce.EvidenceServer{Name: server, URL: upstream}
	for name, dg := range crawled {
		et := enforce.EvidenceTool{Name: name, Crawled: dg}
		if slices.Contains(approve, name) {
			et.Approved = dg
		}
		es.Tools = append(es.Tools, et)
	}
	s.evidence = &enforce.EvidenceDoc{Servers: []enforce.EvidenceServer{es}}
	s.writeEvidence()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := enforce.New(enforce.Config{Servers: []string{server}, Source: &enforce.EvidenceFile{Path: s.evidencePath},
		Recorder: &enforce.JSONLRecorder{Path: s.obsPath}, Refresh: refresh, Staleness: 20 * refresh, RecordInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- extmcp.Serve(ctx, lis, p, extmcp.ServeOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	s.emit(lis.Addr().String())
	gw := httptest.NewServer(standin.New(t, s.config))
	t.Cleanup(gw.Close)
	s.gatewayURL = gw.URL + gatewayconf.PathPrefix(server) + "mcp"
	return s
}

func (s *stack) writeEvidence() {
	s.t.Helper()
	tmp := s.evidencePath + ".tmp"
	if err := os.WriteFile(tmp, s.evidence.Marshal(), 0o600); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, s.evidencePath); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stack) emit(processor string) {
	s.t.Helper()
	es, _ := s.evidence.Server(s.server)
	out, err := gatewayconf.Emit(gatewayconf.Config{Processor: processor, Routes: []gatewayconf.Route{{Server: s.server, URL: s.upstream, Approved: es.Approved()}}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.config = out
}

func (s *stack) approved() map[string]string {
	es, _ := s.evidence.Server(s.server)
	out := map[string]string{}
	for _, t := range es.Tools {
		if t.Approved != "" {
			out[t.Name] = t.Approved
		}
	}
	return out
}

// verify is verify-gateway: list through the live gateway, compare with the approved set
// and the configuration.
func (s *stack) verify() []gatewayconf.Finding {
	s.t.Helper()
	listed, err := gatewayconf.ListGateway(s.t.Context(), s.gatewayURL, nil, 30*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	g, err := gatewayconf.Parse(s.config)
	if err != nil {
		s.t.Fatal(err)
	}
	return gatewayconf.Verify(gatewayconf.Expectation{Server: s.server, Approved: s.approved(), Listed: listed, Config: g})
}

// client connects an MCP client to the gateway.
func (s *stack) client() *mcp.ClientSession {
	s.t.Helper()
	return testenv.MCPSession(s.t, s.gatewayURL, "", false)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string { return testenv.ToolNames(t, cs) }

func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) error {
	t.Helper()
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	return err
}

func kinds(fs []gatewayconf.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+":"+f.Tool)
	}
	return out
}

// TestEverythingThroughGateway: server-everything behind the stand-in gateway with echo
// and get-sum approved: the client sees exactly those two, can call them, is denied
// every other tool by the processor, and verify-gateway finds nothing; after get-sum's
// approval is withdrawn (and before emit is re-run), verify-gateway reports it.
func TestEverythingThroughGateway(t *testing.T) {
	upstream := startEverything(t)
	s := startStack(t, "everything", upstream, "echo", "get-sum")
	cs := s.client()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"echo", "get-sum"}) {
		t.Fatalf("listed through the gateway: %v", got)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through the gateway"}})
	if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "through the gateway") {
		t.Fatalf("call echo: %v %+v", err, res)
	}
	if err := callErr(t, cs, "get-sum", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatalf("call get-sum: %v", err)
	}
	// get-env is not approved: the gateway's allow rules would also refuse it, but the
	// processor (request phase, first) denies it with its state.
	err = callErr(t, cs, "get-env", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), `tool "get-env" is unapproved`) || strings.Contains(err.Error(), "echo") {
		t.Fatalf("call get-env: %v", err)
	}
	if f := s.verify(); len(f) != 0 {
		t.Fatalf("verify-gateway findings on a correct deployment: %+v", f)
	}

	// Withdraw get-sum's approval (a rejection) without re-running emit.
	for i, tl := range s.evidence.Servers[0].Tools {
		if tl.Name == "get-sum" {
			s.evidence.Servers[0].Tools[i].Approved = ""
		}
	}
	s.writeEvidence()
	waitUntil(t, 20*refresh, func() bool { return !slices.Contains(toolNames(t, cs), "get-sum") })
	if err := callErr(t, cs, "get-sum", map[string]any{"a": 1, "b": 2}); err == nil || !strings.Contains(err.Error(), "unapproved") {
		t.Errorf("call get-sum after rejection: %v", err)
	}
	if got := kinds(s.verify()); !slices.Equal(got, []string{"allow_rule_unapproved:get-sum"}) {
		t.Errorf("verify-gateway after the rejection: %v, want the stale allow rule reported", got)
	}
	waitObservations(t, s.obsPath, "get-sum", "unapproved")
}

// TestRugPullThroughGateway: the fixture rewords get_forecast after its first listing
// (the crawl). Through the gateway the reworded tool disappears and its calls are denied;
// a re-crawl still disagrees with the approval; only a re-approval of the new digest
// brings it back, within one refresh interval.
func TestRugPullThroughGateway(t *testing.T) {
	upstream := startRugpull(t)
	s := startStack(t, "weather", upstream, "get_forecast", "add")
	cs := s.client()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"add"}) {
		t.Fatalf("after the rug pull the gateway lists %v, want only add", got)
	}
	err := callErr(t, cs, "get_forecast", map[string]any{"city": "Oslo"})
	if err == nil || !strings.Contains(err.Error(), `tool "get_forecast" has drifted`) {
		t.Fatalf("call of the reworded tool: %v", err)
	}
	if got := kinds(s.verify()); !slices.Equal(got, []string{"approved_missing:get_forecast"}) {
		t.Errorf("verify-gateway during the drift: %v", got)
	}
	waitObservations(t, s.obsPath, "get_forecast", "drift")

	// The next crawl sees the reworded definition; the approval still names the old one.
	recrawl := crawl(t, upstream)
	var oldDigest string
	for i, tl := range s.evidence.Servers[0].Tools {
		if tl.Name == "get_forecast" {
			oldDigest = tl.Approved
			s.evidence.Servers[0].Tools[i].Crawled = recrawl["get_forecast"]
		}
	}
	if recrawl["get_forecast"] == oldDigest {
		t.Fatal("the fixture did not reword get_forecast")
	}
	s.writeEvidence()
	time.Sleep(3 * refresh)
	if err := callErr(t, cs, "get_forecast", map[string]any{"city": "Oslo"}); err == nil {
		t.Fatal("call passed while the approval names the old definition")
	}

	// A person re-approves the reworded definition (its digest, exactly).
	for i, tl := range s.evidence.Servers[0].Tools {
		if tl.Name == "get_forecast" {
			s.evidence.Servers[0].Tools[i].Approved = recrawl["get_forecast"]
		}
	}
	s.writeEvidence()
	start := time.Now()
	waitUntil(t, 20*refresh, func() bool { return slices.Contains(toolNames(t, cs), "get_forecast") })
	t.Logf("re-approval in force through the gateway after %s (refresh %s)", time.Since(start).Round(time.Millisecond), refresh)
	if err := callErr(t, cs, "get_forecast", map[string]any{"city": "Oslo"}); err != nil {
		t.Fatalf("call after re-approval: %v", err)
	}
	if f := s.verify(); len(f) != 0 {
		t.Errorf("verify-gateway after re-approval: %+v", f)
	}
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(refresh / 5)
	}
}

// waitObservations waits until the processor has recorded an observation of tool.
func waitObservations(t *testing.T, path, tool, kind string) {
	t.Helper()
	waitUntil(t, 5*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			var o struct{ Tool, Kind string }
			if json.Unmarshal([]byte(line), &o) == nil && o.Tool == tool && o.Kind == kind {
				return true
			}
		}
		return false
	})
}

// startEverything runs server-everything over Streamable HTTP on a free loopback port and
// returns its MCP URL; the process is killed by PID when the test ends.
func startEverything(t *testing.T) string {
	t.Helper()
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/server-everything")
	port := testenv.FreePort(t)
	cmd := exec.Command(node, filepath.Join(dir, "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	waitListening(t, cmd, strconv.Itoa(port))
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

var (
	rugOnce sync.Once
	rugPath string
	rugErr  error
)

// startRugpull builds and runs test/fixtures/rugpull over Streamable HTTP on loopback.
func startRugpull(t *testing.T) string {
	t.Helper()
	rugOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rugpull-")
		if err != nil {
			rugErr = err
			return
		}
		rugPath = filepath.Join(dir, "rugpull")
		cmd := exec.Command(goTool(), "build", "-o", rugPath, "./test/fixtures/rugpull")
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			rugErr = fmt.Errorf("go build rugpull: %v\n%s", err, out)
		}
	})
	if rugErr != nil {
		t.Fatal(rugErr)
	}
	port := strconv.Itoa(testenv.FreePort(t))
	cmd := exec.Command(rugPath, "-http", "127.0.0.1:"+port, "-lifetime", "2m")
	waitListening(t, cmd, port)
	return "http://127.0.0.1:" + port + "/mcp"
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// waitListening starts cmd and waits until its stderr mentions port; cmd is killed by PID
// at cleanup.
func waitListening(t *testing.T, cmd *exec.Cmd, port string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), port) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report listening on port %s within 30s", cmd.Path, port)
	}
}

var _ = errors.New
