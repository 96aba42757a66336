package warrantaws_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// rieVersion is the aws-lambda-rie that .ci/run installs (the same pin as test/rie).
const rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"

func findRIE(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var dirs []string
		if len(lines) > 0 && lines[0] != "" {
			dirs = append(dirs, lines[0])
		}
		if len(lines) > 1 {
			for _, gp := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(gp, "bin"))
			}
		}
		for _, d := range dirs {
			if st, err := os.Stat(filepath.Join(d, "aws-lambda-rie")); err == nil && !st.IsDir() {
				return filepath.Join(d, "aws-lambda-rie")
			}
		}
	}
	testenv.Missing(t, testenv.External, "aws-lambda-rie is not installed: go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+rieVersion)
	return ""
}

func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// buildAll builds the three functions as SAM's build targets do, for this machine.
func buildAll(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for _, fn := range []string{"crawl", "approvals", "checkpoint"} {
		p := filepath.Join(dir, fn, "bootstrap")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", p, "./functions/"+fn)
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", fn, err, b)
		}
		out[fn] = p
	}
	return out
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// rie runs one bootstrap under aws-lambda-rie on loopback and returns its invoke URL.
func rie(t *testing.T, bin, bootstrap string, env []string) (string, *logBuf) {
	t.Helper()
	api, rt := loopbackAddr(t), loopbackAddr(t)
	cmd := exec.Command(bin, "--runtime-interface-emulator-address", api, "--runtime-api-address", rt, bootstrap)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	logs := &logBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
			t.Logf("%s under aws-lambda-rie:\n%s", filepath.Base(filepath.Dir(bootstrap)), logs.String())
		}
	})
	return "http://" + api + "/2015-03-31/functions/function/invocations", logs
}

// invoke posts an event and decodes the function's result into out, retrying while the
// emulator starts (bounded).
func invoke(t *testing.T, url string, event any, out any) {
	t.Helper()
	body, _ := json.Marshal(event)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var last error
	for attempt := 0; attempt < 100; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || bytes.Contains(raw, []byte(`"errorMessage"`)) {
			t.Fatalf("invoke: %d %s", resp.StatusCode, raw)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("invoke: result %s: %v", raw, err)
		}
		return
	}
	t.Fatalf("invoke: no answer from the emulator: %v", last)
}

// TestEndToEndUnderRIE runs the three built bootstraps under aws-lambda-rie against moto
// and KMS: crawl the fixture server, approve through the approvals API with an IAM
// principal, checkpoint, then verify the log offline against the KMS public key and the
// checkpoint in S3.
func TestEndToEndUnderRIE(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("aws-lambda-rie runs Linux binaries")
	}
	bin := findRIE(t)
	s := newStack(t)
	boot := buildAll(t)
	servers, _ := json.Marshal([]map[string]any{{"name": "weather", "url": s.mcpURL, "allowPrivate": true}})
	env := append(append(awstest.Env(t), kmstest.Env(t)...),
		"CATALOG_TABLE="+s.c.CatalogTable, "AUDIT_KMS_KEY="+s.c.LogKey, "CRAWL_ROLE_ARN="+crawlRole, "CHECKPOINT_BUCKET="+s.c.CheckpointBucket,
		"CHECKPOINT_S3_PATH_STYLE=1", "TOOLWARRANT_SERVERS="+string(servers), "CRAWL_DEADLINE_MARGIN=2s")
	crawlURL, _ := rie(t, bin, boot["crawl"], env)
	apiURL, _ := rie(t, bin, boot["approvals"], env)
	cpURL, _ := rie(t, bin, boot["checkpoint"], env)

	var res awsapp.CrawlResult
	invoke(t, crawlURL, json.RawMessage(readEvent(t, "crawl-scheduled.json")), &res)
	if res.Recorded != 1 || len(res.Servers[0].NewVersions) != 2 {
		t.Fatalf("crawl under RIE: %+v", res)
	}
	var resp events.APIGatewayV2HTTPResponse
	invoke(t, apiURL, apiEvent(t, "approvals-proposals.json", alice, "", "", nil), &resp)
	var props map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &props); err != nil || resp.StatusCode != 200 {
		t.Fatalf("proposals: %d %s", resp.StatusCode, resp.Body)
	}
	head := headOf(props)
	digest := ""
	for _, p := range props["proposals"].([]any) {
		if row := p.(map[string]any); row["tool"] == "get_forecast" {
			digest = row["current"].(string)
		}
	}
	invoke(t, apiURL, apiEvent(t, "approvals-decide.json", alice, "weather", "get_forecast",
		map[string]any{"decision": "approved", "digest": digest, "auditHead": head, "note": "rie"}), &resp)
	if resp.StatusCode != 201 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	var cp checkpoint.Result
	invoke(t, cpURL, json.RawMessage(readEvent(t, "checkpoint-scheduled.json")), &cp)
	if !cp.Written || cp.Head.Seq != head.Seq+1 {
		t.Fatalf("checkpoint under RIE: %+v (approval at %d)", cp, head.Seq+1)
	}

	// Offline: the public key (one GetPublicKey), the records, the checkpoints.
	ctx := t.Context()
	sig, err := kmssigner.New(ctx, kmssigner.Config{Client: kms.NewFromConfig(s.cfg, kmstest.Options(t)), KeyID: s.c.LogKey})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(s.cfg), Table: s.c.CatalogTable})
	if err != nil {
		t.Fatal(err)
	}
	blobs, _ := s3blob.New(s3blob.Config{Client: s3test.Client(s.cfg), Bucket: s.c.CheckpointBucket})
	rep, n, err := checkpoint.Verify(ctx, records(ctx, cat), checkpoint.Store{Blobs: blobs, Name: "s3://" + s.c.CheckpointBucket},
		audit.Options{Keys: checkpoint.Keys(sig.KeyID(), sig.Public()), Check: iamattest.Checker(nil, crawlRole)})
	if err != nil || !rep.OK() || n != 1 || rep.Head != cp.Head {
		t.Fatalf("audit verify --checkpoints: %+v, %d checkpoints, %v", rep, n, err)
	}
	t.Logf("verified %d entries against checkpoint %d", rep.Entries, cp.Head.Seq)

}
