// Command checkpoint is the toolwarrant checkpoint Lambda: on a schedule it verifies the
// audit entries since the last checkpoint and writes the KMS-signed audit head to S3 as
// checkpoints/<seq>.json (versioned bucket, Object Lock in governance mode), so that a
// rewrite of the catalog table is caught by `audit verify --checkpoints`
// (internal/checkpoint). Configuration: CATALOG_TABLE, AUDIT_KMS_KEY, CHECKPOINT_BUCKET.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/config"
)

type handlerFunc = func(context.Context, any) (checkpoint.Result, error)

func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, o awsapp.WarrantOptions, log *slog.Logger) (handlerFunc, error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{Bucket: true})
	if err != nil {
		return nil, err
	}
	w, err := awsapp.ColdStart(ctx, c, awsCfg, "checkpoint", log, o)
	if err != nil {
		return nil, err
	}
	return awsapp.CheckpointHandler(w, log, awsapp.Metrics{W: o.Metrics})
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := newHandler(context.Background(), os.Getenv, nil, awsapp.WarrantOptions{Metrics: os.Stdout}, log)
	if err != nil {
		log.Error("checkpoint: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
