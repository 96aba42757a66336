package dynamostore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/catalogtest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
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

func TestCatalogConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) warrant.Catalog { return newCatalog(t) })
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
