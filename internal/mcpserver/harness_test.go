package mcpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// session connects a go-sdk client to lockermcp over an in-memory transport, with lockermcp
// talking to h over loopback HTTP.
func session(t *testing.T, h http.Handler, transport config.TicketTransport) *mcp.ClientSession {
	t.Helper()
	return sessionURL(t, lockertest.Serve(t, h), transport)
}

func sessionURL(t *testing.T, url string, transport config.TicketTransport) *mcp.ClientSession {
	t.Helper()
	return sessionLogged(t, url, transport, nil)
}

func sessionLogged(t *testing.T, url string, transport config.TicketTransport, log *slog.Logger) *mcp.ClientSession {
	t.Helper()
	c, err := lockerclient.New(lockerclient.Config{BaseURL: url, TicketTransport: transport, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Client: c, Version: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// result is one tool call's outcome.
type result struct {
	m       map[string]any // the structured result
	text    string         // the text content, as a model sees it
	isError bool
}

// call invokes a tool with arguments given as JSON text (order preserved).
func call(t *testing.T, cs *mcp.ClientSession, name, arguments string) result {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(arguments)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r result
	r.isError = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	if !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r.m); err != nil {
			t.Fatalf("%s: structured content: %v", name, err)
		}
		var fromText map[string]any
		if err := json.Unmarshal([]byte(r.text), &fromText); err != nil {
			t.Fatalf("%s: text content is not the JSON result: %v", name, err)
		}
	}
	return r
}

// get walks a dotted path (numbers index lists) in a decoded result.
func get(t *testing.T, m any, path string) any {
	t.Helper()
	cur := m
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				t.Fatalf("no %q in %s", p, path)
			}
			cur = v
		case []any:
			var i int
			if _, err := fmtSscan(p, &i); err != nil || i >= len(c) {
				t.Fatalf("bad index %q in %s", p, path)
			}
			cur = c[i]
		default:
			t.Fatalf("%s: %q is not a container", path, p)
		}
	}
	return cur
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fmtSscan(s string, i *int) (int, error) { return fmt.Sscan(s, i) }
