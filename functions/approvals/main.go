// Command approvals is the toolwarrant approvals Lambda behind an HTTP API whose routes
// all use AWS_IAM authorization: listing pending proposals, graded diffs, and decisions
// made by the caller's IAM principal, recorded with KMS-signed audit entries (the
// transport is internal/approvalsapi, wired by internal/app/awsapp.ApprovalsHandler).
// Configuration: CATALOG_TABLE, CATALOG_BLOB_BUCKET, AUDIT_KMS_KEY, CRAWL_ROLE_ARN.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/config"
)

type handlerFunc = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, o awsapp.WarrantOptions, log *slog.Logger) (handlerFunc, error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{CrawlRole: true})
	if err != nil {
		return nil, err
	}
	w, err := awsapp.ColdStart(ctx, c, awsCfg, "approvals", log, o)
	if err != nil {
		return nil, err
	}
	return httpadapter.NewV2(awsapp.ApprovalsHandler(w, c.CrawlRole, c.HeaderSecrets, log)).ProxyWithContext, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := newHandler(context.Background(), os.Getenv, nil, awsapp.WarrantOptions{}, log)
	if err != nil {
		log.Error("approvals: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
