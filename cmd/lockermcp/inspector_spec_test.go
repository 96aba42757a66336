package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// TestInspectorBySpec drives lockermcp with the MCP Inspector CLI (pinned in test/) and
// checks it by the MCP specification: a title and an outputSchema on all six tools,
// isError true with structured content on a missing pad and on an expected-head mismatch,
// and notifications/progress during a deposit given a progress token (seen on the wire
// through a tee between the Inspector and lockermcp).
func TestInspectorBySpec(t *testing.T) {
	mcpBin, url, env, base := inspectorSetup(t)
	jsonOut := []string{"--format", "json", "-q"}

	out, errs, err := runBounded(t, env, append(append(base, "--method", "tools/list"), jsonOut...)...)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s\n%s", err, out, errs)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				Title        string          `json:"title"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(firstLine(out)), &list); err != nil || len(list.Result.Tools) != 6 {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	for _, tool := range list.Result.Tools {
		if tool.Title == "" || !strings.Contains(string(tool.OutputSchema), `"type":"object"`) {
			t.Errorf("%s: title %q outputSchema %s", tool.Name, tool.Title, tool.OutputSchema)
		}
	}

	call := func(tool string, args ...string) (isError bool, sc map[string]any) {
		t.Helper()
		out, errs, _ := runBounded(t, env, append(append(append(base, "--method", "tools/call", "--tool-name", tool), jsonOut...), append([]string{"--tool-arg"}, args...)...)...)
		var res struct {
			Result struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(firstLine(out)), &res); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", tool, err, out, errs)
		}
		return res.Result.IsError, res.Result.StructuredContent
	}
	isErr, sc := call("locker_read_blocks", "pad_id=nope", "ticket=x")
	if e, _ := sc["error"].(map[string]any); !isErr || e["status"] != 404.0 {
		t.Errorf("missing pad: isError %v, structured %v", isErr, sc)
	}
	isErr, sc = call("locker_read_blocks", "pad_id=demo-pad-v1", "ticket=unused", "expected_head_hash="+strings.Repeat("0", 64))
	if e, _ := sc["error"].(map[string]any); !isErr || e["kind"] != "verification_failed" || sc["blocks"] != nil {
		t.Errorf("expected-head mismatch: isError %v, structured %v", isErr, sc)
	}
	if isErr, _ := call("locker_read_blocks", "pad_id=demo-pad-v1", "ticket=unused", "expected_head_hash="+locker.DemoHead); isErr {
		t.Error("a verified read is isError")
	}

	// A deposit with a progress token, lockermcp's stdout teed to a file.
	wire := filepath.Join(t.TempDir(), "wire.jsonl")
	tee := append(inspectorCLI(t), "sh", "-c", "exec \"$0\" | tee \"$1\"", mcpBin, wire, "-e", "LOCKER_URL="+url)
	envelope := `{"schema":"locker.handoff.v1","task_id":"t-1","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	out, errs, err = runBounded(t, env, append(append(tee, "--method", "tools/call", "--tool-name", "locker_deposit",
		"--tool-args-json", `{"envelope":`+envelope+`,"artifacts":["one","two"]}`, "--tool-metadata", "progressToken=dep-1"), jsonOut...)...)
	if err != nil || !strings.Contains(out, `"status":"sealed"`) {
		t.Fatalf("deposit: %v\n%s\n%s", err, out, errs)
	}
	f, err := os.Open(wire)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var progress []map[string]any
	sc2 := bufio.NewScanner(f)
	sc2.Buffer(make([]byte, 1<<20), 1<<20)
	for sc2.Scan() {
		var msg struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(sc2.Bytes(), &msg) == nil && msg.Method == "notifications/progress" {
			progress = append(progress, msg.Params)
		}
	}
	if len(progress) != 5 || progress[0]["progress"] != 1.0 || progress[4]["progress"] != 5.0 || progress[4]["total"] != 5.0 || progress[0]["progressToken"] == nil {
		t.Errorf("progress notifications on the wire: %v", progress)
	}

	// Unadvertised capabilities (prompts, resources, logging) are refused in-process by
	// internal/mcpserver's TestOnlyAdvertisedCapabilitiesAnswered; the Inspector itself does
	// not send a request for a capability the server did not advertise.
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 && strings.HasPrefix(s, "{") {
		// one JSON object per line in --format json; the result comes first
		return s[:i]
	}
	return s
}
