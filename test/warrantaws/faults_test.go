package warrantaws_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// outage fails every KMS Sign while down is set: the request is sent, the answer lost
// (every SDK attempt), as when KMS is unreachable or failing.
func outage(down *atomic.Bool) func(*kms.Options) {
	f := &awstest.Fault{Operation: "Sign", Fail: func(int64) bool { return down.Load() }}
	return func(o *kms.Options) { o.APIOptions = append(o.APIOptions, f.Middleware) }
}

// TestKMSOutageFailsClosed: with KMS down, a crawl and an approval record nothing, report
// the error (a failed server outcome; 503 with Retry-After), and the chain stays
// verifiable; once KMS is back both succeed.
func TestKMSOutageFailsClosed(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	var down atomic.Bool
	o := awsapp.WarrantOptions{KMS: []func(*kms.Options){outage(&down)}}
	crawl := s.crawl(t, o)
	api := s.approvals(t, o)
	w := s.warrant(t, "test", awsapp.WarrantOptions{})
	if _, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil {
		t.Fatal(err)
	}
	head, _ := w.Catalog.AuditHead(ctx)

	down.Store(true)
	s.mcp.SetTools(tool("get_forecast", "changed while KMS is down"))
	res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-manual.json")))
	if err != nil || res.Failed != 1 || res.Recorded != 0 || !strings.Contains(res.Servers[0].Error, "signer unavailable") {
		t.Fatalf("crawl during the outage: %+v, %v", res, err)
	}
	d := digestOf(t, w, "weather", "get_forecast")
	resp, err := api(ctx, apiEvent(t, "approvals-decide.json", alice, "weather", "get_forecast", map[string]any{"decision": "approved", "digest": d, "auditHead": head}))
	if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || !strings.Contains(resp.Body, "nothing was recorded") {
		t.Fatalf("approval during the outage: %d %v %s %v", resp.StatusCode, resp.Headers, resp.Body, err)
	}
	if h, _ := w.Catalog.AuditHead(ctx); h != head {
		t.Errorf("the outage moved the audit head from %+v to %+v", head, h)
	}
	if srv, _ := w.Catalog.Server(ctx, "weather"); srv.LastCrawl != 1 {
		t.Errorf("a crawl was recorded without its signature: LastCrawl = %d", srv.LastCrawl)
	}
	if aps, _ := w.Catalog.Approvals(ctx); len(aps) != 0 {
		t.Errorf("an approval was recorded without its signature: %+v", aps)
	}
	if rep := verifyAll(t, w); !rep.OK() {
		t.Fatalf("the chain does not verify after the outage: %+v", rep)
	}

	down.Store(false)
	if res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-manual.json"))); err != nil || res.Recorded != 1 {
		t.Fatalf("crawl after the outage: %+v, %v", res, err)
	}
	head, _ = w.Catalog.AuditHead(ctx)
	call(t, api, apiEvent(t, "approvals-decide.json", alice, "weather", "get_forecast", map[string]any{"decision": "approved", "digest": d, "auditHead": head}), 201)
	if rep := verifyAll(t, w); !rep.OK() {
		t.Fatalf("verify: %+v", rep)
	}
}

// throttle cancels the first n TransactWriteItems calls as DynamoDB does under
// throttling (TransactionCanceledException, reason ThrottlingError on every item),
// without sending them.
func throttle(n int64) (func(*dynamodb.Options), *atomic.Int64) {
	var seen atomic.Int64
	mw := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("throttle",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) == "TransactWriteItems" && seen.Add(1) <= n {
					items := in.Parameters.(*dynamodb.TransactWriteItemsInput).TransactItems
					reasons := make([]ddbtypes.CancellationReason, len(items))
					for i := range reasons {
						reasons[i] = ddbtypes.CancellationReason{Code: aws.String("ThrottlingError"), Message: aws.String("Throughput exceeds the current capacity")}
					}
					return middleware.InitializeOutput{}, middleware.Metadata{}, &ddbtypes.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
	return func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, mw) }, &seen
}

// TestThrottledAndLostTransactions: throttled crawl transactions are re-sent with backoff
// and a transaction whose response was lost (committed, then retried by the SDK) is
// recognised by its write ID: each crawl is recorded exactly once.
func TestThrottledAndLostTransactions(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	thr, seen := throttle(2)
	lost := &awstest.Fault{Operation: "TransactWriteItems", Fail: func(n int64) bool { return n == 2 }} // the crawl's first send
	o := awsapp.WarrantOptions{DynamoDB: []func(*dynamodb.Options){thr, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, lost.Middleware) }}}
	w := s.warrant(t, "test", awsapp.WarrantOptions{})
	crawl := s.crawl(t, o) // registering the server: 2 throttled sends, then attempt 1 (sent) of the transaction
	if got := seen.Load(); got != 3 {
		t.Errorf("TransactWriteItems calls while adding the server = %d, want 2 throttled + 1", got)
	}
	res, err := crawl(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json")))
	if err != nil || res.Recorded != 1 {
		t.Fatalf("crawl: %+v, %v", res, err)
	}
	if lost.Attempts() < 3 {
		t.Errorf("the lost response was not retried: %d attempts", lost.Attempts())
	}
	srv, _ := w.Catalog.Server(ctx, "weather")
	recs, _ := w.Catalog.AuditRecords(ctx, 0, 100)
	if srv.LastCrawl != 1 || len(recs) != 4 { // server_added, crawl_observed, 2 × version_recorded
		t.Errorf("after a lost response: LastCrawl %d, %d audit records; want 1 and 4 (nothing recorded twice)", srv.LastCrawl, len(recs))
	}
	if _, err := w.Catalog.Crawl(ctx, "weather", 2); err == nil {
		t.Error("the retried crawl was recorded twice")
	}
	if vs, _ := w.Catalog.Versions(ctx, "weather", "get_forecast"); len(vs) != 1 {
		t.Errorf("%d versions of get_forecast, want 1", len(vs))
	}
	if rep := verifyAll(t, w); !rep.OK() {
		t.Fatalf("verify: %+v", rep)
	}

}
