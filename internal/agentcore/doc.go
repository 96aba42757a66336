// Package agentcore is toolwarrant's Amazon Bedrock AgentCore Gateway interceptor: the
// Lambda handler the gateway invokes at its REQUEST point (before it calls a target) and its
// RESPONSE point (before it answers the client), for every MCP message
// (docs/spec/agentcore-interceptor.md has the payloads).
//
// It is a transport only. Each event becomes an enforce.Message — a request's method and
// params, or a response's result with the method of the request it answers, naming every
// served server (the gateway multiplexes its targets, and tool names carry AgentCore's
// TARGET___TOOL prefix) — the decision core (internal/enforce) decides it, and the
// enforce.Decision becomes the output: the request passed through byte for byte, the
// response passed or with its tools/list result filtered (every other byte of the body kept),
// or a denial: a JSON-RPC error the gateway answers with at once, without calling the target.
//
// # What it decides
//
// A tools/list result keeps only the tools whose definition, as listed, is the approved
// one; a tools/call of anything else is denied, named by its prefix (a tool of no served
// target, and AgentCore's own x_amz_bedrock_agentcore_search, which carries no prefix, are
// unknown and denied). Other MCP methods pass as the core's PassMethods says, and an unknown
// method is denied. Shadow mode is the core's: it decides and records, and everything passes.
//
// # Fail closed
//
// The handler never returns an error, since what the gateway does with a failed invocation
// is not documented: an event that is not JSON, of another interceptorInputVersion than
// 1.0, over [MaxEventBytes], without a body, with a body that is not one JSON-RPC message,
// a decision not finished before the invocation's deadline, a panic — each is a denial,
// keeping the request's JSON-RPC id when it can be read, and never the unfiltered listing.
// These denials are the transport's own and hold in shadow mode too: an event that cannot
// be read cannot be passed on faithfully. [Unavailable] and [Retry] answer the same way in
// an execution environment that could not start or is misconfigured.
//
// # Lambda
//
// The process is frozen between invocations, so the handler does per invocation what a
// long-running point leaves to the core's goroutines: it re-reads approvals older than the
// refresh interval first (Processor.RefreshOlder), and writes observations and, once per
// RecordEvery, the decision records before it answers (Processor.Sync); the main writes the
// last window on SIGTERM. [HandlerFunc] implements the runtime's raw-bytes Handler, so the
// event arrives, and the output leaves, exactly as sent.
package agentcore
