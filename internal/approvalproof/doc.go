// Package approvalproof proves, from toolwarrant's transparency log, that every tool digest
// an agentgate.lock pins was approved: what `agentgate ci --approvals` and `agentgate lock
// --approvals` run.
//
// Online ([Read]) it reads a c2sp.org/tlog-tiles log (a directory or an http(s) prefix,
// through a [Source]): the checkpoint, opened under the log key of a c2sp.org/tlog-policy
// file and checked against its witness quorum with internal/checkpoint exactly as
// `toolwarrant audit verify --policy` does; then every entry bundle, whose entries must
// rebuild the checkpoint's RFC 6962 root (internal/audit's tree on sumdb/tlog). It replays
// the decision entries (approved, rejected, rolled_back: their type and the server, tool
// and digest of their event, nothing else) to the approved digest of each (server, tool) as
// of the checkpoint, the way toolwarrant's catalog applies them: approved and rolled_back
// make the digest the approved one, rejected clears it if it was the approved one.
// [Log.Check] then grades each locked digest: approved and still the approved digest of its
// tool, never approved ([RuleApprovalMissing]), or approved once but since rejected or
// superseded ([RuleApprovalRevoked]).
//
// Offline ([VerifyBundle]) it checks a committed [Bundle] (agentgate.approvals.json): the
// checkpoint note with its cosignatures, and per locked digest the leaf bytes of the entry
// that approved it with an inclusion proof to that checkpoint. That proves each approval is
// in the log up to the bundle's checkpoint; it cannot show a rejection or a newer approval,
// which only the whole log (online) shows.
//
// What it does not do: it does not re-check each decision's signed statement against the
// trust list (that is `toolwarrant audit verify`); it trusts the entries because the
// policy's log key and witnesses vouch for the tree that holds them.
//
// The package links no AWS SDK, database or MCP code: the standard library (net/http for
// [HTTP]), internal/checkpoint, audit, tiles, localfile and warrant's types, and
// golang.org/x/mod/sumdb.
package approvalproof
