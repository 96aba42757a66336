package scale_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// The fan-out's settings, as template.yaml sets them: the crawl function's timeout as the
// queue's worker, CrawlWorkers, CrawlBatchSize, CrawlServersPerMessage.
const (
	workerTimeout     = 120 * time.Second
	fanoutWorkers     = 2
	fanoutBatch       = 5
	fanoutPerMessage  = 1
	fanoutRunBound    = 25 * time.Minute
	scheduledEventRaw = `{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`
)

// fanoutStep is one scheduled crawl through the fan-out: the dispatcher, then Lambda's
// event source (awstest.SQSEventSource, as the crawl role) feeding the crawl function's
// queue handler until the queue is empty.
type fanoutStep struct {
	step
	Dispatch    time.Duration
	Invocations int
	Longest     time.Duration
	Failed      int
	Parked      int
}

// fanout registers the fleet's servers (as a registration API would: one AddServer each,
// not TOOLWARRANT_SERVERS, which holds about 50), then runs one scheduled crawl through the
// queue. It fails the benchmark if a server is not recorded.
func (d *deployment) fanout(b testing.TB) fanoutStep {
	b.Helper()
	getenv := func(k string) string { return d.env[k] }
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{CrawlRole: true})
	if err != nil {
		b.Fatal(err)
	}
	bounds, err := config.LoadToolwarrant(getenv)
	if err != nil {
		b.Fatal(err)
	}
	ccfg := d.dep.Config(b, "CrawlRole")
	w, err := awsapp.ColdStart(b.Context(), c, &ccfg, c.CrawlRole, slog.New(slog.DiscardHandler), d.options(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range d.fleet.catalog() {
		if _, err := w.Service.AddServer(b.Context(), s); err != nil {
			b.Fatal(err)
		}
	}
	dcfg := d.dep.Config(b, "CrawlDispatchRole")
	cat, err := awsapp.Catalog(b.Context(), dcfg, awsapp.CatalogOptions{Table: c.CatalogTable})
	if err != nil {
		b.Fatal(err)
	}
	dispatch := awsapp.DispatchHandler(awsapp.DispatchDeps{Catalog: cat, Queue: sqs.NewFromConfig(dcfg), QueueURL: d.dep.CrawlQueue,
		ServersPerMessage: fanoutPerMessage, Logger: slog.New(slog.DiscardHandler)})
	deps := awsapp.CrawlDeps{Warrant: w, Config: c, Bounds: bounds, Getenv: getenv, Logger: slog.New(slog.DiscardHandler)}

	d.take(&step{})
	start := time.Now()
	res, err := dispatch(b.Context(), json.RawMessage(scheduledEventRaw))
	if err != nil {
		b.Fatalf("dispatch: %v", err)
	}
	s := fanoutStep{Dispatch: time.Since(start)}
	ctx, cancel := context.WithTimeout(b.Context(), fanoutRunBound)
	defer cancel()
	calls, err := awstest.SQSEventSource{Config: ccfg, QueueURL: d.dep.CrawlQueue, BatchSize: fanoutBatch, Concurrency: fanoutWorkers,
		Timeout: workerTimeout, Handler: awsapp.CrawlWorkerHandler(deps)}.Run(ctx)
	if err != nil {
		b.Fatalf("event source: %v (after %d invocations)", err, len(calls))
	}
	s.step = step{Name: "fan-out crawl", Wall: time.Since(start), Units: res.Servers}
	d.take(&s.step)
	s.Invocations = len(calls)
	for _, c := range calls {
		s.Longest = max(s.Longest, c.Elapsed)
		s.Failed += c.Failed
		if c.Err != nil {
			b.Errorf("invocation: %v", c.Err)
		}
	}
	parked, err := sqs.NewFromConfig(awstest.Config(b)).GetQueueAttributes(b.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &d.dep.ParkedQueue,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		b.Fatal(err)
	}
	s.Parked, _ = strconv.Atoi(parked.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	for _, srv := range d.fleet.catalog() {
		got, err := cat.Server(b.Context(), srv.Name)
		if err != nil || got.LastCrawl != 1 {
			b.Errorf("server %s: last crawl %d, %v; want 1", srv.Name, got.LastCrawl, err)
		}
	}
	return s
}
