// Package lockfile implements agentgate.lock, versions 1 and 2: a reviewable pin of the
// surface an agent sees from its MCP servers.
//
// Version 2 ([LockfileV2], [LockProfile], [ParseV2], [CompareV2], [SnapshotV2]) pins, per
// server and client profile, every tool (version 1's hashes and toolwarrant's digest of the
// whole tool object), every prompt, resource and resource template, and the hash of the
// server's instructions; CompareV2 grades each change with internal/warrant's drift rules.
// [ReadVersion] says which version a file is. Version 1, below, is unchanged.
// For every tool it records SHA-256 hashes of
// the name, the description and the RFC 8785 canonical input schema, and for every server a
// surfaceHash over all of them — exactly the rules of the lockfile specification, so that
// any independent implementation reproduces the same bytes.
//
// The package is pure: it turns raw tool objects into [Definition]s ([ParseTool]), locks
// them ([LockServer], [New]), writes the deterministic file format ([Lockfile.Marshal]),
// reads it back strictly ([Parse], which refuses unknown versions and reports unknown
// fields as [Warning]s), and compares a locked surface with a live one ([Compare]) down to
// which of name, description and inputSchema changed, with a word-level description diff
// when the texts are known (from a [Snapshot]).
//
// Names are ordered as RFC 8785 orders object member names: by UTF-16 code units.
package lockfile
