// Package cli holds the conventions shared by every agentgate binary (agentgate,
// toolwarrant, lockerd, lockermcp): exit codes, the one-line error format, and how a
// cobra command tree is run so that mains stay testable (run(ctx, args, env) int).
//
// Exit codes (docs/cli.md): 0 success, 1 the check ran and found something, 2 could not
// run (usage error, unreadable file, unreachable server, refused configuration). A command
// returns an *ExitError to pick the code; any other error exits 2.
package cli
