package gatewayconf

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and infra/agentgateway/config.example.yaml")

// exampleConfig is the input behind testdata/emit.golden and the published
// infra/agentgateway/config.example.yaml: two upstreams, one of them with no approved
// tool, and a tool name that needs CEL escaping.
func exampleConfig() Config {
	return Config{Port: 3000, Processor: "127.0.0.1:9001", Timeout: 2 * time.Second, Routes: []Route{
		{Server: "weather", URL: "https://weather.example.com/mcp"},
		{Server: "everything", URL: "http://127.0.0.1:3001/mcp", Approved: []string{"get-sum", "echo", `say "hi"`, "echo"}},
	}}
}

// TestEmitGolden: testdata/emit.golden guards emit's exact bytes (route per server,
// failClosed processor, methods map, timeout, one allow rule per approved tool, a
// match-nothing rule for a server with none); the example in infra/ is the same file.
func TestEmitGolden(t *testing.T) {
	got, err := Emit(exampleConfig())
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(testenv.RepoRoot(t), "infra", "agentgateway", "config.example.yaml")
	for _, path := range []string{filepath.Join("testdata", "emit.golden"), example} {
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from emit's output (run go test ./internal/gatewayconf -update after checking):\n%s", path, got)
		}
	}
}

// TestEmitDeterministic: the order of routes and approved tools in the input does not
// change the output.
func TestEmitDeterministic(t *testing.T) {
	want, _ := Emit(exampleConfig())
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		c := exampleConfig()
		r.Shuffle(len(c.Routes), func(i, j int) { c.Routes[i], c.Routes[j] = c.Routes[j], c.Routes[i] })
		for _, rt := range c.Routes {
			r.Shuffle(len(rt.Approved), func(i, j int) { rt.Approved[i], rt.Approved[j] = rt.Approved[j], rt.Approved[i] })
		}
		if got, _ := Emit(c); !bytes.Equal(got, want) {
			t.Fatal("emit output depends on input order")
		}
	}
}

func TestEmitRefuses(t *testing.T) {
	tests := map[string]Config{
		"bad server name": {Routes: []Route{{Server: "../x", URL: "http://a/mcp"}}},
		"duplicate":       {Routes: []Route{{Server: "a", URL: "http://a/mcp"}, {Server: "a", URL: "http://b/mcp"}}},
		"bad URL":         {Routes: []Route{{Server: "a", URL: "ftp://a"}}},
		"bad processor":   {Processor: "localhost", Routes: []Route{{Server: "a", URL: "http://a/mcp"}}},
		"bad port":        {Port: 70000},
	}
	for name, c := range tests {
		if _, err := Emit(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestEmitParsesBack: what emit writes, Parse reads, and Verify finds nothing wrong with it.
func TestEmitParsesBack(t *testing.T) {
	out, _ := Emit(exampleConfig())
	g, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := g.Route("everything")
	if !ok || len(r.Processors) != 1 || r.Processors[0].FailureMode != "failClosed" || r.Processors[0].RequestTimeout != "2s" ||
		r.Processors[0].Host != "127.0.0.1:9001" || len(r.Rules) != 3 || r.Paths[0] != "/everything/" || r.Targets[0].Host != "http://127.0.0.1:3001/mcp" {
		t.Fatalf("route = %+v", r)
	}
	tool, ok := ParseAllowRule(r.Rules[2].Expr)
	if !ok || tool != `say "hi"` {
		t.Errorf("rule %q parsed as %q", r.Rules[2].Expr, tool)
	}
	approved := map[string]string{"echo": "sha256:1", "get-sum": "sha256:2", `say "hi"`: "sha256:3"}
	if f := Verify(Expectation{Server: "everything", Approved: approved, Config: g}); len(f) != 0 {
		t.Errorf("findings on emit's own output: %+v", f)
	}
	if f := Verify(Expectation{Server: "weather", Approved: nil, Config: g}); len(f) != 0 {
		t.Errorf("findings for the server with no approvals: %+v", f)
	}
	if !strings.Contains(string(out), "- \"false\"") && !strings.Contains(string(out), "- 'false'") {
		t.Errorf("no match-nothing rule for weather:\n%s", out)
	}
}
