package dynamostore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// newCatalog returns a catalog on a fresh table created from template.yaml's CatalogTable.
func newCatalog(t *testing.T, opts ...func(*dynamodb.Options)) *dynamostore.Catalog {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "CatalogTable")
	c, err := dynamostore.NewCatalog(t.Context(), dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg, opts...), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCatalogConformance runs the suite on a catalog with its blob store (template.yaml's
// CatalogBlobBucket, on the same endpoint), as the functions are deployed.
func TestCatalogConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) warrant.Catalog { return newStack(t, true).catalog(t, nil, nil) })
}

// TestCatalogLargeCrawl: a first crawl with more new versions than one transaction holds
// is recorded whole (the overflow is staged and becomes visible with the index), and one
// that fails leaves nothing visible, its staged versions adopted by the next crawl.
func TestCatalogLargeCrawl(t *testing.T) {
	c := newCatalog(t)
	ctx := t.Context()
	if err := c.AddServer(ctx, warrant.Server{Name: "big", URL: "https://big.example.com/mcp"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	const n = 150
	rec := warrant.CrawlRecord{Crawl: warrant.Crawl{Server: "big", Seq: 1, Source: warrant.SourceCrawl, By: "crawler"}}
	for i := range n {
		name := fmt.Sprintf("tool_%03d", i)
		b, d := catalogtest.Def(name, "d")
		rec.Crawl.Observations = append(rec.Crawl.Observations, warrant.Observation{Tool: name, Digest: d})
		rec.Versions = append(rec.Versions, warrant.Version{Server: "big", Tool: name, Digest: d, Canonical: b, FirstCrawl: 1})
		rec.Proposals = append(rec.Proposals, warrant.Proposal{Server: "big", Tool: name, Digest: d, Crawl: 1})
	}
	// A crawl that loses its audit head after staging: nothing visible.
	head, _ := c.AuditHead(ctx)
	stale := warrant.AuditAppend{Prev: warrant.AuditHead{Seq: 5, Hash: head.Hash}, Records: catalogtest.Records(warrant.AuditHead{Seq: 5, Hash: head.Hash}, 1, "crawl_observed")}
	if err := c.RecordCrawl(ctx, rec, stale); !errors.Is(err, warrant.ErrConflict) {
		t.Fatalf("crawl on a stale head: %v", err)
	}
	_, last := catalogtest.Def("tool_149", "d")
	if _, err := c.Version(ctx, "big", "tool_149", last); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("a staged version of a failed crawl is visible: %v", err)
	}
	if vs, _ := c.Versions(ctx, "big", "tool_149"); len(vs) != 0 {
		t.Errorf("Versions shows an orphan: %+v", vs)
	}
	if err := c.RecordCrawl(ctx, rec, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1+n, "version_recorded")}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.VersionKeys(ctx, "big")
	if err != nil || len(keys) != n {
		t.Fatalf("%d version keys, %v; want %d", len(keys), err, n)
	}
	if v, err := c.Version(ctx, "big", "tool_149", last); err != nil || v.FirstCrawl != 1 {
		t.Errorf("staged version after the crawl: %+v, %v", v, err)
	}
	if props, _ := c.Proposals(ctx); len(props) != n {
		t.Errorf("%d proposals, want %d", len(props), n)
	}
	if recs, _ := c.AuditRecords(ctx, 0, 1000); len(recs) != 1+n {
		t.Errorf("%d audit records, want %d", len(recs), 1+n)
	}
}

// TestCatalogFormatMarker: opening a catalog only reads the format marker, so a role that
// may only GetItem/Query (the checkpoint function, the ExtMcp container) opens a table no
// one wrote yet and reads it as empty, without a single write call; the first write
// transaction writes the marker; a table recording another format is refused by readers
// and writers alike, including when that marker appears after a writer opened the table.
func TestCatalogFormatMarker(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := t.Context()
	table := awstest.CreateTable(t, cfg, "CatalogTable")
	calls := awstest.NewCalls()
	count := func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) }
	open := func() (*dynamostore.Catalog, error) {
		return dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg, count), Table: table})
	}
	reader, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if srvs, err := reader.Servers(ctx); err != nil || len(srvs) != 0 {
		t.Errorf("Servers of an unwritten table = %v, %v", srvs, err)
	}
	if tools, err := reader.Tools(ctx); err != nil || len(tools) != 0 {
		t.Errorf("Tools of an unwritten table = %v, %v", tools, err)
	}
	if _, err := reader.ServerTools(ctx, "s"); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("ServerTools of an unwritten table: %v, want ErrNotFound", err)
	}
	if h, err := reader.AuditHead(ctx); err != nil || h != warrant.Genesis() {
		t.Errorf("AuditHead of an unwritten table = %v, %v", h, err)
	}
	if recs, err := reader.AuditRecords(ctx, 0, 10); err != nil || len(recs) != 0 {
		t.Errorf("AuditRecords of an unwritten table = %v, %v", recs, err)
	}
	got := calls.Take()
	for op := range got {
		if op != "GetItem" && op != "Query" {
			t.Errorf("a reader of an unwritten table called %s (calls %v)", op, got)
		}
	}
	if got["GetItem"] < 1 {
		t.Errorf("calls %v: the marker was not read", got)
	}

	// The first write carries the marker; later ones do not need it.
	writer, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.AddServer(ctx, warrant.Server{Name: "s", URL: "https://s.example.com/mcp"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	if got := calls.Take(); got["PutItem"] != 0 || got["TransactWriteItems"] != 1 {
		t.Errorf("first write: calls %v, want one TransactWriteItems and no PutItem", got)
	}
	marker := func() string {
		t.Helper()
		out, err := dynamodb.NewFromConfig(cfg).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "SCHEMA"}, "sk": &types.AttributeValueMemberS{Value: "SCHEMA"}}})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := out.Item["version"].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	if v := marker(); v != dynamostore.CatalogFormatVersion {
		t.Fatalf("marker after the first write = %q, want %q", v, dynamostore.CatalogFormatVersion)
	}
	if _, err := open(); err != nil {
		t.Errorf("reopening a marked table: %v", err)
	}

	// Another format: refused on open, and by a writer that opened the table before the
	// marker was there; nothing of the refused write is stored.
	put := func(table, version string) {
		t.Helper()
		_, err := dynamodb.NewFromConfig(cfg).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "SCHEMA"}, "sk": &types.AttributeValueMemberS{Value: "SCHEMA"},
				"version": &types.AttributeValueMemberS{Value: version}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	put(table, "catalog/0")
	if _, err := open(); err == nil || !strings.Contains(err.Error(), `"catalog/0"`) {
		t.Errorf("opening a catalog/0 table: %v, want a refusal naming the format", err)
	}
	late := awstest.CreateTable(t, cfg, "CatalogTable")
	early, err := dynamostore.NewCatalog(ctx, dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg), Table: late})
	if err != nil {
		t.Fatal(err)
	}
	put(late, "catalog/2")
	err = early.AddServer(ctx, warrant.Server{Name: "s", URL: "https://s.example.com/mcp"}, warrant.AuditAppend{})
	if err == nil || !strings.Contains(err.Error(), `"catalog/2"`) {
		t.Errorf("writing a table that turned catalog/2: %v, want a refusal naming the format", err)
	}
	if _, err := early.Server(ctx, "s"); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("the refused write stored its server: %v", err)
	}
}
