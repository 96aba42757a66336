package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/benchratio"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/enforce/enforcetest"
)

// BenchmarkProxyList100 is one tools/list of 100 tools (server-everything's real tool
// objects, nine in ten approved) through the proxy over loopback HTTP, against the same
// request sent straight to the upstream, in alternating rounds of the same run
// (x_direct = through the proxy / direct):
//
//   - mcp-server: the upstream is a real MCP server, the go-sdk's (stateless Streamable
//     HTTP, JSON answers), holding the 100 tools: what a client pays for the proxy in front
//     of a server that does the work of answering;
//
//   - floor: the upstream writes the same answer from memory, so the ratio is what the
//     proxy adds to the cheapest upstream there is — a second loopback HTTP hop, the strict
//     envelope, the decision (warm: the listing memo) and the splice.
//
//     go test -run '^$' -bench 'ProxyList100/' ./internal/mcpproxy/
func BenchmarkProxyList100(b *testing.B) {
	b.Run("mcp-server", func(b *testing.B) {
		src := enforcetest.NewSource()
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		for _, raw := range enforcetest.Tools(b, enforcetest.NewSource(), "s", 100) {
			var tool mcp.Tool
			if err := json.Unmarshal(raw, &tool); err != nil {
				b.Fatal(err)
			}
			s.AddTool(&tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
		defer up.Close()
		// The approvals are of the tools as this server serves them.
		benchProxy(b, up.URL+"/mcp", src, func(result []byte) {
			var doc struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(result, &doc); err != nil {
				b.Fatal(err)
			}
			for i, raw := range doc.Tools {
				dg := enforcetest.LiveDigest(b, raw)
				ev := enforce.ToolEvidence{Crawled: dg}
				if i%10 != 9 {
					ev.Approved = dg
				}
				src.Set("s", enforcetest.ToolName(b, raw), ev)
			}
		})
	})
	b.Run("floor", func(b *testing.B) {
		src := enforcetest.NewSource()
		answer := []byte(`{"jsonrpc":"2.0","id":1,"result":` + string(enforcetest.Listing(b, src, "s", 100)) + `}`)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
		}))
		defer up.Close()
		benchProxy(b, up.URL+"/mcp", src, nil)
	})
}

// benchProxy measures tools/list through a proxy in front of upstream against upstream
// itself. approve, when set, is given the upstream's own listing result first, to set
// the approvals from it.
func benchProxy(b *testing.B, upstream string, src *enforcetest.Source, approve func(result []byte)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	list := func(url string) func() []byte {
		return func() []byte {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(listReq)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(body) == 0 {
				b.Fatalf("%s: %s %s", url, resp.Status, body)
			}
			return body
		}
	}
	if approve != nil {
		var doc struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(list(upstream)(), &doc); err != nil {
			b.Fatal(err)
		}
		approve(doc.Result)
	}
	p, err := enforce.New(enforce.Config{Servers: []string{"s"}, Source: src, Point: enforce.PointProxy, PassMethods: true,
		Decisions: enforce.DecisionRecorderFunc(func(context.Context, enforce.DecisionBatch) error { return nil })})
	if err != nil {
		b.Fatal(err)
	}
	p.Start(b.Context())
	defer p.Close(context.Background())
	px, err := New(Config{Processor: p, Upstreams: []Upstream{{Name: "s", URL: upstream, AllowPrivate: true}}, Probe: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(px.Handler())
	defer srv.Close()
	if got := list(srv.URL + "/s/mcp")(); bytes.Count(got, []byte(`"name":`)) >= bytes.Count(list(upstream)(), []byte(`"name":`)) {
		b.Fatal("the proxy did not filter the listing")
	}
	direct, proxied := list(upstream), list(srv.URL+"/s/mcp")
	b.ReportAllocs()
	for b.Loop() {
		proxied()
	}
	benchratio.Report(b, benchratio.Compare(0, 0, func() { direct() }, func() { proxied() }), "x_direct", false, 0)
}
