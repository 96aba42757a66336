// Package awsapptest gives the toolwarrant Lambda mains' tests (functions/crawl,
// approvals, checkpoint) and the suites that run them together (test/warrantaws) a
// deployment shaped by template.yaml: fresh resources, and each function's role as an
// assumed session of exactly its template statements (internal/awstest), so a call a
// real account would refuse is refused here.
package awsapptest

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
)

// Deployment is one test's toolwarrant resources (catalog table, KMS log key, checkpoint
// bucket, catalog object bucket) and the three function roles, with the log key's template policy in force.
type Deployment struct {
	// Res maps template logical IDs to the test's resources and roles.
	Res awstest.Resources
	// Table, Key, Bucket and BlobBucket are CatalogTable's name, LogKey's ARN,
	// CheckpointBucket's name and CatalogBlobBucket's name.
	Table, Key, Bucket, BlobBucket string
	// CheckpointKey is CheckpointKey's ARN (Ed25519) and Origin the CHECKPOINT_ORIGIN set.
	CheckpointKey, Origin string
	// Roles are the sessions of CrawlRole, ApprovalsRole and CheckpointRole.
	Roles map[string]*awstest.Principal
}

// Deploy creates the resources (as the administrator, as CloudFormation would) and the
// roles, and applies the key policy.
func Deploy(t testing.TB) *Deployment { return DeployWith(t, nil) }

// DeployWith is Deploy with template parameters (e.g. CrawlHeaderSecretArns), which shape
// the roles' statements.
func DeployWith(t testing.TB, params map[string]string) *Deployment {
	t.Helper()
	cfg := awstest.Config(t)
	d := &Deployment{Res: awstest.Resources{}, Roles: map[string]*awstest.Principal{}}
	for k, v := range params {
		d.Res[k] = v
	}
	d.Table = awstest.CreateTable(t, cfg, "CatalogTable")
	kc := kms.NewFromConfig(kmstest.Config(t), kmstest.Options(t))
	d.Key = kmstest.CreateKey(t, kc)
	d.CheckpointKey, d.Origin = kmstest.CreateCheckpointKey(t, kc), "toolwarrant.aws/"+awstest.Account+"/test"
	d.Res["CheckpointKey"] = d.CheckpointKey
	d.Bucket = s3test.CreateBucket(t, cfg)
	d.BlobBucket = s3test.CreateVersionedBucket(t, cfg)
	d.Res["CatalogTable"], d.Res["LogKey"], d.Res["CheckpointBucket"], d.Res["CatalogBlobBucket"] = d.Table, d.Key, d.Bucket, d.BlobBucket
	for _, role := range []string{"CrawlRole", "ApprovalsRole", "CheckpointRole"} {
		d.Roles[role] = awstest.Role(t, role, d.Res)
	}
	awstest.ApplyKeyPolicy(t, "LogKey", d.Res)
	awstest.ApplyKeyPolicy(t, "CheckpointKey", d.Res)
	return d
}

// Config returns an aws.Config signed as role (CrawlRole, ApprovalsRole, CheckpointRole).
func (d *Deployment) Config(t testing.TB, role string) aws.Config {
	t.Helper()
	p, ok := d.Roles[role]
	if !ok {
		t.Fatalf("awsapptest: no role %s", role)
	}
	return p.Config(t)
}

// CrawlRoleARN is what template.yaml sets CRAWL_ROLE_ARN to: the crawl role's ARN.
func (d *Deployment) CrawlRoleARN() string { return d.Roles["CrawlRole"].RoleARN }

// FunctionEnv is a toolwarrant function's environment on d, as template.yaml sets it,
// with one fixture MCP server on loopback in TOOLWARRANT_SERVERS.
func (d *Deployment) FunctionEnv(t testing.TB) map[string]string {
	t.Helper()
	srv := httptest.NewServer(fixture.New(`{"name":"get_forecast","description":"Forecast.","inputSchema":{"type":"object"}}`))
	t.Cleanup(srv.Close)
	servers, _ := json.Marshal([]map[string]any{{"name": "weather", "url": srv.URL + "/mcp", "allowPrivate": true}})
	return map[string]string{"CATALOG_TABLE": d.Table, "AUDIT_KMS_KEY": d.Key, "CHECKPOINT_BUCKET": d.Bucket, "CHECKPOINT_S3_PATH_STYLE": "1",
		"CHECKPOINT_KMS_KEY": d.CheckpointKey, "CHECKPOINT_ORIGIN": d.Origin,
		"CATALOG_BLOB_BUCKET": d.BlobBucket, "CRAWL_ROLE_ARN": d.CrawlRoleARN(), "TOOLWARRANT_SERVERS": string(servers)}
}
