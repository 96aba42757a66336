// Package cli holds the conventions shared by every agentgate binary (agentgate,
// toolwarrant, lockerd, lockermcp), the ones docs/cli.md tabulates and test/cli checks:
// exit codes, the one-line error format, the version command and flag ([Setup]), the
// positional-argument checks whose errors name the command's arguments ([NoArgs],
// [ExactArgs], [RangeArgs]), and how a cobra command tree is run so that mains stay
// testable ([Run]; [Main] is every binary's main).
//
// Exit codes (docs/cli.md): 0 success, 1 the check ran and found something, 2 could not
// run — a usage error in every binary and every command, an unreadable file, an unreachable
// server, a refused configuration. A command returns an *ExitError to pick the code; any
// other error exits 2. The documented exceptions (lockerd's refused configuration, lockermcp
// inspect's daemon error and failed verification) are the codes of the Padlock tools they
// replace.
package cli
