// Package awsapp wires toolwarrant on AWS: the adapters over the SDK configuration of
// internal/app/awsbase (the DynamoDB catalog with its S3 object store, the KMS log signer,
// Secrets Manager and SSM crawl header values), composed into the toolwarrant service
// ([NewWarrant], [ColdStart]: internal/app/awswarrant's, under the names the mains know). The
// Lambda mains hand what it builds to their transports and handlers:
//
//   - pads: not this package but awsbase.PadStore, under app.LazyLockerHandler, so that the
//     pads function initialises none of the above at its cold start;
//   - approvals: [ApprovalsHandler], the approvals API of internal/approvalsapi, with the
//     caller read from API Gateway's request context ([GatewayCaller]);
//   - crawl: [CrawlHandler] and [RegisterServers];
//   - checkpoint: [CheckpointHandler], with the EMF metrics of [Metrics];
//   - interceptor: not this package but awswarrant and internal/agentcore, so that the
//     AgentCore interceptor links neither the crawl nor the approvals API.
//
// Which binaries link it: the Lambda mains but pads (functions/*), and cmd/toolwarrant for its AWS
// modes. Those are `--store dynamodb:TABLE` for serve, emit and verify-gateway (the ExtMcp
// container), `audit verify --checkpoints s3://BUCKET` ([CheckpointSource]), and the
// SigV4 client of `--remote` (in internal/approvalsapi). lockerd, agentgate and lockermcp
// run without an AWS account and do not link the AWS SDK (test/arch). The embedded
// counterpart of this package is internal/app/localapp.
package awsapp
