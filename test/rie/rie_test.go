// Package rie_test runs the real Lambda runtime loop: it builds functions/pads and
// functions/interceptor as bootstraps (CGO_ENABLED=0, -tags lambda.norpc), runs them under
// aws-lambda-rie on loopback ports with AWS_ENDPOINT_URL pointing at moto (or the endpoint
// the harness was given), and drives a whole handoff, and the AgentCore interceptor's
// REQUEST and RESPONSE events, through invocations of the committed events/*.json.
package rie_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestMain runs moto (awstest) and, for the interceptor's log key, the in-process KMS.
func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// invoke sends one API Gateway event and decodes the function's response.
func invoke(ctx context.Context, emu *rietest.Emulator, ev events.APIGatewayV2HTTPRequest, first bool) (events.APIGatewayV2HTTPResponse, error) {
	var resp events.APIGatewayV2HTTPResponse
	body, _ := json.Marshal(ev)
	send := emu.Invoke
	if first {
		send = emu.FirstInvoke
	}
	raw, err := send(ctx, body)
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.StatusCode == 0 {
		return resp, fmt.Errorf("invoke: not an API Gateway response: %s", raw)
	}
	return resp, nil
}

func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(testenv.Event(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func forPad(ev events.APIGatewayV2HTTPRequest, padID, auth string, body []byte, b64 bool) events.APIGatewayV2HTTPRequest {
	old := ev.PathParameters["pad_id"]
	ev.RawPath = strings.Replace(ev.RawPath, "/"+old+"/", "/"+padID+"/", 1)
	ev.RequestContext.HTTP.Path = ev.RawPath
	ev.PathParameters = map[string]string{"pad_id": padID}
	h := map[string]string{}
	for k, v := range ev.Headers {
		h[k] = v
	}
	delete(h, "authorization")
	if auth != "" {
		h["authorization"] = auth
	}
	ev.Headers = h
	if body != nil {
		ev.Body, ev.IsBase64Encoded = string(body), false
		if b64 {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

func TestHandoffUnderRIE(t *testing.T) {
	rie := rietest.Find(t)
	cfg := awstest.Config(t)
	table := awstest.PadsTable(t, cfg)
	bootstrap := rietest.Build(t, "pads")
	st, err := os.Stat(bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	// The function runs as its template role (PadsFunction's policy), as in a real account.
	role := awstest.Role(t, "PadsFunction", awstest.Resources{"PadsTable": table})
	env := append(role.Env(t), "PADS_TABLE="+table, "LOCKER_LOG_LEVEL=warn")
	emu := rietest.Start(t, rie, bootstrap, env)
	started := emu.Started

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The first invocation starts the runtime (cold start: config and clients, no AWS call)
	// and is answered by /health, whose first call on this new table checks the format
	// marker and seeds the demo pad: emulator start to first response, the emulator's own
	// start included (BenchmarkColdStart measures init alone).
	health, err := invoke(ctx, emu, loadEvent(t, "health.json"), true)
	if err != nil {
		t.Fatalf("no first response from the emulator: %v", err)
	}
	initTime := time.Since(started)
	if health.StatusCode != 200 {
		t.Fatalf("health: %d %s", health.StatusCode, health.Body)
	}
	t.Logf("bootstrap %.1f MiB (%s/%s); aws-lambda-rie start to first response %s", float64(size)/(1<<20), runtime.GOOS, runtime.GOARCH, initTime.Round(time.Millisecond))

	call := func(what string, ev events.APIGatewayV2HTTPRequest, status int) map[string]any {
		t.Helper()
		resp, err := invoke(ctx, emu, ev, false)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if resp.StatusCode != status {
			t.Fatalf("%s: status %d, want %d: %s", what, resp.StatusCode, status, resp.Body)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
			t.Fatalf("%s: body %q: %v", what, resp.Body, err)
		}
		return out
	}

	created := call("create", loadEvent(t, "create.json"), 201)
	padID, wk, ticket := created["pad_id"].(string), created["write_key"].(string), created["read_ticket"].(string)
	envelope := []byte(`{"schema": "locker.handoff.v1", "task_id": "rie", "from_agent": "planner", "to_agent": "coder", "constraints": ["loopback only"], "artifacts": [{"name": "patch.diff"}], "budget_usd": 0.5}`)
	artifact := []byte("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n\xff binary tail")
	a0 := call("append envelope", forPad(loadEvent(t, "append.json"), padID, "Bearer "+wk, envelope, false), 201)
	a1 := call("append artifact", forPad(loadEvent(t, "append.json"), padID, "Bearer "+wk, artifact, true), 201)
	head := locker.NextHash(locker.NextHash(locker.GenesisHash, envelope), artifact)
	if a0["curr_hash"] != locker.NextHash(locker.GenesisHash, envelope) || a1["curr_hash"] != head {
		t.Fatalf("acks %v %v do not match the locally computed chain", a0, a1)
	}
	sealed := call("seal", forPad(loadEvent(t, "seal.json"), padID, "Bearer "+wk, nil, false), 200)
	if sealed["head_hash"] != head || sealed["state"] != "sealed" {
		t.Fatalf("seal = %v, want head %s", sealed, head)
	}
	call("append after seal", forPad(loadEvent(t, "append.json"), padID, "Bearer "+wk, []byte("late"), false), 409)
	manifest := call("manifest", forPad(loadEvent(t, "manifest.json"), padID, "", nil, false), 200)
	bev := forPad(loadEvent(t, "blocks.json"), padID, "Bearer "+ticket, nil, false)
	bev.RawQueryString, bev.QueryStringParameters = "", nil
	read := call("blocks", bev, 200)

	// Verify the chain as a reader would, against the manifest's head.
	list := read["blocks"].([]any)
	prev := locker.GenesisHash
	for i, x := range list {
		b := x.(map[string]any)
		payload, err := base64.StdEncoding.Strict().DecodeString(b["payload_b64"].(string))
		if err != nil || int(b["seq"].(float64)) != i || b["prev_hash"] != prev || b["curr_hash"] != locker.NextHash(prev, payload) {
			t.Fatalf("block %d does not verify: %v", i, b)
		}
		prev = b["curr_hash"].(string)
	}
	if len(list) != 2 || prev != head || manifest["head_hash"] != head || manifest["state"] != "sealed" {
		t.Fatalf("read %d blocks ending on %s; manifest %v; want 2 ending on %s", len(list), prev, manifest, head)
	}
	got, _ := base64.StdEncoding.DecodeString(list[1].(map[string]any)["payload_b64"].(string))
	if !bytes.Equal(got, artifact) {
		t.Errorf("artifact came back as %q", got)
	}
	h := call("health", loadEvent(t, "health.json"), 200)
	if fmt.Sprint(h["pads"]) != "map[sealed:2 total:2 unsealed:0]" {
		t.Errorf("health pads = %v", h["pads"])
	}
}
