// Package mcpserver is lockermcp: the Padlock MCP server, six tools on the go-sdk
// (locker_create, locker_append, locker_seal, locker_deposit, locker_manifest,
// locker_read_blocks) over a verifying lockerclient.Client.
//
// Every result is one JSON object (docs/lockermcp.md lists the shapes). Daemon errors are
// returned as results ({"error": {"status", "detail"}}), not raised; a read that does not
// verify returns error.kind "verification_failed", its cause, pad_id and the integrity
// block, and no payload anywhere. Text shown to the model is derived locally from verified
// bytes. Invalid arguments (and a deposit refused before anything was sent) are tool errors
// (isError).
//
// Object and list payloads are encoded as the Python peer's json.dumps does, key order
// preserved, so a handoff hashes identically through either implementation.
//
// Nothing a tool receives or returns is logged: the Logger sees the tool name, an outcome
// class and the duration only, because results may carry write keys and tickets.
package mcpserver
