// Package awswarrant builds the toolwarrant service on AWS from the SDK configuration of
// internal/app/awsbase: the DynamoDB catalog with its S3 object store, the KMS log signer
// and, for the checkpoint function, the checkpoint bucket and note key ([New],
// [ColdStart], [Catalog]).
//
// It is apart from internal/app/awsapp, which re-exports it under its old names
// (awsapp.NewWarrant, awsapp.ColdStart, awsapp.Catalog), so that a function needing only
// the catalog and the log signer links none of awsapp's handlers: the crawl (and its MCP
// client and SSRF guard), the approvals API and its API Gateway proxy, Secrets Manager and
// SSM. Every package a Lambda links is initialised at its cold start; the AgentCore
// interceptor (functions/interceptor) is such a function, and test/arch keeps those out of it.
package awswarrant
