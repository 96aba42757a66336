// Command lockerd is the Padlock daemon: tamper-evident append-only pads for agent-to-agent
// handoff, served over HTTP from one SQLite file. See README.md and docs/spec/padlock-wire.md.
package main

import (
	"github.com/agentgate-dev/agentgate/internal/cli"
)

func main() { cli.Main(newRoot) }
