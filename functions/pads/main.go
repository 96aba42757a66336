package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/app"
	"github.com/agentgate-dev/agentgate/internal/app/awsbase"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// handlerFunc serves one decoded API Gateway event.
type handlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// newHandler parses the configuration, builds the AWS config (unless awsCfg is given, as
// tests do), the DynamoDB store and the Padlock handler, and returns what lambda.Start runs. It makes no AWS call: the store
// checks the table's format marker on its first call, the first call on a new table seeds
// demo-pad-v1, and a read of demo-pad-v1 that finds it missing seeds it
// (internal/dynamostore/README.md, "Format marker").
func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, level *slog.LevelVar, log *slog.Logger) (*function, error) {
	lc, err := config.LoadLocker(getenv)
	if err != nil {
		return nil, err
	}
	level.Set(lc.LogLevel)
	ac, err := config.LoadAWS(getenv)
	if err != nil {
		return nil, err
	}
	log.InfoContext(ctx, "config", slog.Any("locker", lc), slog.Any("aws", ac))
	if awsCfg == nil {
		cfg, err := awsbase.AWSConfig(ctx, ac)
		if err != nil {
			return nil, err
		}
		awsCfg = &cfg
	}
	store, err := awsbase.PadStore(*awsCfg, ac, log)
	if err != nil {
		return nil, err
	}
	h, err := app.LazyLockerHandler(ctx, lc, store, nil, log)
	if err != nil {
		return nil, err
	}
	return &function{serve: proxy(h, log), log: log}, nil
}

func main() {
	level := new(slog.LevelVar)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
	h, err := newHandler(context.Background(), os.Getenv, nil, level, log)
	if err != nil {
		log.Error("pads: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
