package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

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

// call invokes a tool with arguments given as JSON text (order preserved). Every result,
// success or failure, must carry structured content that validates against the tool's
// outputSchema and whose indented JSON is exactly the text content.
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
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &r.m); err != nil || r.m == nil {
		t.Fatalf("%s: structured content: %v (%s)", name, err, raw)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(r.text), &fromText); err != nil {
		t.Fatalf("%s: text content is not the JSON result: %v", name, err)
	}
	if !reflect.DeepEqual(fromText, r.m) {
		t.Errorf("%s: text and structured content differ:\n%s\n%s", name, r.text, raw)
	}
	if _, failed := r.m["error"]; failed != r.isError {
		t.Errorf("%s: isError=%v but the result %s an error member: %s", name, r.isError, map[bool]string{true: "has", false: "has no"}[failed], r.text)
	}
	if err := outputSchemaOf(t, cs, name).Validate(r.m); err != nil {
		t.Errorf("%s: result does not validate against its outputSchema: %v\n%s", name, err, r.text)
	}
	return r
}

var (
	schemasMu sync.Mutex
	schemas   = map[*mcp.ClientSession]map[string]*jsonschema.Schema{}
)

// outputSchemaOf compiles the outputSchema lockermcp lists for tool name.
func outputSchemaOf(t *testing.T, cs *mcp.ClientSession, name string) *jsonschema.Schema {
	t.Helper()
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if m, ok := schemas[cs]; ok {
		return m[name]
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*jsonschema.Schema{}
	for _, tool := range res.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if err != nil || tool.OutputSchema == nil {
			t.Fatalf("tool %s has no outputSchema", tool.Name)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + tool.Name
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if m[tool.Name], err = c.Compile(url); err != nil {
			t.Fatalf("tool %s outputSchema: %v", tool.Name, err)
		}
	}
	schemas[cs] = m
	return m[name]
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
