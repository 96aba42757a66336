// Package extmcp is toolwarrant's ExtMcp processor: the gRPC service agentgateway's
// mcpGuardrails callout asks on every tools/list response and tools/call request
// (proto/agentgateway/ext_mcp.proto, docs/extmcp.md).
//
// It is a transport only: each McpRequest or McpResponse becomes an enforce.Message, the
// decision core (internal/enforce) decides it, and the decision becomes a Pass, a Mutated
// result or an AuthorizationError. Denials are AuthorizationError results rather than gRPC
// errors, so they deny even under failOpen.
//
// # Serving
//
// [Serve] runs the ExtMcp and grpc.health.v1 services (SERVING while every server's
// approvals are fresh) and shuts down gracefully.
package extmcp
