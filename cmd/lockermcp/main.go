// Command lockermcp is the Padlock MCP server over stdio: six tools that talk to a Padlock
// daemon (LOCKER_URL) and verify every chain before a byte reaches the model. Its inspect
// subcommand reads and verifies one pad from the command line. See docs/lockermcp.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentgate-dev/agentgate/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.OSEnv()
	code := cli.Run(ctx, newRoot(env), os.Args[1:], env)
	stop()
	os.Exit(code)
}
