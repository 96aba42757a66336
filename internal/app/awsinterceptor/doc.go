// Package awsinterceptor composes the AgentCore Gateway interceptor Lambda
// (functions/interceptor): the toolwarrant catalog and log signer of internal/app/awswarrant,
// the decision core (internal/enforce) configured for the AgentCore point and started, and
// the transport (internal/agentcore) over it. A cold start that cannot read the catalog or
// the key yields a handler that denies and retries ([New]), never a failed invocation.
//
// It links neither the crawl nor the approvals API (internal/app/awsapp's handlers), nor
// gRPC, SQLite or the other transports: test/arch's Lambda rules hold the interceptor to it.
package awsinterceptor
