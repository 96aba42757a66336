// Package rie_test runs the real Lambda runtime loop: it builds functions/pads as bootstrap
// (CGO_ENABLED=0, -tags lambda.norpc), runs it under aws-lambda-rie on loopback ports with
// AWS_ENDPOINT_URL pointing at moto (or the endpoint the harness was given), and drives a
// whole handoff through invocations of the committed events/*.json.
package rie_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// rieVersion is the aws-lambda-rie that .ci/run installs.
const rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	return p
}

// findRIE looks on PATH, then in the Go bin directory `go install` writes to.
func findRIE(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	out, err := exec.Command(goTool(t), "env", "GOBIN", "GOPATH").Output()
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dirs := []string{}
		if len(lines) > 0 && lines[0] != "" {
			dirs = append(dirs, lines[0])
		}
		if len(lines) > 1 {
			for _, gp := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
		for _, d := range dirs {
			p := filepath.Join(d, "aws-lambda-rie")
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	testenv.Missing(t, testenv.External, "aws-lambda-rie is not installed: go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+rieVersion)
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// buildBootstrap builds the pads Lambda as SAM's build-PadsFunction does, for this machine's
// architecture (RIE runs it natively).
func buildBootstrap(t *testing.T) (path string, size int64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.CommandContext(t.Context(), goTool(t), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, "./functions/pads")
	cmd.Dir = testenv.RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build bootstrap: %v\n%s", err, b)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, st.Size()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // bounded: keep the first MiB of logs
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// emulator is aws-lambda-rie running bootstrap.
type emulator struct {
	url  string
	logs *lockedBuffer
}

func startRIE(t *testing.T, rie, bootstrap string, env []string) (*emulator, time.Time) {
	t.Helper()
	api, runtimeAPI := freePort(t), freePort(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", api, "--runtime-api-address", runtimeAPI, bootstrap)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, so stopping it by PID also ends the bootstrap it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aws-lambda-rie: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		pid := cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("aws-lambda-rie output:\n%s", logs.String())
		}
	})
	return &emulator{url: "http://" + api + "/2015-03-31/functions/function/invocations", logs: logs}, start
}

func (e *emulator) invoke(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var resp events.APIGatewayV2HTTPResponse
	body, _ := json.Marshal(ev)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return resp, err
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp, err
	}
	defer r.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return resp, err
	}
	if r.StatusCode != http.StatusOK {
		return resp, fmt.Errorf("invoke: RIE answered %d: %s", r.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.StatusCode == 0 {
		return resp, fmt.Errorf("invoke: not an API Gateway response: %s", raw)
	}
	return resp, nil
}

func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
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
	if runtime.GOOS != "linux" {
		t.Skip("aws-lambda-rie runs Linux binaries")
	}
	rie := findRIE(t)
	cfg := awstest.Config(t)
	table := awstest.PadsTable(t, cfg)
	bootstrap, size := buildBootstrap(t)
	env := append(awstest.Env(t), "PADS_TABLE="+table, "LOCKER_LOG_LEVEL=warn")
	emu, started := startRIE(t, rie, bootstrap, env)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The first invocation starts the runtime (cold start: config, AWS config, format marker,
	// demo seed) and is answered by /health: process start to first response.
	var health events.APIGatewayV2HTTPResponse
	for attempt := 0; ; attempt++ {
		var err error
		health, err = emu.invoke(ctx, loadEvent(t, "health.json"))
		if err == nil {
			break
		}
		if attempt == 100 || ctx.Err() != nil {
			t.Fatalf("no first response from the emulator: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	initTime := time.Since(started)
	if health.StatusCode != 200 {
		t.Fatalf("health: %d %s", health.StatusCode, health.Body)
	}
	t.Logf("bootstrap %.1f MiB (%s/%s); aws-lambda-rie start to first response %s", float64(size)/(1<<20), runtime.GOOS, runtime.GOARCH, initTime.Round(time.Millisecond))

	call := func(what string, ev events.APIGatewayV2HTTPRequest, status int) map[string]any {
		t.Helper()
		resp, err := emu.invoke(ctx, ev)
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
