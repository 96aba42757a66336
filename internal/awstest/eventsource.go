package awstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSEventSource is Lambda's SQS event source mapping with ReportBatchItemFailures, run in
// the test's process against the emulated queue, as the function's role: the poller
// receives up to BatchSize messages (the queue's visibility timeout hides them), invokes
// the handler with the function's Timeout as its deadline, and deletes the messages the
// handler did not report as failed. A failed message, or every message of an invocation
// that returned an error or named a message not in its batch, is left to reappear after
// the visibility timeout; the queue's redrive policy parks it after maxReceiveCount
// receives. At most Concurrency invocations run at once.
type SQSEventSource struct {
	// Config is the function role's: the poller receives, deletes and reads the queue's
	// attributes as it, as Lambda does.
	Config      aws.Config
	QueueURL    string
	BatchSize   int
	Concurrency int
	Timeout     time.Duration
	Handler     func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

// Invocation is one handler call of an SQSEventSource run.
type Invocation struct {
	Messages, Failed int
	Elapsed          time.Duration
	Err              error
}

// Run polls until the queue holds no message, visible or in flight (its approximate
// counts, read after a poll found nothing), or ctx ends (an error). It returns every
// invocation.
func (e SQSEventSource) Run(ctx context.Context) ([]Invocation, error) {
	client := sqs.NewFromConfig(e.Config)
	arn := sqsQueueARN(e.Config.Region, e.QueueURL)
	var (
		mu     sync.Mutex
		calls  []Invocation
		empty  = make(chan struct{})
		once   sync.Once
		failed error
	)
	var wg sync.WaitGroup
	for range max(e.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				select {
				case <-empty:
					return
				default:
				}
				// Short polls, and a pause when one finds nothing: Lambda long-polls, but the
				// harness's proxy serializes requests to moto, so a long poll would hold up
				// every other call (the handler's) for its wait.
				out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.QueueURL), MaxNumberOfMessages: int32(max(e.BatchSize, 1)),
					WaitTimeSeconds: 0, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
				if err != nil {
					if ctx.Err() == nil {
						once.Do(func() { failed = fmt.Errorf("awstest: receive from %s: %w", e.QueueURL, err); close(empty) })
					}
					return
				}
				if len(out.Messages) == 0 {
					n, err := e.inQueue(ctx, client)
					if err != nil {
						once.Do(func() { failed = err; close(empty) })
						return
					}
					if n == 0 {
						once.Do(func() { close(empty) })
						return
					}
					select {
					case <-ctx.Done():
					case <-empty:
					case <-time.After(200 * time.Millisecond):
					}
					continue
				}
				inv := e.invoke(ctx, client, arn, out.Messages)
				mu.Lock()
				calls = append(calls, inv)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return calls, failed
	}
	return calls, ctx.Err()
}

// inQueue is the queue's approximate count of visible and in-flight messages.
func (e SQSEventSource) inQueue(ctx context.Context, client *sqs.Client) (int, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, fmt.Errorf("awstest: attributes of %s: %w", e.QueueURL, err)
	}
	a, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	b, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return a + b, nil
}

// invoke hands one batch to the handler and deletes what succeeded.
func (e SQSEventSource) invoke(ctx context.Context, client *sqs.Client, arn string, msgs []sqstypes.Message) Invocation {
	ev := events.SQSEvent{}
	handles := map[string]*string{}
	for _, m := range msgs {
		id := aws.ToString(m.MessageId)
		handles[id] = m.ReceiptHandle
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: e.Config.Region})
	}
	ictx, cancel := context.WithTimeout(ctx, e.Timeout)
	start := time.Now()
	resp, err := e.Handler(ictx, ev)
	cancel()
	inv := Invocation{Messages: len(msgs), Elapsed: time.Since(start), Err: err}
	if err != nil {
		inv.Failed = len(msgs)
		return inv
	}
	keep := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if handles[f.ItemIdentifier] == nil {
			inv.Failed, inv.Err = len(msgs), errors.New("awstest: a batch item failure names no message of the batch: the whole batch fails")
			return inv
		}
		keep[f.ItemIdentifier] = true
	}
	inv.Failed = len(keep)
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for id, h := range handles {
		if !keep[id] {
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(del))), ReceiptHandle: h})
		}
	}
	for len(del) > 0 {
		n := min(len(del), sqsMaxBatchEntries)
		if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.QueueURL), Entries: del[:n]}); err != nil && inv.Err == nil {
			inv.Err = fmt.Errorf("awstest: delete from %s: %w", e.QueueURL, err)
		}
		del = del[n:]
	}
	return inv
}
