// Package awsapptest gives the toolwarrant Lambda mains' tests (functions/crawl,
// approvals, checkpoint) the environment template.yaml sets, on fresh resources.
package awsapptest

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
)

// CrawlRole is the crawl role ARN FunctionEnv configures.
const CrawlRole = "arn:aws:iam::123456789012:role/dev-toolwarrant-crawl"

// FunctionEnv is a toolwarrant function's environment on a fresh catalog table, KMS key,
// checkpoint bucket and catalog object bucket (moto, kmstest), as template.yaml sets it, with one fixture MCP
// server on loopback in TOOLWARRANT_SERVERS.
func FunctionEnv(t *testing.T) map[string]string {
	t.Helper()
	cfg := awstest.Config(t)
	srv := httptest.NewServer(fixture.New(`{"name":"get_forecast","description":"Forecast.","inputSchema":{"type":"object"}}`))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "weather", "url": srv.URL + "/mcp", "allowPrivate": true}})
	return map[string]string{"CATALOG_TABLE": awstest.CreateTable(t, cfg, "CatalogTable"), "AUDIT_KMS_KEY": kmstest.CreateKey(t, kms.NewFromConfig(cfg, kmstest.Options(t))),
		"CHECKPOINT_BUCKET": s3test.CreateBucket(t, cfg), "CHECKPOINT_S3_PATH_STYLE": "1", "CRAWL_ROLE_ARN": CrawlRole,
		"CATALOG_BLOB_BUCKET": s3test.CreateVersionedBucket(t, cfg),
		"TOOLWARRANT_SERVERS": string(servers)}
}
