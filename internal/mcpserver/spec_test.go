package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// lockermcp by the MCP specification: every tool has a title and an outputSchema, failures
// are isError with structured content (checked by call for every result in this package),
// locker_deposit reports progress when given a token, and only the advertised capability
// (tools) is answered.

func TestToolsHaveTitleAndOutputSchema(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 6 {
		t.Fatalf("%d tools", len(res.Tools))
	}
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool.OutputSchema)
		if tool.Title == "" || !strings.HasPrefix(string(raw), `{"properties":`) || !strings.Contains(string(raw), `"type":"object"`) {
			t.Errorf("%s: title %q, outputSchema %s", tool.Name, tool.Title, raw)
		}
	}
	raw, _ := json.Marshal(cs.InitializeResult().Capabilities)
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(raw, &caps); err != nil || len(caps) != 1 || caps["tools"] == nil {
		t.Errorf("capabilities = %s, want tools only", raw)
	}
}

func TestOnlyAdvertisedCapabilitiesAnswered(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	calls := map[string]func() error{
		"prompts/list":             func() error { _, err := cs.ListPrompts(t.Context(), nil); return err },
		"resources/list":           func() error { _, err := cs.ListResources(t.Context(), nil); return err },
		"resources/templates/list": func() error { _, err := cs.ListResourceTemplates(t.Context(), nil); return err },
		"resources/read": func() error {
			_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "x://y"})
			return err
		},
		"prompts/get": func() error { _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "x"}); return err },
		"logging/setLevel": func() error {
			// Deprecated, and refused: that is what is tested.
			return cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}) //nolint:staticcheck // SA1019
		},
	}
	for method, call := range calls {
		err := call()
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s: %v, want method not found", method, err)
		}
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
}

func TestDepositProgress(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	c, err := lockerclient.New(lockerclient.Config{BaseURL: lockertest.Serve(t, d.Handler), TicketTransport: config.TicketHeader})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Client: c, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}}).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "locker_deposit", Arguments: json.RawMessage(`{"envelope":` + handoffEnvelope + `,"artifacts":["one","two"]}`)}
	params.SetProgressToken("dep-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("deposit: %v %+v", err, res)
	}
	// Notifications may still be in flight after the result: wait for all five.
	for range 200 {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 5 {
			break
		}
		sleep()
	}
	mu.Lock()
	defer mu.Unlock()
	// create, three appends (envelope and two artifacts), seal.
	if len(got) != 5 {
		t.Fatalf("%d progress notifications, want 5", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "dep-1" || p.Progress != float64(i+1) || p.Total != 5 || p.Message == "" {
			t.Errorf("notification %d = %+v", i, p)
		}
		if strings.Contains(p.Message, "write_key") || strings.Contains(p.Message, "ticket") {
			t.Errorf("a progress message names a secret: %q", p.Message)
		}
	}
	// Without a token, no notification.
	got = nil
	mu.Unlock()
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "locker_deposit", Arguments: params.Arguments}); err != nil {
		t.Fatal(err)
	}
	sleep()
	mu.Lock()
	if len(got) != 0 {
		t.Errorf("%d notifications without a progress token", len(got))
	}
}

func sleep() { <-time.After(10 * time.Millisecond) }
