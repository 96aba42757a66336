// Package mcpserver is lockermcp: the Padlock MCP server, six tools on the go-sdk
// (locker_create, locker_append, locker_seal, locker_deposit, locker_manifest,
// locker_read_blocks) over a verifying lockerclient.Client.
//
// Every result is one JSON object (docs/lockermcp.md lists the shapes), sent both as
// structuredContent and as its indented JSON text, and described by the tool's outputSchema.
// Every failure is isError with the same kind of structured content: daemon errors
// ({"error": {"status", "detail"}}), a read that does not verify (error.kind
// "verification_failed", its cause, pad_id and the integrity block, and no payload
// anywhere), a deposit that did not complete (error and partial), and invalid arguments
// (error.kind "invalid_arguments"). Text shown to the model is derived locally from
// verified bytes. locker_deposit sends notifications/progress after each step when the call
// carries a progress token. Only the tools capability is advertised, and only it is
// answered.
//
// Object and list payloads are encoded as the Python peer's json.dumps does, key order
// preserved, so a handoff hashes identically through either implementation.
//
// Nothing a tool receives or returns is logged: the Logger sees the tool name, an outcome
// class and the duration only, because results may carry write keys and tickets.
package mcpserver
