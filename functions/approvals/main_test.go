package main

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// env is the function's environment on a fresh table, key and bucket, as template.yaml
// sets it, with one fixture MCP server in the catalog.
func env(t *testing.T) map[string]string {
	t.Helper()
	cfg := awstest.Config(t)
	srv := httptest.NewServer(fixture.New(`{"name":"get_forecast","description":"Forecast.","inputSchema":{"type":"object"}}`))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "weather", "url": srv.URL + "/mcp", "allowPrivate": true}})
	return map[string]string{"CATALOG_TABLE": awstest.CreateTable(t, cfg, "CatalogTable"), "AUDIT_KMS_KEY": kmstest.CreateKey(t, kms.NewFromConfig(cfg, kmstest.Options(t))),
		"CHECKPOINT_BUCKET": s3test.CreateBucket(t, cfg), "CHECKPOINT_S3_PATH_STYLE": "1", "CRAWL_ROLE_ARN": "arn:aws:iam::123456789012:role/dev-toolwarrant-crawl",
		"TOOLWARRANT_SERVERS": string(servers)}
}

func event(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	_ = slog.New
	_ awsapp.WarrantOptions
)

// TestColdStartAndEvents: main's cold start, then the committed API events: proposals
// and tools (none yet), the audit export, a diff of an unknown tool (404), the sample decision (404: placeholder
// digest), and the same request without an IAM principal (403).
func TestColdStartAndEvents(t *testing.T) {
	e := env(t)
	cfg := awstest.Config(t)
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		noIAM  bool
		status int
	}{{"approvals-proposals.json", false, 200}, {"approvals-tools.json", false, 200}, {"approvals-audit.json", false, 200}, {"approvals-audit.json", true, 403}, {"approvals-diff.json", false, 404}, {"approvals-version.json", false, 404}, {"approvals-decide.json", false, 404}, {"approvals-decide.json", true, 403}} {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event(t, tc.file), &ev); err != nil {
			t.Fatal(err)
		}
		if tc.noIAM {
			ev.RequestContext.Authorizer = nil
		}
		resp, err := h(t.Context(), ev)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s (no IAM %v): %d %s, %v; want %d", tc.file, tc.noIAM, resp.StatusCode, resp.Body, err, tc.status)
		}
	}
}
