package awsapp

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/app/awswarrant"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
)

// The toolwarrant service on AWS is built by internal/app/awswarrant, so that a function
// needing only the catalog and the log signer (the AgentCore interceptor) links none of
// this package's handlers. These are its names as the other functions and the CLI know them.

// WarrantOptions are extra client options (tests install call counters and faults).
type WarrantOptions = awswarrant.Options

// Warrant is the toolwarrant service composed over DynamoDB, KMS and S3, built once at
// cold start (awswarrant.Warrant).
type Warrant = awswarrant.Warrant

// CatalogOptions say where the DynamoDB catalog is (awswarrant.CatalogOptions).
type CatalogOptions = awswarrant.CatalogOptions

// NewWarrant is awswarrant.New: the catalog, the KMS log signer and the service acting as
// identity.
func NewWarrant(ctx context.Context, awsCfg aws.Config, c config.WarrantAWS, identity string, log *slog.Logger, o WarrantOptions) (*Warrant, error) {
	return awswarrant.New(ctx, awsCfg, c, identity, log, o)
}

// WarrantAWSConfig loads the SDK configuration with the attempts of c (awswarrant.AWSConfig).
func WarrantAWSConfig(ctx context.Context, c config.WarrantAWS) (aws.Config, error) {
	return awswarrant.AWSConfig(ctx, c)
}

// Catalog builds the DynamoDB catalog alone (awswarrant.Catalog).
func Catalog(ctx context.Context, awsCfg aws.Config, o CatalogOptions) (*dynamostore.Catalog, error) {
	return awswarrant.Catalog(ctx, awsCfg, o)
}

// ColdStart is the cold start of a toolwarrant Lambda main (awswarrant.ColdStart).
func ColdStart(ctx context.Context, c config.WarrantAWS, awsCfg *aws.Config, identity string, log *slog.Logger, o WarrantOptions) (*Warrant, error) {
	return awswarrant.ColdStart(ctx, c, awsCfg, identity, log, o)
}
