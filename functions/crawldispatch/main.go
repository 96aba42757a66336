// Command crawldispatch is the toolwarrant crawl dispatcher Lambda: on the crawl schedule
// (or a manual event naming servers) it reads the catalog's servers and sends them to
// CrawlQueue, CRAWL_SERVERS_PER_MESSAGE to a message, for the crawl function to crawl as
// the queue's worker (internal/app/awsapp.DispatchHandler). It reads the catalog and
// sends messages; it signs and writes nothing. Configuration: CATALOG_TABLE,
// CRAWL_QUEUE_URL, CRAWL_SERVERS_PER_MESSAGE, TOOLWARRANT_SERVERS (internal/config).
package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// newHandler does the cold start: config, AWS config (unless given), the catalog (read
// only) and the queue's client. Each invocation ends with an EMF line to metrics.
func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, metrics io.Writer, log *slog.Logger) (awsapp.DispatchHandlerFunc, error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{Dispatch: true})
	if err != nil {
		return nil, err
	}
	if awsCfg == nil {
		cfg, err := awsapp.WarrantAWSConfig(ctx, c)
		if err != nil {
			return nil, err
		}
		awsCfg = &cfg
	}
	cat, err := awsapp.Catalog(ctx, *awsCfg, awsapp.CatalogOptions{Table: c.CatalogTable, Logger: log})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		names[i] = s.Name
	}
	return awsapp.DispatchHandler(awsapp.DispatchDeps{Catalog: cat, Queue: sqs.NewFromConfig(*awsCfg), QueueURL: c.CrawlQueue,
		ServersPerMessage: c.ServersPerMessage, Configured: names, Logger: log, Metrics: awsapp.Metrics{W: metrics}}), nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := newHandler(context.Background(), os.Getenv, nil, os.Stdout, log)
	if err != nil {
		log.Error("crawl dispatch: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
