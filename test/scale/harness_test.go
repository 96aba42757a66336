package scale_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The crawl function's settings, as template.yaml sets them (its CrawlConcurrency default,
// TOOLWARRANT_CRAWL_TIMEOUT, CRAWL_DEADLINE_MARGIN) and its configured limits.
const (
	crawlConcurrency = "8"
	crawlTimeout     = "30s"
	deadlineMargin   = "15s"
	// lambdaTimeout is the crawl function's Timeout in template.yaml; lambdaMemoryGB its
	// MemorySize.
	lambdaTimeout  = 300 * time.Second
	lambdaMemoryGB = 0.5
	// invocationBound bounds one measured invocation here (its context's deadline): not the
	// function's timeout, so a crawl slower than that on this machine is measured, not cut.
	invocationBound = 10 * time.Minute
)

// deployment is one fresh toolwarrant stack (awsapptest.Deploy: the catalog table, keys,
// buckets and the template's roles, the interceptor's too) and a fleet of fake MCP servers.
type deployment struct {
	dep   *awsapptest.Deployment
	fleet *fleet
	env   map[string]string
	// ddb meters every DynamoDB call of the functions built here; kms counts KMS calls.
	ddb *meter
	kms *timer
}

func newDeployment(t testing.TB, servers, tools int) *deployment {
	t.Helper()
	d := &deployment{dep: awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"}), fleet: newFleet(t, servers, tools),
		ddb: newMeter(), kms: &timer{}}
	list, err := json.Marshal(serversJSON(d.fleet.catalog()))
	if err != nil {
		t.Fatal(err)
	}
	d.env = map[string]string{"CATALOG_TABLE": d.dep.Table, "CATALOG_BLOB_BUCKET": d.dep.BlobBucket, "CHECKPOINT_S3_PATH_STYLE": "1",
		"AUDIT_KMS_KEY": d.dep.Key, "CRAWL_ROLE_ARN": d.dep.CrawlRoleARN(), "TOOLWARRANT_SERVERS": string(list),
		"TOOLWARRANT_CRAWL_CONCURRENCY": crawlConcurrency, "TOOLWARRANT_CRAWL_TIMEOUT": crawlTimeout, "CRAWL_DEADLINE_MARGIN": deadlineMargin}
	return d
}

// serversJSON is TOOLWARRANT_SERVERS's form of servers.
func serversJSON(servers []warrant.Server) []map[string]any {
	out := make([]map[string]any, len(servers))
	for i, s := range servers {
		out[i] = map[string]any{"name": s.Name, "url": s.URL, "allowPrivate": s.AllowPrivate}
	}
	return out
}

func (d *deployment) options(t testing.TB) awsapp.WarrantOptions {
	return awsapp.WarrantOptions{DynamoDB: []func(*dynamodb.Options){d.ddb.Option},
		KMS: []func(*kms.Options){kmstest.Options(t), func(o *kms.Options) { o.APIOptions = append(o.APIOptions, d.kms.middleware) }}}
}

// take ends a step: its DynamoDB tally and its KMS calls and time.
func (d *deployment) take(s *step) {
	s.T = d.ddb.Take()
	s.KMS, s.KMSTime = d.kms.Take()
}

// crawlFunction is the crawl Lambda's cold start as functions/crawl does it: the
// configuration from its environment, the service as the crawl role, RegisterServers (the
// TOOLWARRANT_SERVERS catalog), then the handler. The registration is returned as a step.
func (d *deployment) crawlFunction(t testing.TB) (func(context.Context, json.RawMessage) (awsapp.CrawlResult, error), step) {
	t.Helper()
	getenv := func(k string) string { return d.env[k] }
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{CrawlRole: true})
	if err != nil {
		t.Fatal(err)
	}
	bounds, err := config.LoadToolwarrant(getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := d.dep.Config(t, "CrawlRole")
	d.take(&step{})
	start := time.Now()
	w, err := awsapp.ColdStart(t.Context(), c, &cfg, c.CrawlRole, slog.New(slog.DiscardHandler), d.options(t))
	if err != nil {
		t.Fatal(err)
	}
	deps := awsapp.CrawlDeps{Warrant: w, Config: c, Bounds: bounds, Getenv: getenv, Secrets: awsapp.NewSecrets(w.AWS), Logger: slog.New(slog.DiscardHandler)}
	if err := awsapp.RegisterServers(t.Context(), deps); err != nil {
		t.Fatal(err)
	}
	s := step{Name: "cold start (RegisterServers)", Wall: time.Since(start), Units: len(c.Servers)}
	d.take(&s)
	return awsapp.CrawlHandler(deps), s
}

// crawl is one invocation of the crawl function, as EventBridge's schedule sends it (every
// server), bounded by invocationBound. Its wall time is split at the fleet's last
// tools/list answer: listing (the crawler, concurrently) before, recording (one server
// after the other) after.
type crawlStep struct {
	step
	List, Record time.Duration
	Result       awsapp.CrawlResult
}

func (d *deployment) crawl(t testing.TB, h func(context.Context, json.RawMessage) (awsapp.CrawlResult, error), name string) crawlStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), invocationBound)
	defer cancel()
	d.take(&step{})
	d.fleet.lastList.Store(0)
	start := time.Now()
	res, err := h(ctx, json.RawMessage(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`))
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.Failed != 0 {
		for _, s := range res.Servers {
			if !s.OK {
				t.Fatalf("%s: %d of %d servers failed; %s: %s", name, res.Failed, len(res.Servers), s.Server, s.Error)
			}
		}
	}
	cs := crawlStep{step: step{Name: name, Wall: wall, Units: res.Recorded}, Result: res}
	d.take(&cs.step)
	if last := d.fleet.lastList.Load(); last > 0 {
		cs.List = time.Unix(0, last).Sub(start)
		cs.Record = wall - cs.List
	}
	return cs
}

// newVersions counts the versions a crawl recorded.
func (c crawlStep) newVersions() int {
	n := 0
	for _, s := range c.Result.Servers {
		n += len(s.NewVersions)
	}
	return n
}

// approveDirect approves the first n tools of every server straight through the catalog
// (as the approvals role, without audit entries), so a replica's refresh reads approvals as
// a deployment in use has them; a decision through the service costs a KMS signature and
// an audit append each, which would dominate the setup at this size.
func (d *deployment) approveDirect(t testing.TB, n int) {
	t.Helper()
	cat, err := awsapp.Catalog(t.Context(), d.dep.Config(t, "ApprovalsRole"), awsapp.CatalogOptions{Table: d.dep.Table, BlobBucket: d.dep.BlobBucket, S3PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range d.fleet.servers {
		tools := d.toolsOf(t, i)
		for _, raw := range tools[:min(n, len(tools))] {
			dg, _, _ := warrant.DigestTool(raw.Raw)
			if err := cat.Decide(t.Context(), warrant.Decision{Server: name(i), Tool: raw.Name, Digest: dg, Kind: warrant.DecisionApproved,
				Actor: "arn:aws:sts::" + awstest.Account + ":assumed-role/toolwarrant-approver/alice@example.com", At: now}, warrant.AuditAppend{}); err != nil {
				t.Fatalf("approve %s/%s: %v", name(i), raw.Name, err)
			}
		}
	}
}

// refresh is one approvals refresh of an ExtMcp replica serving every server of the
// catalog: enforce.Processor over enforce.CatalogSource, reading as the ECS task role
// (infra/ecs/processor-task-role-policy.json). The processor's first read (Start) is not
// counted; the step is one Refresh after it.
func (d *deployment) refresh(t testing.TB, servers int) step {
	t.Helper()
	role := awstest.RoleWith(t, "ProcessorTaskRole", awstest.PolicyFile(t, "infra/ecs/processor-task-role-policy.json", map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCOUNT_ID": awstest.Account, "CATALOG_TABLE": d.dep.Table, "CATALOG_BLOB_BUCKET": d.dep.BlobBucket,
		"CONFIG_FILE_SYSTEM_ID": "fs-0", "CONFIG_ACCESS_POINT_ID": "fsap-0"}), nil)
	m := newMeter()
	cat, err := awsapp.Catalog(t.Context(), role.Config(t), awsapp.CatalogOptions{Table: d.dep.Table, BlobBucket: d.dep.BlobBucket, S3PathStyle: true,
		DynamoDB: []func(*dynamodb.Options){m.Option}})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, servers)
	for i := range names {
		names[i] = name(i)
	}
	p, err := enforce.New(enforce.Config{Servers: names, Source: enforce.CatalogFeedSource{CatalogSource: enforce.CatalogSource{Catalog: cat}}, Refresh: time.Hour, Staleness: time.Hour, LoadTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), invocationBound)
	defer cancel()
	p.Start(ctx)
	defer p.Close(context.Background())
	if !p.Fresh() {
		t.Fatal("the replica could not read the catalog")
	}
	m.Take()
	start := time.Now()
	p.Refresh(ctx)
	s := step{Name: fmt.Sprintf("replica refresh (%d servers served)", servers), Wall: time.Since(start), Units: servers}
	s.T = m.Take()
	if !p.Fresh() {
		t.Fatal("the replica's refresh failed")
	}
	return s
}

// appends measures the audit log's append rate: writers concurrent enforcement points (each
// its own service as the interceptor role, as separate Lambda instances are) each append
// per decision windows with warrant.Service.RecordDecisions — one signed entry each.
// Sequenced, as deployed: queued and integrated in batches by the sequencer lease's holder
// (dynamostore, "Sequenced appends"). Not sequenced, the baseline: chained from the single
// HEAD item every append conditionally updates, retried by the service when another append
// wins. Bounded by count and by invocationBound. gaveUp counts appends that lost the race
// on every attempt (or, sequenced, were queued but not sequenced in time).
func (d *deployment) appends(t testing.TB, writers, per int, sequenced bool) (s step, gaveUp int) {
	t.Helper()
	ws := make([]*awsapp.Warrant, writers)
	for i := range ws {
		cfg := d.dep.Config(t, "InterceptorRole")
		w, err := awsapp.NewWarrant(t.Context(), cfg, config.WarrantAWS{CatalogTable: d.dep.Table, LogKey: d.dep.Key, CatalogBlobBucket: d.dep.BlobBucket, S3PathStyle: true, MaxAttempts: 3},
			"arn:aws:sts::"+awstest.Account+":assumed-role/interceptor/"+strconv.Itoa(i), slog.New(slog.DiscardHandler), d.options(t))
		if err != nil {
			t.Fatal(err)
		}
		if !sequenced {
			if w.Service, err = warrant.New(warrant.Config{Catalog: w.Catalog, Auditor: &audit.Chainer{Signer: w.Signer}, Identity: w.Identity, MaxAttempts: 3}); err != nil {
				t.Fatal(err)
			}
		}
		ws[i] = w
	}
	ctx, cancel := context.WithTimeout(t.Context(), invocationBound)
	defer cancel()
	d.take(&step{})
	var mu sync.Mutex
	var errs []error
	ok := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i, w := range ws {
		wg.Go(func() {
			for j := range per {
				now := time.Now().UTC()
				win := warrant.DecisionWindow{Point: "agentcore", Instance: "scale-" + strconv.Itoa(i), From: now.Add(-time.Minute), To: now,
					Records: []warrant.DecisionCount{{Server: name(j % max(1, len(d.fleet.servers))), Tool: "s0000_t0", Method: "tools/call", Outcome: "allowed", Count: 1}}}
				err := w.Service.RecordDecisions(ctx, win)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, warrant.ErrConflict), sequenced && errors.Is(err, warrant.ErrQueued):
					gaveUp++
				default:
					errs = append(errs, err)
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("appends: %v", err)
	}
	how := "through the HEAD"
	if sequenced {
		how = "sequenced"
	}
	s = step{Name: fmt.Sprintf("audit appends %s (%d writers × %d)", how, writers, per), Wall: time.Since(start), Units: ok}
	d.take(&s)
	return s, gaveUp
}

// toolsOf returns the tools server i lists, as the crawler passes them to Ingest.
func (d *deployment) toolsOf(t testing.TB, i int) []warrant.RawTool {
	t.Helper()
	var out []warrant.RawTool
	for _, raw := range d.fleet.defs[i] {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, warrant.RawTool{Name: v.Name, Raw: json.RawMessage(raw)})
	}
	return out
}
