package extmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// openCatalog opens the catalog on table with its blob store in bucket, counting the
// DynamoDB and S3 calls it makes when counters are given.
func openCatalog(t *testing.T, cfg aws.Config, table, bucket string, dyn, s3c *awstest.Calls) *dynamostore.Catalog {
	t.Helper()
	var dopts []func(*dynamodb.Options)
	var sopts []func(*s3.Options)
	if dyn != nil {
		dopts = append(dopts, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, dyn.Middleware) })
	}
	if s3c != nil {
		sopts = append(sopts, func(o *s3.Options) { o.APIOptions = append(o.APIOptions, s3c.Middleware) })
	}
	b, err := s3blob.New(s3blob.Config{Client: s3test.Client(cfg, sopts...), Bucket: bucket, MaxObjectBytes: dynamostore.DefaultMaxBlobBytes})
	if err != nil {
		t.Fatal(err)
	}
	c, err := dynamostore.NewCatalog(t.Context(), dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg, dopts...), Table: table, Blobs: b})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// taskRole is the ExtMcp container's ECS task role (infra/ecs's policy) on table and
// bucket, assumed: what the processor reads as.
func taskRole(t *testing.T, table, bucket string) *awstest.Principal {
	t.Helper()
	return awstest.RoleWith(t, "ProcessorTaskRole", awstest.PolicyFile(t, "infra/ecs/processor-task-role-policy.json", map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCOUNT_ID": awstest.Account, "CATALOG_TABLE": table, "CATALOG_BLOB_BUCKET": bucket,
		"CONFIG_FILE_SYSTEM_ID": "fs-0", "CONFIG_ACCESS_POINT_ID": "fsap-0"}), nil)
}

// addLargeServer adds a server whose index is too large for an item (many tools with long
// names), crawled once: its index lives in the blob store.
func addLargeServer(t *testing.T, c *dynamostore.Catalog, name string, now time.Time) {
	t.Helper()
	ctx := t.Context()
	if err := c.AddServer(ctx, warrant.Server{Name: name, URL: "https://" + name + ".example.com/mcp", AddedAt: now, AddedBy: "ops"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	rec := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: name, Seq: 1, Source: warrant.SourceCrawl, StartedAt: now, FinishedAt: now, By: "crawler"}}
	for i := range 120 {
		tool := fmt.Sprintf("tool_%03d_%s", i, strings.Repeat("x", 200))
		d, canon, _ := warrant.DigestTool([]byte(`{"name":"` + tool + `","inputSchema":{"type":"object"}}`))
		rec.Crawl.Observations = append(rec.Crawl.Observations, warrant.Observation{Tool: tool, Digest: d})
		rec.Versions = append(rec.Versions, warrant.Version{Server: name, Tool: tool, Digest: d, Canonical: canon, FirstSeenAt: now, FirstSeenBy: "crawler", FirstCrawl: 1})
	}
	if err := c.RecordCrawl(ctx, rec, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
}

// TestProcessorOnDynamoDB: the processor reads the DynamoDB catalog (template.yaml's
// CatalogTable, on moto) and its blob store (CatalogBlobBucket) through CatalogSource,
// decides from it, and makes only the calls infra/ecs/processor-task-role-policy.json
// allows (GetItem, Query, GetObject).
func TestProcessorOnDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	table, bucket := awstest.CreateTable(t, cfg, "CatalogTable"), s3test.CreateVersionedBucket(t, cfg)
	ctx := t.Context()
	writer := openCatalog(t, cfg, table, bucket, nil, nil)
	v1 := `{"name":"get_forecast","inputSchema":{"type":"object"}}`
	alerts := `{"name":"get_alerts","inputSchema":{"type":"object"}}`
	d1, c1, _ := warrant.DigestTool([]byte(v1))
	d2, c2, _ := warrant.DigestTool([]byte(alerts))
	now := time.Now().UTC()
	if err := writer.AddServer(ctx, warrant.Server{Name: "wx", URL: "http://127.0.0.1:1/mcp", AllowPrivate: true, AddedAt: now, AddedBy: "ops"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	rec := warrant.CrawlRecord{
		Crawl: warrant.Crawl{Server: "wx", Seq: 1, Source: warrant.SourceCrawl, StartedAt: now, FinishedAt: now, By: "crawler",
			Observations: []warrant.Observation{{Tool: "get_alerts", Digest: d2}, {Tool: "get_forecast", Digest: d1}}},
		Versions: []warrant.Version{{Server: "wx", Tool: "get_alerts", Digest: d2, Canonical: c2, FirstSeenAt: now, FirstSeenBy: "crawler", FirstCrawl: 1},
			{Server: "wx", Tool: "get_forecast", Digest: d1, Canonical: c1, FirstSeenAt: now, FirstSeenBy: "crawler", FirstCrawl: 1}},
	}
	if err := writer.RecordCrawl(ctx, rec, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Decide(ctx, warrant.Decision{Server: "wx", Tool: "get_forecast", Digest: d1, Kind: warrant.DecisionApproved, Actor: "approver", At: now}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}

	addLargeServer(t, writer, "big", now)

	// The processor runs as its ECS task role: infra/ecs's policy, assumed.
	calls, s3calls := awstest.NewCalls(), awstest.NewCalls()
	reader := openCatalog(t, taskRole(t, table, bucket).Config(t), table, bucket, calls, s3calls)
	p, err := enforce.New(enforce.Config{Servers: []string{"wx", "big"}, Source: enforce.CatalogSource{Catalog: reader}, Refresh: time.Hour, Staleness: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	defer p.Close(context.Background())
	if !p.Fresh() {
		t.Fatal("the processor could not read the DynamoDB catalog")
	}
	got := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: "tools/list", Services: []string{"wx"}, Body: []byte(`{"tools":[` + v1 + `,` + alerts + `]}`)})
	if got.Outcome != enforce.OutcomeMutated || string(got.Mutated) != `{"tools":[`+v1+`]}` {
		t.Fatalf("list: %v %s", got.Outcome, got.Mutated)
	}
	if d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: "tools/call", Services: []string{"wx"}, Body: []byte(`{"name":"get_forecast"}`)}); d.Outcome != enforce.OutcomePass {
		t.Errorf("call approved: %s", d.Reason)
	}
	if d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: "tools/call", Services: []string{"wx"}, Body: []byte(`{"name":"get_alerts"}`)}); d.Cause != enforce.CauseUnapproved {
		t.Errorf("call unapproved: %v", d.Cause)
	}

	var pol struct {
		Statement []struct{ Action []string }
	}
	if err := json.Unmarshal(readInfra(t, "infra/ecs/processor-task-role-policy.json"), &pol); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, s := range pol.Statement {
		for _, a := range s.Action {
			allowed[a] = true
		}
	}
	counts := calls.Take()
	for op := range counts {
		if !allowed["dynamodb:"+op] {
			t.Errorf("the processor called %s, which its task role does not allow (calls: %v)", op, awstest.Ops(counts))
		}
	}
	s3counts := s3calls.Take()
	if s3counts["GetObject"] == 0 {
		t.Errorf("S3 calls %v: the large server's index was not read from the bucket", s3counts)
	}
	for op := range s3counts {
		if !allowed["s3:"+op] {
			t.Errorf("the processor called S3 %s, which its task role does not allow (calls: %v)", op, awstest.Ops(s3counts))
		}
	}
	t.Logf("calls for start-up and one snapshot of two servers: DynamoDB %v, S3 %v", counts, s3counts)
}

// TestRefreshReadsOnDynamoDB: one refresh of one served server reads that server's state
// only — a fixed number of calls however many servers the catalog holds — and Tools reads
// each server's index once, with no second read of an item it already has.
func TestRefreshReadsOnDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	table, bucket := awstest.CreateTable(t, cfg, "CatalogTable"), s3test.CreateVersionedBucket(t, cfg)
	ctx := t.Context()
	writer := openCatalog(t, cfg, table, bucket, nil, nil)
	now := time.Now().UTC()
	const servers = 6
	for i := range servers {
		name := fmt.Sprintf("s%d", i)
		if err := writer.AddServer(ctx, warrant.Server{Name: name, URL: "https://" + name + ".example.com/mcp", AddedAt: now, AddedBy: "ops"}, warrant.AuditAppend{}); err != nil {
			t.Fatal(err)
		}
		rec := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: name, Seq: 1, Source: warrant.SourceCrawl, StartedAt: now, FinishedAt: now, By: "crawler"}}
		for _, tool := range []string{"a", "b", "c"} {
			d, c, _ := warrant.DigestTool([]byte(`{"name":"` + tool + `","inputSchema":{"type":"object"}}`))
			rec.Crawl.Observations = append(rec.Crawl.Observations, warrant.Observation{Tool: tool, Digest: d})
			rec.Versions = append(rec.Versions, warrant.Version{Server: name, Tool: tool, Digest: d, Canonical: c, FirstSeenAt: now, FirstSeenBy: "crawler", FirstCrawl: 1})
		}
		if err := writer.RecordCrawl(ctx, rec, warrant.AuditAppend{}); err != nil {
			t.Fatal(err)
		}
		a := rec.Versions[0]
		if err := writer.Decide(ctx, warrant.Decision{Server: name, Tool: a.Tool, Digest: a.Digest, Kind: warrant.DecisionApproved, Actor: "approver", At: now}, warrant.AuditAppend{}); err != nil {
			t.Fatal(err)
		}
	}
	addLargeServer(t, writer, "big", now)
	calls, s3calls := awstest.NewCalls(), awstest.NewCalls()
	reader := openCatalog(t, taskRole(t, table, bucket).Config(t), table, bucket, calls, s3calls)
	calls.Take()
	snap, err := enforce.CatalogSource{Catalog: reader}.Snapshot(ctx, "s3")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tools) != 3 || snap.Tools["a"].Approved == "" || snap.Tools["b"].Approved != "" || snap.Tools["c"].Crawled == "" {
		t.Errorf("snapshot of s3 = %+v", snap.Tools)
	}
	got := calls.Take()
	if want := map[string]int{"GetItem": 2, "Query": 1}; !maps.Equal(got, want) {
		t.Errorf("one refresh of one server of %d: calls %v, want %v (the server, its index, its approvals)", servers, got, want)
	}
	t.Logf("DynamoDB calls per refresh of one served server, catalog of %d servers: %v", servers, got)
	// A server whose index is in the bucket: one GetObject more, and none while the index
	// has not changed (objects are immutable, so the catalog caches them by key).
	for i, wantS3 := range []map[string]int{{"GetObject": 1}, {}} {
		if _, err := (enforce.CatalogSource{Catalog: reader}).Snapshot(ctx, "big"); err != nil {
			t.Fatal(err)
		}
		if got, s3got := calls.Take(), s3calls.Take(); !maps.Equal(got, map[string]int{"GetItem": 2, "Query": 1}) || !maps.Equal(s3got, wantS3) {
			t.Errorf("refresh %d of a server with its index in the bucket: DynamoDB %v, S3 %v; want 2 GetItem + 1 Query, S3 %v", i+1, got, s3got, wantS3)
		}
	}
	if _, err := reader.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	got = calls.Take()
	if want := map[string]int{"GetItem": servers + 1, "Query": 2}; !maps.Equal(got, want) {
		t.Errorf("Tools of %d servers: calls %v, want %v (servers, approvals, each index once)", servers+1, got, want)
	}
	if _, err := (enforce.CatalogSource{Catalog: reader}).Snapshot(ctx, "nope"); !errors.Is(err, enforce.ErrUnknownServer) {
		t.Errorf("snapshot of an unknown server: %v", err)
	}
}
