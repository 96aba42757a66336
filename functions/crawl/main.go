// Command crawl is the toolwarrant crawl Lambda, the crawl queue's worker: for each batch
// of CrawlQueue messages (the dispatcher's, one per few servers) it lists those MCP
// servers through the SSRF-guarded crawler, records observations, versions and proposals
// in DynamoDB with KMS-signed audit entries, and reports the messages whose servers failed
// (internal/app/awsapp.CrawlWorkerHandler), which SQS retries and then parks. Invoked
// directly, or with an EventBridge event, it crawls the servers named (none: every one)
// itself (awsapp.CrawlHandler). Configuration: CATALOG_TABLE,
// CATALOG_BLOB_BUCKET, AUDIT_KMS_KEY, CRAWL_ROLE_ARN, TOOLWARRANT_SERVERS,
// CRAWL_DEADLINE_MARGIN and the TOOLWARRANT_CRAWL_* bounds (internal/config).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler"
)

// handlerFunc answers an SQS batch with an events.SQSEventResponse and any other event
// with an awsapp.CrawlResult.
type handlerFunc = func(context.Context, json.RawMessage) (any, error)

// newHandler does all the cold-start work: config, AWS config (unless given), catalog,
// KMS key, the configured servers. Each invocation ends with an EMF line to o.Metrics.
func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, o awsapp.WarrantOptions, cc crawler.Config, log *slog.Logger) (handlerFunc, error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{CrawlRole: true})
	if err != nil {
		return nil, err
	}
	bounds, err := config.LoadToolwarrant(getenv)
	if err != nil {
		return nil, err
	}
	w, err := awsapp.ColdStart(ctx, c, awsCfg, c.CrawlRole, log, o)
	if err != nil {
		return nil, err
	}
	d := awsapp.CrawlDeps{Warrant: w, Config: c, Bounds: bounds, Getenv: getenv, Secrets: awsapp.NewSecrets(w.AWS), Crawler: cc, Logger: log, Metrics: awsapp.Metrics{W: o.Metrics}}
	if err := awsapp.RegisterServers(ctx, d); err != nil {
		return nil, err
	}
	direct, queue := awsapp.CrawlHandler(d), awsapp.CrawlWorkerHandler(d)
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		if awsapp.IsSQSEvent(raw) {
			var ev events.SQSEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, fmt.Errorf("crawl: the SQS event does not parse: %w", err)
			}
			return queue(ctx, ev)
		}
		return direct(ctx, raw)
	}, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := newHandler(context.Background(), os.Getenv, nil, awsapp.WarrantOptions{Metrics: os.Stdout}, crawler.Config{}, log)
	if err != nil {
		log.Error("crawl: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
