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

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestProcessorOnDynamoDB: the processor reads the DynamoDB catalog (template.yaml's
// CatalogTable, on moto) through CatalogSource, decides from it, and makes only the calls
// infra/ecs/processor-task-role-policy.json allows (GetItem, Query).
func TestProcessorOnDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "CatalogTable")
	ctx := t.Context()
	writer, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg), Table: table})
	if err != nil {
		t.Fatal(err)
	}
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

	// The processor runs as its ECS task role: infra/ecs's policy, assumed.
	task := awstest.RoleWith(t, "ProcessorTaskRole", awstest.PolicyFile(t, "infra/ecs/processor-task-role-policy.json", map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCOUNT_ID": awstest.Account, "CATALOG_TABLE": table, "CONFIG_FILE_SYSTEM_ID": "fs-0", "CONFIG_ACCESS_POINT_ID": "fsap-0"}), nil)
	calls := awstest.NewCalls()
	reader, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Table: table,
		Client: dynamodb.NewFromConfig(task.Config(t), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) })})
	if err != nil {
		t.Fatal(err)
	}
	p, err := extmcp.New(extmcp.Config{Servers: []string{"wx"}, Source: extmcp.CatalogSource{Catalog: reader}, Refresh: time.Hour, Staleness: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	defer p.Close(context.Background())
	if !p.Fresh() {
		t.Fatal("the processor could not read the DynamoDB catalog")
	}
	got := p.ListTools(ctx, []string{"wx"}, []byte(`{"tools":[`+v1+`,`+alerts+`]}`))
	if got.Outcome != extmcp.OutcomeMutated || string(got.Mutated) != `{"tools":[`+v1+`]}` {
		t.Fatalf("list: %v %s", got.Outcome, got.Mutated)
	}
	if d := p.CallTool(ctx, []string{"wx"}, []byte(`{"name":"get_forecast"}`)); d.Outcome != extmcp.OutcomePass {
		t.Errorf("call approved: %s", d.Reason)
	}
	if d := p.CallTool(ctx, []string{"wx"}, []byte(`{"name":"get_alerts"}`)); d.Cause != extmcp.CauseUnapproved {
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
			allowed[strings.TrimPrefix(a, "dynamodb:")] = true
		}
	}
	counts := calls.Take()
	for op := range counts {
		if !allowed[op] {
			t.Errorf("the processor called %s, which its task role does not allow (calls: %v)", op, awstest.Ops(counts))
		}
	}
	t.Logf("DynamoDB calls for start-up and one snapshot: %v", counts)
}

// TestRefreshReadsOnDynamoDB: one refresh of one served server reads that server's state
// only — a fixed number of calls however many servers the catalog holds — and Tools reads
// each server's index once, with no second read of an item it already has.
func TestRefreshReadsOnDynamoDB(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "CatalogTable")
	ctx := t.Context()
	writer, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg), Table: table})
	if err != nil {
		t.Fatal(err)
	}
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
	calls := awstest.NewCalls()
	reader, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Table: table,
		Client: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) })})
	if err != nil {
		t.Fatal(err)
	}
	calls.Take()
	snap, err := extmcp.CatalogSource{Catalog: reader}.Snapshot(ctx, "s3")
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
	if _, err := reader.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	got = calls.Take()
	if want := map[string]int{"GetItem": servers, "Query": 2}; !maps.Equal(got, want) {
		t.Errorf("Tools of %d servers: calls %v, want %v (servers, approvals, each index once)", servers, got, want)
	}
	if _, err := (extmcp.CatalogSource{Catalog: reader}).Snapshot(ctx, "nope"); !errors.Is(err, extmcp.ErrUnknownServer) {
		t.Errorf("snapshot of an unknown server: %v", err)
	}
}
