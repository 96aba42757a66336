// Command toolwarrant keeps a catalog of the MCP servers an agentgateway fronts, crawls them
// directly through an SSRF-hardened client, records every exact tool definition as an
// immutable version with its RFC 8785 digest, and grades every change CRITICAL, WARNING
// or INFO: `toolwarrant init`, `server add|list`, `crawl`, `list`, `show`, `diff`,
// `version`. See docs/toolwarrant.md and docs/drift-grading.md.
package main

import (
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/version"
)

func main() { cli.Main(func(env cli.Env) *cobra.Command { return newRoot(env, defaultDeps()) }) }

// deps are the parts of the outside world the commands use, replaceable in tests.
type deps struct {
	now      func() time.Time
	getwd    func() (string, error)
	identity func() string
	// crawl is the crawler configuration before the command's own settings; tests inject a
	// resolver and dialer here.
	crawl crawler.Config
	// version and commit identify the build (internal/version).
	version, commit string
}

func defaultDeps() deps {
	return deps{now: time.Now, getwd: os.Getwd, identity: defaultIdentity, version: version.Version, commit: version.Commit}
}

// defaultIdentity is user@host, the identity recorded for crawls and added servers when
// neither --identity nor TOOLWARRANT_IDENTITY is given.
func defaultIdentity() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
}
