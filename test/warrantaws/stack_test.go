// Package warrantaws_test runs toolwarrant's AWS functions together: the crawl, approvals
// and checkpoint handlers in-process against moto (DynamoDB, S3) and KMS (kmstest), a
// fixture MCP server on loopback, and the independent verifiers (audit.Verify,
// checkpoint.Verify, iamattest) as the oracle; and one end-to-end run of the three built
// bootstraps under aws-lambda-rie.
package warrantaws_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

const (
	crawlRole = "arn:aws:iam::123456789012:role/dev-toolwarrant-crawl"
	alice     = "arn:aws:sts::123456789012:assumed-role/toolwarrant-approver/alice@example.com"
)

// stack is one deployment (catalog table, KMS key, checkpoint bucket, catalog object
// bucket, the three function roles: awsapptest.Deploy) and a fixture MCP server. cfg is
// the administrator's (what the oracle reads with); each function runs as its role.
type stack struct {
	cfg    aws.Config
	dep    *awsapptest.Deployment
	c      config.WarrantAWS
	mcp    *fixture.Server
	mcpURL string
}

// withRetryer gives cfg a short, bounded retry policy.
func withRetryer(cfg aws.Config) aws.Config {
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 5 * time.Millisecond, nil })
		})
	}
	return cfg
}

func tool(name, desc string) string {
	return fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`, name, desc)
}

func newStack(t testing.TB) *stack {
	t.Helper()
	cfg := withRetryer(awstest.Config(t))
	dep := awsapptest.Deploy(t)
	table, key, bucket := dep.Table, dep.Key, dep.Bucket
	mcp := fixture.New(tool("get_forecast", "Forecast for a city."), tool("get_alerts", "Weather alerts for a city."))
	srv := httptest.NewServer(mcp)
	t.Cleanup(srv.Close)
	s := &stack{cfg: cfg, dep: dep, mcp: mcp, mcpURL: srv.URL + "/mcp"}
	s.c = config.WarrantAWS{CatalogTable: table, LogKey: key, CheckpointBucket: bucket, CatalogBlobBucket: dep.BlobBucket,
		S3PathStyle: true, CrawlRole: crawlRole, MaxAttempts: 3, CheckpointKey: dep.CheckpointKey, CheckpointOrigin: dep.Origin,
		DeadlineMargin: time.Second, Servers: []warrant.Server{{Name: "weather", URL: s.mcpURL, AllowPrivate: true}}}
	return s
}

func (s *stack) opts(t testing.TB, o awsapp.WarrantOptions) awsapp.WarrantOptions {
	t.Helper()
	o.KMS = append([]func(*kms.Options){kmstest.Options(t)}, o.KMS...)
	return o
}

func (s *stack) warrant(t testing.TB, identity string, o awsapp.WarrantOptions) *awsapp.Warrant {
	t.Helper()
	// Each function as its role; anything else (the tests' reader and checkpointer) as
	// the checkpoint role, which reads the catalog and writes checkpoints.
	role := map[string]string{crawlRole: "CrawlRole", "approvals": "ApprovalsRole"}[identity]
	if role == "" {
		role = "CheckpointRole"
	}
	w, err := awsapp.NewWarrant(t.Context(), withRetryer(s.dep.Config(t, role)), s.c, identity, slog.New(slog.DiscardHandler), s.opts(t, o))
	if err != nil {
		t.Fatalf("NewWarrant: %v", err)
	}
	return w
}

func (s *stack) crawl(t testing.TB, o awsapp.WarrantOptions) func(context.Context, json.RawMessage) (awsapp.CrawlResult, error) {
	t.Helper()
	bounds, _ := config.LoadToolwarrant(func(string) string { return "" })
	d := awsapp.CrawlDeps{Warrant: s.warrant(t, crawlRole, o), Config: s.c, Bounds: bounds, Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler)}
	if err := awsapp.RegisterServers(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return awsapp.CrawlHandler(d)
}

func (s *stack) approvals(t *testing.T, o awsapp.WarrantOptions) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	t.Helper()
	return awstest.LambdaHTTP(httpadapter.NewV2(awsapp.ApprovalsHandler(s.warrant(t, "approvals", o), crawlRole, s.c.HeaderSecrets, slog.New(slog.DiscardHandler))).ProxyWithContext)
}

func apiEvent(t *testing.T, name, who, server, tool string, body any) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(testenv.Event(t, name), &ev); err != nil {
		t.Fatal(err)
	}
	if server != "" {
		ev.RawPath = strings.NewReplacer("/weather/", "/"+server+"/", "/get_forecast/", "/"+tool+"/").Replace(ev.RawPath)
		ev.RequestContext.HTTP.Path = ev.RawPath
		ev.PathParameters = map[string]string{"server": server, "tool": tool}
	}
	if who == "" {
		ev.RequestContext.Authorizer = nil
	} else {
		ev.RequestContext.Authorizer.IAM.UserARN = who
	}
	if body != nil {
		b, _ := json.Marshal(body)
		ev.Body = string(b)
	}
	return ev
}

func call(t *testing.T, h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), ev events.APIGatewayV2HTTPRequest, status int) map[string]any {
	t.Helper()
	resp, err := h(t.Context(), ev)
	if err != nil {
		t.Fatalf("%s %s: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	body := resp.Body
	if resp.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(body)
		body = string(b)
	}
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", ev.RequestContext.HTTP.Method, ev.RawPath, resp.StatusCode, status, body)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return out
}

func headOf(m map[string]any) warrant.AuditHead {
	h := m["auditHead"].(map[string]any)
	return warrant.AuditHead{Seq: int64(h["seq"].(float64)), Hash: h["hash"].(string)}
}

// records streams the whole audit log of the catalog, in pages.
func records(ctx context.Context, cat warrant.Catalog) iter.Seq2[warrant.AuditRecord, error] {
	return func(yield func(warrant.AuditRecord, error) bool) {
		var after int64
		for range 100000 {
			recs, err := cat.AuditRecords(ctx, after, 100)
			if err != nil {
				yield(warrant.AuditRecord{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				after = r.Seq
			}
			if len(recs) < 100 {
				return
			}
		}
	}
}

// verifyAll is the oracle: the whole log against the KMS public key alone, IAM-attested
// decisions, and every checkpoint in the bucket.
func verifyAll(t *testing.T, w *awsapp.Warrant) audit.Report {
	t.Helper()
	opts := audit.Options{Keys: checkpoint.Keys(w.Signer.KeyID(), w.Signer.Public()), Check: iamattest.Checker(nil, crawlRole)}
	rep, _, err := checkpoint.Verify(t.Context(), records(t.Context(), w.Catalog), checkpoint.Store{Blobs: w.Blobs, Name: "s3://" + w.Blobs.Bucket()}, opts)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

func digestOf(t *testing.T, w *awsapp.Warrant, server, tool string) warrant.Digest {
	t.Helper()
	recs, err := w.Catalog.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Server == server && r.Tool == tool {
			return r.Current
		}
	}
	t.Fatalf("no tool %s/%s", server, tool)
	return ""
}
