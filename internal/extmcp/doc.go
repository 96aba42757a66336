// Package extmcp is toolwarrant's ExtMcp processor: the gRPC service agentgateway's
// mcpGuardrails callout asks on every tools/list response and tools/call request
// (proto/agentgateway/ext_mcp.proto, docs/extmcp.md).
//
// # Decisions
//
// On a tools/list result the processor digests every listed tool object exactly as the
// gateway sent it (SHA-256 of its RFC 8785 form, internal/canon) and answers with the same
// JSON minus every tool whose live digest is not the approved digest; every other byte of
// the result is left as it was. On a tools/call it passes only if the last listing this
// processor saw and the server's last crawl both show the approved digest, and otherwise
// denies with PERMISSION_DENIED and a reason that names that tool and its state
// (unknown, unapproved, drifted, unlisted) and nothing else.
//
// Anything it cannot decide is a denial, never a pass: approvals older than the staleness
// bound (the store unreachable), JSON that is not what the method's contract says, a
// method it does not decide, a message or reply over its size bound, a recovered panic,
// a decision past its deadline. Denials are AuthorizationError results rather than gRPC
// errors, so they deny even under failOpen.
//
// # Ports
//
// The processor reads evidence through a [Source] (per server: each tool's approved
// digest and last-crawl digest) and writes what it observes — tools listed but not
// served: new, drifted, unapproved, refused — through a [Recorder], batched by one
// background goroutine and never on a request's path. Snapshots are held in memory,
// refreshed every [Config.Refresh] and read lock-free, so a re-approval, rejection or
// rollback takes effect within one refresh interval. [CatalogSource] adapts the
// toolwarrant catalog (internal/warrant), [EvidenceFile] a static JSON file.
//
// # Serving
//
// [Serve] runs the ExtMcp and grpc.health.v1 services (SERVING while every server's
// approvals are fresh) and shuts down gracefully; [Metrics] are exposed in the Prometheus
// text format, from a client_golang registry of the processor's own.
package extmcp
