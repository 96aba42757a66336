// Package enforce is toolwarrant's decision core: the one rule every enforcement point
// applies, with no transport in it. agentgateway's ExtMcp callout (internal/extmcp, gRPC),
// the MCP proxy (internal/mcpproxy, Streamable HTTP and stdio) and the AgentCore Gateway
// interceptor (internal/agentcore, a Lambda) each translate their wire form to a [Message],
// ask [Processor.Decide], and translate the [Decision] back (test/arch holds them to it).
//
// # Decisions
//
// On a tools/list result the processor digests every listed tool object exactly as the
// upstream served it (SHA-256 of its RFC 8785 form, internal/canon) and answers with the
// same JSON minus every tool whose live digest is not the approved digest; every other byte
// of the result is left as it was. On a tools/call it passes only if the last listing this
// processor saw and the catalog's last observation both show the approved digest, and
// otherwise denies with a reason that names that tool and its state (unknown, unapproved,
// drifted, unlisted) and nothing else.
//
// Anything it cannot decide is a denial, never a pass: approvals older than the staleness
// bound (the store unreachable), JSON that is not what the method's contract says, a
// method it does not decide, a message or reply over its size bound, a recovered panic,
// a decision past its deadline.
//
// # Shadow mode and decision records
//
// With [Config.Shadow] the rules run as usual and everything passes; what would have been
// filtered or denied is counted and recorded as would-deny. Every decision is tallied per
// (server, tool, method, live digest, outcome, cause, approval set) and written through a
// [DecisionRecorder] every [Config.RecordEvery] and on Close (warrant.Service.RecordDecisions
// appends them to the audit log as signed decisions_recorded entries), so a reviewer can
// say what agents actually got, under which approvals. A repeated listing costs one atomic
// add in the tally.
//
// # Ports
//
// The processor reads evidence through a [Source] (per server: each tool's approved
// digest and last-crawl digest) and writes what it observes — tools listed but not
// served: new, drifted, unapproved, refused — through a [Recorder], batched by one
// background goroutine and never on a request's path. Snapshots are held in memory,
// refreshed every [Config.Refresh] and read lock-free, so a re-approval, rejection or
// rollback takes effect within one refresh interval. [CatalogSource] adapts the
// toolwarrant catalog (internal/warrant), [EvidenceFile] a static JSON file. [Metrics]
// are exposed in the Prometheus text format, from a client_golang registry of the
// processor's own.
package enforce
