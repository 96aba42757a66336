// Package awsbase is the AWS wiring every AWS binary shares, and all the pads Lambda needs:
// the SDK configuration, loaded once at cold start, and the DynamoDB pad store.
//
// It is apart from internal/app/awsapp so that the pads function links none of
// toolwarrant's AWS parts (KMS, S3, Secrets Manager, SSM, the crawl, the approvals API):
// every package a binary links is initialised at its cold start, and those doubled the pads
// function's init (docs/aws.md, "Cold start"; test/arch keeps them out).
package awsbase

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/locker"
)

// AWSConfig loads the AWS SDK configuration once, at cold start, through the SDK's default
// chain (AWS_REGION, the Lambda role's credentials, AWS_ENDPOINT_URL[_DYNAMODB] for moto or
// LocalStack). It keeps the SDK's default HTTP client: a custom one makes LoadDefaultConfig
// panic when AWS_CA_BUNDLE is set.
func AWSConfig(ctx context.Context, c config.AWS) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRetryMaxAttempts(c.MaxAttempts))
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	return cfg, nil
}

// PadStore builds the DynamoDB pads store on awsCfg. It makes no AWS call: the store's first
// call checks the table's format marker, and on a new table seeds the demo pad
// (locker.SeedDemo) before writing the marker, so a new stack's first /health already
// counts it. apiOptions are added to the DynamoDB client (tests install call counters and
// faults).
func PadStore(awsCfg aws.Config, c config.AWS, log *slog.Logger, apiOptions ...func(*dynamodb.Options)) (*dynamostore.PadStore, error) {
	client := dynamodb.NewFromConfig(awsCfg, apiOptions...)
	return dynamostore.New(dynamostore.Config{Client: client, Table: c.PadsTable, Logger: log,
		Initialize: func(ctx context.Context, st locker.Store) error { return locker.SeedDemo(ctx, st, nil) }})
}
