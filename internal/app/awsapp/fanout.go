package awsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/emf"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The crawl fan-out (template.yaml): the schedule starts the dispatcher, which sends one
// message per CRAWL_SERVERS_PER_MESSAGE servers to CrawlQueue; the crawl function, as
// that queue's worker, crawls and records the servers of each batch of messages and
// reports the messages whose servers failed (partial batch failures), which SQS delivers
// again after the queue's visibility timeout and, after maxReceiveCount deliveries, parks
// in CrawlParkedQueue (an alarm). One schedule thus crawls any number of servers, each
// invocation a few of them, and a server that hangs or answers garbage is retried and
// parked without holding up the others.

// MetricServersDispatched is, per dispatcher invocation, the servers it queued for crawling.
const MetricServersDispatched = "ServersDispatched"

// maxBatchEntries is SQS's limit on the entries of one SendMessageBatch call.
const maxBatchEntries = 10

// sqsThrottling are the SQS error codes that mean "not now".
var sqsThrottling = map[string]bool{"RequestThrottled": true, "ThrottlingException": true, "KmsThrottled": true}

// sendRounds bounds the dispatcher's retries of entries SQS failed in a batch.
const sendRounds = 4

// SQSSender is the part of the SQS client the dispatcher uses.
type SQSSender interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// ServerLister lists the catalog's servers (dynamostore.Catalog).
type ServerLister interface {
	Servers(ctx context.Context) ([]warrant.Server, error)
}

// DispatchDeps are what the dispatcher needs.
type DispatchDeps struct {
	Catalog ServerLister
	// Queue sends to QueueURL (CRAWL_QUEUE_URL); ServersPerMessage is
	// CRAWL_SERVERS_PER_MESSAGE (at least 1).
	Queue             SQSSender
	QueueURL          string
	ServersPerMessage int
	// Configured are the names in TOOLWARRANT_SERVERS, queued with the catalog's: the
	// workers register them at their cold start, so a first crawl needs no earlier one.
	Configured []string
	Logger     *slog.Logger
	// Metrics receives one EMF line per invocation (ServersDispatched).
	Metrics Metrics
	// Backoff is the wait before retry round n of failed entries. Default 100 ms · 2ⁿ.
	Backoff func(n int) time.Duration
}

// DispatchResult is the dispatcher's result.
type DispatchResult struct {
	Servers  int `json:"servers"`
	Messages int `json:"messages"`
}

// CrawlMessage is the body of a message on the crawl queue: the servers to crawl. It is
// CrawlEvent's direct form, so a parked message's body can be given to the crawl function
// as it is (aws lambda invoke --payload).
type CrawlMessage struct {
	Servers []string `json:"servers"`
}

// DispatchHandlerFunc is the dispatcher's handler.
type DispatchHandlerFunc = func(context.Context, json.RawMessage) (DispatchResult, error)

// DispatchHandler returns the dispatcher's handler. For a scheduled event it queues every
// server of the catalog and of TOOLWARRANT_SERVERS, in name order; for an event naming
// servers (the toolwarrant.manual rule, or a direct invocation) exactly those. A name that
// is not a server name fails the invocation before anything is sent. A message SQS did
// not take is retried a few times; if some still fail the invocation fails and Lambda
// retries it whole, so servers already queued are queued again (a server crawled twice in
// one period records one more observation; nothing is lost or doubled in the catalog).
func DispatchHandler(d DispatchDeps) DispatchHandlerFunc {
	per := max(d.ServersPerMessage, 1)
	backoff := d.Backoff
	if backoff == nil {
		backoff = func(n int) time.Duration { return 100 * time.Millisecond << n }
	}
	return func(ctx context.Context, raw json.RawMessage) (DispatchResult, error) {
		var ev CrawlEvent
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &ev); err != nil {
				return DispatchResult{}, fmt.Errorf("crawl dispatch: the event is not JSON: %w", err)
			}
		}
		names := append(ev.Servers, ev.Detail.Servers...)
		for _, n := range names {
			if err := warrant.ValidateServerName(n); err != nil {
				return DispatchResult{}, fmt.Errorf("crawl dispatch: the event names %q: %w; nothing was queued", n, err)
			}
		}
		if len(names) == 0 {
			servers, err := d.Catalog.Servers(ctx)
			if err != nil {
				return DispatchResult{}, fmt.Errorf("crawl dispatch: list the catalog's servers: %w", err)
			}
			for _, s := range servers {
				names = append(names, s.Name)
			}
			names = append(names, d.Configured...)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		var bodies []string
		for batch := range slices.Chunk(names, per) {
			b, err := json.Marshal(CrawlMessage{Servers: batch})
			if err != nil {
				return DispatchResult{}, err
			}
			bodies = append(bodies, string(b))
		}
		res := DispatchResult{Servers: len(names)}
		var errs []error
		for chunk := range slices.Chunk(bodies, maxBatchEntries) {
			sent, err := d.send(ctx, chunk, backoff)
			res.Messages += sent
			if err != nil {
				errs = append(errs, err)
				if ctx.Err() != nil {
					break
				}
			}
		}
		d.Metrics.emit(ctx, d.Logger, []emf.Metric{{Name: MetricServersDispatched, Unit: emf.Count, Value: float64(res.Servers)}}, nil)
		if err := errors.Join(errs...); err != nil {
			return res, fmt.Errorf("crawl dispatch: queued %d of %d messages (%d servers): %w", res.Messages, len(bodies), res.Servers, err)
		}
		d.Logger.InfoContext(ctx, "crawl dispatched", slog.Int("servers", res.Servers), slog.Int("messages", res.Messages))
		return res, nil
	}
}

// send sends up to maxBatchEntries bodies in one SendMessageBatch, then again those SQS
// failed for a reason of its own (not the sender's), at most sendRounds times.
func (d DispatchDeps) send(ctx context.Context, bodies []string, backoff func(int) time.Duration) (int, error) {
	pending := map[string]string{}
	for i, b := range bodies {
		pending[strconv.Itoa(i)] = b
	}
	sent := 0
	var last []string
	var refused []error
	for round := 0; round < sendRounds && len(pending) > 0; round++ {
		if round > 0 {
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-time.After(backoff(round - 1)):
			}
		}
		ids := make([]string, 0, len(pending))
		for id := range pending {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(d.QueueURL)}
		for _, id := range ids {
			in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(pending[id])})
		}
		out, err := d.Queue.SendMessageBatch(ctx, in)
		if err != nil {
			if !awserr.Transient(err, sqsThrottling) {
				return sent, err // refused (access, limits): a retry gets the same answer
			}
			last = []string{err.Error()}
			continue // the SDK has retried what it may; so does the next round
		}
		for _, ok := range out.Successful {
			if _, was := pending[aws.ToString(ok.Id)]; was {
				delete(pending, aws.ToString(ok.Id))
				sent++
			}
		}
		last = last[:0]
		for _, f := range out.Failed {
			why := aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
			if f.SenderFault {
				delete(pending, aws.ToString(f.Id)) // retrying cannot help
				refused = append(refused, fmt.Errorf("SQS refused a message: %s", why))
				continue
			}
			last = append(last, why)
		}
	}
	if len(pending) > 0 {
		refused = append(refused, fmt.Errorf("%d messages not taken after %d attempts: %s", len(pending), sendRounds, strings.Join(last, "; ")))
	}
	return sent, errors.Join(refused...)
}

// CrawlWorkerHandler returns the crawl function's handler for a batch of crawl queue
// messages (an SQS event source with ReportBatchItemFailures): it crawls the servers of
// every message in one crawl run (CrawlHandler's, with its bounds, log lines and metrics)
// and reports as failed each message one of whose servers failed, or that is not a crawl
// message at all; SQS delivers those again and parks them after maxReceiveCount. An error
// (the catalog unreadable: no server was tried) fails the whole batch.
func CrawlWorkerHandler(d CrawlDeps) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		fail := func(id string) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		of := map[string][]string{} // server → the messages naming it
		var names []string
		for _, r := range ev.Records {
			m, err := crawlMessage(r.Body)
			if err != nil {
				d.Logger.ErrorContext(ctx, "crawl message refused", slog.String("message", r.MessageId),
					slog.String("receive_count", r.Attributes["ApproximateReceiveCount"]), slog.String("error", err.Error()))
				fail(r.MessageId)
				continue
			}
			for _, s := range m.Servers {
				if of[s] == nil {
					names = append(names, s)
				}
				of[s] = append(of[s], r.MessageId)
			}
		}
		if len(names) == 0 {
			return resp, nil
		}
		res, err := d.crawl(ctx, names)
		if err != nil {
			return events.SQSEventResponse{}, err
		}
		failed := map[string]bool{}
		done := map[string]bool{}
		for _, o := range res.Servers {
			done[o.Server] = true
			if !o.OK {
				for _, id := range of[o.Server] {
					failed[id] = true
				}
			}
		}
		for _, s := range names {
			if !done[s] { // not expected: every requested server has an outcome
				for _, id := range of[s] {
					failed[id] = true
				}
			}
		}
		for _, r := range ev.Records {
			if failed[r.MessageId] {
				d.Logger.WarnContext(ctx, "crawl message to be retried", slog.String("message", r.MessageId),
					slog.String("receive_count", r.Attributes["ApproximateReceiveCount"]))
				fail(r.MessageId)
			}
		}
		return resp, nil
	}
}

// crawlMessage parses a crawl queue message: a JSON object {"servers": [...]} of one or
// more valid server names and nothing else.
func crawlMessage(body string) (CrawlMessage, error) {
	var m CrawlMessage
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("not a crawl message ({\"servers\": [...]}): %w", err)
	}
	if dec.More() {
		return m, errors.New("not a crawl message: more than one JSON value")
	}
	if len(m.Servers) == 0 {
		return m, errors.New("a crawl message names no server")
	}
	for _, s := range m.Servers {
		if err := warrant.ValidateServerName(s); err != nil {
			return m, err
		}
	}
	return m, nil
}

// IsSQSEvent says whether raw is an SQS event source's batch ({"Records": [{"eventSource":
// "aws:sqs", ...}]}), the crawl function's queue trigger, rather than a direct or
// EventBridge invocation.
func IsSQSEvent(raw json.RawMessage) bool {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	if json.Unmarshal(raw, &probe) != nil || len(probe.Records) == 0 {
		return false
	}
	for _, r := range probe.Records {
		if r.EventSource != "aws:sqs" {
			return false
		}
	}
	return true
}
