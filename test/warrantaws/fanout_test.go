package warrantaws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The crawl function's timeout in template.yaml, which no invocation may reach.
const workerTimeout = 120 * time.Second

// TestCrawlFanOut runs the fan-out as deployed: the dispatcher as its role queues every
// server on the crawl queue (one message each); Lambda's event source (awstest's, as the
// crawl role, 2 at a time, batches of 3) hands them to the crawl function's queue handler.
// Of 33 servers, 31 answer; one hangs and one answers garbage. Each of those two fails its
// message at every delivery while the batch's other servers are recorded, and after the
// queue's maxReceiveCount (the template's CrawlAttempts) the two messages are parked. Every
// other server is recorded once, no invocation comes near the function's timeout, and the
// audit log verifies.
func TestCrawlFanOut(t *testing.T) {
	s := newStack(t)
	admin := awstest.Config(t)
	// The template hides a received message for 720 s, six times the function's timeout;
	// the test waits 8 s for a retry, longer than any invocation takes here (checked below:
	// a message reappearing during its crawl would be crawled twice).
	const visibility = 8 * time.Second
	if _, err := sqs.NewFromConfig(admin).SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(s.dep.CrawlQueue),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(visibility.Seconds()))}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers: until the crawler gives up, or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":"not a list"`))
	}))
	t.Cleanup(func() { close(stop); hang.Close(); garbage.Close() })

	crawlW := s.warrant(t, crawlRole, awsapp.WarrantOptions{})
	var good []string
	for i := range 30 {
		good = append(good, fmt.Sprintf("good-%02d", i))
	}
	add := func(name, url string) {
		if _, err := crawlW.Service.AddServer(t.Context(), warrant.Server{Name: name, URL: url, AllowPrivate: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range good {
		add(n, s.mcpURL)
	}
	add("hang", hang.URL+"/mcp")
	add("garbage", garbage.URL+"/mcp")
	good = append(good, "weather") // TOOLWARRANT_SERVERS: the workers register it at cold start

	dcfg := withRetryer(s.dep.Config(t, "CrawlDispatchRole"))
	cat, err := awsapp.Catalog(t.Context(), dcfg, awsapp.CatalogOptions{Table: s.c.CatalogTable})
	if err != nil {
		t.Fatal(err)
	}
	dispatch := awsapp.DispatchHandler(awsapp.DispatchDeps{Catalog: cat, Queue: sqs.NewFromConfig(dcfg), QueueURL: s.dep.CrawlQueue,
		ServersPerMessage: 1, Configured: []string{"weather"}, Logger: slog.New(slog.DiscardHandler)})
	res, err := dispatch(t.Context(), testenv.Event(t, "crawl-scheduled.json"))
	if err != nil || res.Servers != 33 || res.Messages != 33 {
		t.Fatalf("dispatch: %+v, %v; want 33 servers in 33 messages", res, err)
	}

	bounds, err := config.LoadToolwarrant(func(k string) string { return map[string]string{"TOOLWARRANT_CRAWL_TIMEOUT": "1s"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	deps := awsapp.CrawlDeps{Warrant: s.warrant(t, crawlRole, awsapp.WarrantOptions{}), Config: s.c, Bounds: bounds, Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler)}
	if err := awsapp.RegisterServers(t.Context(), deps); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	calls, err := awstest.SQSEventSource{Config: s.dep.Config(t, "CrawlRole"), QueueURL: s.dep.CrawlQueue, BatchSize: 3, Concurrency: 2,
		Timeout: workerTimeout, Handler: awsapp.CrawlWorkerHandler(deps)}.Run(ctx)
	if err != nil {
		t.Fatalf("event source: %v (after %d invocations)", err, len(calls))
	}
	var longest time.Duration
	failed := 0
	for _, c := range calls {
		longest = max(longest, c.Elapsed)
		failed += c.Failed
		if c.Err != nil {
			t.Errorf("invocation: %v", c.Err)
		}
	}
	t.Logf("%d invocations, %d failed messages, longest %v", len(calls), failed, longest)
	if longest >= workerTimeout/2 || longest >= visibility {
		t.Errorf("an invocation took %v, near the function's %v timeout or over the test queue's %v visibility", longest, workerTimeout, visibility)
	}
	// CrawlAttempts (3, the default): each of the two fails at every delivery.
	if failed != 6 {
		t.Errorf("%d message failures reported, want 6 (2 servers × 3 attempts)", failed)
	}

	var parked []string
	pc := sqs.NewFromConfig(admin)
	for range 10 {
		out, err := pc.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.dep.ParkedQueue), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			var cm awsapp.CrawlMessage
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &cm); err != nil {
				t.Fatalf("parked %q: %v", aws.ToString(m.Body), err)
			}
			parked = append(parked, cm.Servers...)
		}
	}
	slices.Sort(parked)
	if !slices.Equal(parked, []string{"garbage", "hang"}) {
		t.Errorf("parked %v, want [garbage hang]", parked)
	}
	for _, n := range append(good, "hang", "garbage") {
		srv, err := cat.Server(t.Context(), n)
		want := int64(1)
		if n == "hang" || n == "garbage" {
			want = 0
		}
		if err != nil || srv.LastCrawl != want {
			t.Errorf("server %s: last crawl %d, %v; want %d", n, srv.LastCrawl, err, want)
		}
	}
	if _, rep := s.dep.AuditLog(t); !rep.OK() {
		t.Errorf("audit log: %+v", rep.Problems)
	}
}
