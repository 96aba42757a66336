// Package awsapptest gives the toolwarrant Lambda mains' tests (functions/crawl,
// approvals, checkpoint) and the suites that run them together (test/warrantaws) a
// deployment shaped by template.yaml: fresh resources, and each function's role as an
// assumed session of exactly its template statements (internal/awstest), so a call a
// real account would refuse is refused here.
package awsapptest

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Deployment is one test's toolwarrant resources (catalog table, KMS log key, checkpoint
// bucket, catalog object bucket) and the three function roles, with the log key's template policy in force.
type Deployment struct {
	// Res maps template logical IDs to the test's resources and roles.
	Res awstest.Resources
	// Table, Key, Bucket, BlobBucket and TilesBucket are CatalogTable's name, LogKey's
	// ARN, CheckpointBucket's, CatalogBlobBucket's and TilesBucket's names.
	Table, Key, Bucket, BlobBucket, TilesBucket string
	// CheckpointKey is CheckpointKey's ARN (Ed25519) and Origin the CHECKPOINT_ORIGIN set.
	CheckpointKey, Origin string
	// CrawlQueue and ParkedQueue are the URLs of CrawlQueue and CrawlParkedQueue.
	CrawlQueue, ParkedQueue string
	// Roles are the sessions of CrawlRole, CrawlDispatchRole, ApprovalsRole and CheckpointRole (and
	// InterceptorRole and AuditSequencerRole with EnableAgentCoreInterceptor=true).
	Roles map[string]*awstest.Principal
}

// Deploy creates the resources (as the administrator, as CloudFormation would) and the
// roles, and applies the key policy.
func Deploy(t testing.TB) *Deployment { return DeployWith(t, nil) }

// DeployWith is Deploy with template parameters (e.g. CrawlHeaderSecretArns), which shape
// the roles' statements; EnableAgentCoreInterceptor=true adds the interceptor's role.
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
	d.TilesBucket = s3test.CreateVersionedBucket(t, cfg)
	d.Res["CatalogTable"], d.Res["LogKey"], d.Res["CheckpointBucket"], d.Res["CatalogBlobBucket"] = d.Table, d.Key, d.Bucket, d.BlobBucket
	d.Res["TilesBucket"] = d.TilesBucket
	// The crawl fan-out's queues, the parked one first (the crawl queue redrives to it).
	awstest.CreateQueue(t, cfg, "CrawlParkedQueue", d.Res)
	d.CrawlQueue = awstest.CreateQueue(t, cfg, "CrawlQueue", d.Res)
	d.ParkedQueue = d.Res["CrawlParkedQueue"]
	roles := []string{"CrawlRole", "CrawlDispatchRole", "ApprovalsRole", "CheckpointRole"}
	if d.Res["EnableAgentCoreInterceptor"] == "true" {
		roles = append(roles, "InterceptorRole", "AuditSequencerRole") // the key policy names them only then
	}
	for _, role := range roles {
		d.Roles[role] = awstest.Role(t, role, d.Res)
	}
	awstest.ApplyKeyPolicy(t, "LogKey", d.Res)
	awstest.ApplyKeyPolicy(t, "CheckpointKey", d.Res)
	return d
}

// Config returns an aws.Config signed as role (CrawlRole, ApprovalsRole, CheckpointRole,
// InterceptorRole).
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
		"CATALOG_BLOB_BUCKET": d.BlobBucket, "CRAWL_ROLE_ARN": d.CrawlRoleARN(), "TOOLWARRANT_SERVERS": string(servers),
		"TOOLWARRANT_TILES_BUCKET": d.TilesBucket, "TOOLWARRANT_TILES_PREFIX": "tlog/", "CRAWL_QUEUE_URL": d.CrawlQueue}
}

// Warrant returns the toolwarrant service on d acting as identity, signed as role, with
// the in-process KMS.
func (d *Deployment) Warrant(t testing.TB, role, identity string) *awsapp.Warrant {
	t.Helper()
	c := config.WarrantAWS{CatalogTable: d.Table, LogKey: d.Key, CatalogBlobBucket: d.BlobBucket, S3PathStyle: true, MaxAttempts: 3}
	w, err := awsapp.NewWarrant(t.Context(), d.Config(t, role), c, identity, slog.New(slog.DiscardHandler), awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}})
	if err != nil {
		t.Fatalf("awsapptest: NewWarrant as %s: %v", role, err)
	}
	return w
}

// Seed puts a server in the catalog with tools as a crawl lists them (each a tool object;
// as the crawl role), then approves the ones named in approve (as the approvals role, by
// alice), and returns every tool's digest.
func (d *Deployment) Seed(t testing.TB, server string, tools []string, approve ...string) map[string]warrant.Digest {
	t.Helper()
	ctx := t.Context()
	crawl := d.Warrant(t, "CrawlRole", d.CrawlRoleARN())
	if _, err := crawl.Service.AddServer(ctx, warrant.Server{Name: server, URL: "https://" + server + ".example.com/mcp"}); err != nil {
		t.Fatalf("awsapptest: add server %s: %v", server, err)
	}
	l := warrant.Listing{Server: server, StartedAt: time.Now(), FinishedAt: time.Now()}
	for _, raw := range tools {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatalf("awsapptest: tool %s: %v", raw, err)
		}
		l.Tools = append(l.Tools, warrant.RawTool{Name: v.Name, Raw: json.RawMessage(raw)})
	}
	res, err := crawl.Service.Ingest(ctx, l)
	if err != nil {
		t.Fatalf("awsapptest: ingest %s: %v", server, err)
	}
	digests := map[string]warrant.Digest{}
	for _, v := range res.New {
		digests[v.Tool] = v.Digest
	}
	approver := d.Warrant(t, "ApprovalsRole", "arn:aws:sts::"+awstest.Account+":assumed-role/toolwarrant-approver/alice@example.com")
	for _, tool := range approve {
		if err := approver.Service.Decide(ctx, warrant.Decision{Server: server, Tool: tool, Digest: digests[tool], Kind: warrant.DecisionApproved}); err != nil {
			t.Fatalf("awsapptest: approve %s/%s: %v", server, tool, err)
		}
	}
	return digests
}

// AuditLog reads d's whole audit log (as the checkpoint role, which only reads) and
// verifies it against the log key's public key alone, IAM-attested decisions included: the
// independent oracle of what the functions wrote.
func (d *Deployment) AuditLog(t testing.TB) ([]warrant.AuditRecord, audit.Report) {
	t.Helper()
	w := d.Warrant(t, "CheckpointRole", "checkpoint")
	var recs []warrant.AuditRecord
	var after int64
	for {
		page, err := w.Catalog.AuditRecords(t.Context(), after, 100)
		if err != nil {
			t.Fatalf("awsapptest: audit records after %d: %v", after, err)
		}
		recs = append(recs, page...)
		if len(page) < 100 {
			break
		}
		after = page[len(page)-1].Seq
	}
	return recs, audit.Verify(recs, audit.Options{Keys: checkpoint.Keys(w.Signer.KeyID(), w.Signer.Public()), Check: iamattest.Checker(nil, d.CrawlRoleARN())})
}

// The catalog events/agentcore-*.json assume: server (gateway target) "weather" with
// get_forecast approved as listed, get_alerts crawled but never approved, and get_radar
// approved in an earlier definition than the one agentcore-response-tools-list.json lists.
const (
	ForecastTool  = `{"name":"get_forecast","description":"Forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`
	AlertsTool    = `{"name":"get_alerts","description":"Weather alerts for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`
	RadarApproved = `{"name":"get_radar","description":"Radar image for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`
)

// SeedAgentCore seeds the catalog the AgentCore sample events assume and returns the digests.
func (d *Deployment) SeedAgentCore(t testing.TB) map[string]warrant.Digest {
	t.Helper()
	return d.Seed(t, "weather", []string{ForecastTool, AlertsTool, RadarApproved}, "get_forecast", "get_radar")
}
