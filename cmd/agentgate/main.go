// Command agentgate pins the tool surface of your MCP servers in agentgate.lock and fails CI
// when it drifts: `agentgate lock`, `agentgate diff`, `agentgate ci`, `agentgate version`.
// See docs/agentgate.md.
package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/version"
)

func main() { cli.Main(func(env cli.Env) *cobra.Command { return newRoot(env, defaultDeps()) }) }

// deps are the parts of the outside world the commands use, replaceable in tests.
type deps struct {
	now     func() time.Time
	version string
	commit  string
	getwd   func() (string, error)
	list    func(context.Context, mcpclient.Server, mcpclient.Options) (*mcpclient.Listing, error)
	// environ is the base environment of stdio servers; nil means the process environment.
	environ []string
}

func defaultDeps() deps {
	return deps{
		now:     time.Now,
		version: version.Version,
		commit:  version.Commit,
		getwd:   os.Getwd,
		list:    mcpclient.ListTools,
	}
}
