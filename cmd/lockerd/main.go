// Command lockerd is the Padlock daemon: tamper-evident append-only pads for agent-to-agent
// handoff, served over HTTP from one SQLite file. See README.md and spec/padlock-wire.md.
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
	code := cli.Run(ctx, newRoot(cli.OSEnv()), os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
