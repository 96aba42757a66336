package warrantaws_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// TestLargeDefinitions is issue 14's crawl through the functions, each as its template
// role under the harness's IAM and DynamoDB limits: one server with 60 tools of ~73 KB and
// one of 2 MB is crawled (its definitions go to the catalog's bucket), the 2 MB tool and a
// 73 KB one are shown and approved through the approvals API (answers within Lambda's
// limits), the next crawl of the server is recorded, and the ExtMcp processor, as its ECS
// task role, serves exactly the two approved definitions of the live listing.
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
	ok := call(t, api, apiEvent(t, "approvals-decide.json", alice, "weather", "huge", body), 201)
	// And one of the 73 KB tools, graded first through the diff route (a first version).
	diff := call(t, api, apiEvent(t, "approvals-diff.json", alice, "weather", "tool_00", nil), 200)
	d00 := warrant.Digest(diff["to"].(string))
	if def, _ := json.Marshal(diff["toDefinition"]); warrant.DigestOf(def) != d00 {
		t.Errorf("the diff's definition of tool_00 does not hash to %s", d00)
	}
	body = map[string]any{"decision": "approved", "digest": d00, "auditHead": ok["auditHead"]}
	call(t, api, apiEvent(t, "approvals-decide.json", alice, "weather", "tool_00", body), 201)
	if props := call(t, api, apiEvent(t, "approvals-proposals.json", alice, "", "", nil), 200); len(props["proposals"].([]any)) != 59 {
		t.Errorf("%d proposals left, want 59", len(props["proposals"].([]any)))
	}

	res, err = crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-manual.json")))
	if err != nil || res.Recorded != 1 || len(res.Servers[0].NewVersions) != 0 {
		t.Fatalf("the next crawl of the server: %+v, %v", res, err)
	}

	// The processor runs as its ECS task role (infra/ecs's policy, assumed): it reads the
	// table and the catalog's objects, nothing else.
	task := awstest.RoleWith(t, "ProcessorTaskRole", awstest.PolicyFile(t, "infra/ecs/processor-task-role-policy.json", map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCOUNT_ID": awstest.Account, "CATALOG_TABLE": s.c.CatalogTable, "CATALOG_BLOB_BUCKET": s.c.CatalogBlobBucket,
		"CONFIG_FILE_SYSTEM_ID": "fs-0", "CONFIG_ACCESS_POINT_ID": "fsap-0"}), nil)
	cat, err := awsapp.Catalog(ctx, task.Config(t), awsapp.CatalogOptions{Table: s.c.CatalogTable, BlobBucket: s.c.CatalogBlobBucket, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := enforce.New(enforce.Config{Servers: []string{"weather"}, Source: enforce.CatalogSource{Catalog: cat}, Refresh: time.Hour, Staleness: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(ctx)
	defer p.Close(t.Context())
	// The live listing, all 61 tools: the two approved stay, the 59 others are dropped.
	listing := []byte(`{"tools":[` + strings.Join(append(defs, string(huge)), ",") + `]}`)
	got := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: "tools/list", Services: []string{"weather"}, Body: listing})
	if got.Outcome != enforce.OutcomeMutated || got.Dropped != 59 || !bytes.Equal(got.Mutated, []byte(`{"tools":[`+defs[0]+`,`+string(huge)+`]}`)) {
		t.Errorf("listing: %v, %d dropped; want the 59 unapproved tools dropped and the two approved kept byte for byte", got.Outcome, got.Dropped)
	}
	if d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: "tools/call", Services: []string{"weather"}, Body: []byte(`{"name":"tool_00"}`)}); d.Outcome != enforce.OutcomePass {
		t.Errorf("call of the approved 73 KB tool: %v %s", d.Outcome, d.Reason)
	}
	if d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: "tools/call", Services: []string{"weather"}, Body: []byte(`{"name":"tool_01"}`)}); d.Outcome == enforce.OutcomePass {
		t.Error("call of an unapproved tool passed")
	}
	if d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseRequest, Method: "tools/call", Services: []string{"weather"}, Body: []byte(`{"name":"huge"}`)}); d.Outcome != enforce.OutcomePass {
		t.Errorf("call of the approved 2 MB tool: %v %s", d.Outcome, d.Reason)
	}
	if rep := verifyAll(t, s.warrant(t, "test", awsapp.WarrantOptions{})); !rep.OK() {
		t.Errorf("verify: %+v", rep)
	}
}

// TestAnswersWithinLambdaLimits: definitions near the crawl's 10 MiB cap never make the
// approvals function return what Lambda refuses (a response over 6 MB, which API Gateway
// turns into a bare 500). A diff whose two definitions do not fit one answer carries the
// grading and definitionsOmitted, and the --remote client reads each version on its own
// and checks it against its digest; a definition too large for any answer is a 413 that
// says why.
func TestAnswersWithinLambdaLimits(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	v1, d1 := catalogtest.LargeDef("big", 3200<<10)
	v2 := bytes.Replace(v1, []byte(`"inputSchema":{"type":"object"}`), []byte(`"inputSchema":{"title":"v2","type":"object"}`), 1)
	d2 := warrant.DigestOf(v2)
	giant, _ := catalogtest.LargeDef("giant", 6500<<10)
	crawl := s.crawl(t, awsapp.WarrantOptions{})
	s.mcp.SetTools(string(v1))
	if res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil || res.Recorded != 1 {
		t.Fatalf("crawl 1: %+v, %v", res, err)
	}
	s.mcp.SetTools(string(v2), string(giant))
	if res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil || res.Recorded != 1 || len(res.Servers[0].NewVersions) != 2 {
		t.Fatalf("crawl 2: %+v, %v", res, err)
	}
	api := s.approvals(t, awsapp.WarrantOptions{}) // runs through awstest.LambdaHTTP
	diff := call(t, api, apiEvent(t, "approvals-diff.json", alice, "weather", "big", nil), 200)
	if diff["definitionsOmitted"] != true || diff["toDefinition"] != nil || diff["from"] != string(d1) || diff["to"] != string(d2) || diff["grade"] == nil {
		t.Errorf("diff of two 3.2 MB versions: omitted %v, from %v, to %v, grade %v", diff["definitionsOmitted"], diff["from"], diff["to"], diff["grade"])
	}
	tooBig := call(t, api, apiEvent(t, "approvals-version.json", alice, "weather", "giant", nil), 413)
	if msg, _ := tooBig["error"].(string); !strings.Contains(msg, "Lambda cannot return it") {
		t.Errorf("version of a 6.5 MB definition: %v", tooBig)
	}
	// The operator's client, through the SigV4-verifying gateway stand-in.
	gw := &gateway{region: "us-east-1", fn: api, callers: map[string]caller{"AKIDALICE": {secret: "alice-secret", arn: alice, decide: true}}}
	cfg := s.cfg.Copy()
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret"}, nil
	})
	remote, err := approvalsapi.NewRemote(cfg, gw.start(t))
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Diff(ctx, "weather", "big", "", "")
	if err != nil || !bytes.Equal(d.FromDefinition, v1) || !bytes.Equal(d.ToDefinition, v2) {
		t.Errorf("Remote.Diff with the definitions omitted: %v (from %d bytes, to %d bytes)", err, len(d.FromDefinition), len(d.ToDefinition))
	}
}
