// Command lockermcp is the Padlock MCP server over stdio: six tools that talk to a Padlock
// daemon (LOCKER_URL) and verify every chain before a byte reaches the model. Its inspect
// subcommand reads and verifies one pad from the command line. See docs/lockermcp.md.
package main

import (
	"github.com/agentgate-dev/agentgate/internal/cli"
)

func main() { cli.Main(newRoot) }
