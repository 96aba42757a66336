package warrantaws_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/catalogtest"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestLargeDefinitions is issue 14's crawl through the functions: one server with 60 tools
// of ~73 KB and one of 2 MB is crawled (its definitions go to the catalog's bucket), the
// 2 MB definition is shown and approved through the approvals API, the next crawl of the
// server is recorded, and the ExtMcp processor's catalog source serves the approval.
func TestLargeDefinitions(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	var defs []string
	for i := range 60 {
		b, _ := catalogtest.LargeDef(fmt.Sprintf("tool_%02d", i), 73<<10+i)
		defs = append(defs, string(b))
	}
	huge, hugeDigest := catalogtest.LargeDef("huge", 2<<20)
	s.mcp.SetTools(append(defs, string(huge))...)
	s.mcp.PageSize = 25

	puts := awstest.NewCalls()
	crawl := s.crawl(t, awsapp.WarrantOptions{S3: []func(*s3.Options){func(o *s3.Options) { o.APIOptions = append(o.APIOptions, puts.Middleware) }}})
	res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json")))
	if err != nil || res.Recorded != 1 || len(res.Servers[0].NewVersions) != 61 {
		t.Fatalf("crawl of 60 tools of ~73 KB and one of 2 MB: %+v, %v", res, err)
	}
	if got := puts.Take(); got["PutObject"] != 61 {
		t.Errorf("S3 calls of the crawl: %v; want one PutObject per definition", got)
	}

	api := s.approvals(t, awsapp.WarrantOptions{})
	show := call(t, api, apiEvent(t, "approvals-version.json", alice, "weather", "huge", nil), 200)
	def, _ := json.Marshal(show["definition"])
	if got := warrant.DigestOf(def); got != hugeDigest || show["digest"] != string(hugeDigest) {
		t.Errorf("the 2 MB definition shown by the API hashes to %s, want %s", got, hugeDigest)
	}
	body := map[string]any{"decision": "approved", "digest": hugeDigest, "auditHead": headOf(show)}
	call(t, api, apiEvent(t, "approvals-decide.json", alice, "weather", "huge", body), 201)

	res, err = crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-manual.json")))
	if err != nil || res.Recorded != 1 || len(res.Servers[0].NewVersions) != 0 {
		t.Fatalf("the next crawl of the server: %+v, %v", res, err)
	}

	cat, err := awsapp.Catalog(ctx, s.cfg, awsapp.CatalogOptions{Table: s.c.CatalogTable, BlobBucket: s.c.CatalogBlobBucket, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := extmcp.New(extmcp.Config{Servers: []string{"weather"}, Source: extmcp.CatalogSource{Catalog: cat}, Refresh: time.Hour, Staleness: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	defer p.Close(t.Context())
	listing := []byte(`{"tools":[` + string(huge) + `,` + defs[0] + `]}`)
	if got := p.ListTools(ctx, []string{"weather"}, listing); got.Outcome != extmcp.OutcomeMutated || got.Dropped != 1 {
		t.Errorf("listing: %v, %d dropped; want the unapproved tool dropped", got.Outcome, got.Dropped)
	}
	if d := p.CallTool(ctx, []string{"weather"}, []byte(`{"name":"huge"}`)); d.Outcome != extmcp.OutcomePass {
		t.Errorf("call of the approved 2 MB tool: %v %s", d.Outcome, d.Reason)
	}
	if rep := verifyAll(t, s.warrant(t, "test", awsapp.WarrantOptions{})); !rep.OK() {
		t.Errorf("verify: %+v", rep)
	}
}
