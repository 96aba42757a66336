package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/logx"
	"github.com/agentgate-dev/agentgate/internal/mcpserver"
	"github.com/agentgate-dev/agentgate/internal/version"
)

func newRoot(env cli.Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockermcp",
		Short: "Padlock MCP server (stdio): tools that verify every chain before a byte reaches the model",
		Long: `lockermcp serves the Padlock tools to an MCP client over stdin/stdout:
locker_create, locker_append, locker_seal, locker_deposit, locker_manifest,
locker_read_blocks. It holds no data: it talks to a Padlock daemon (lockerd, or any daemon
serving the same contract) and verifies the whole hash chain of every read locally.

Configuration (environment only; the MCP client sets it):
  LOCKER_URL               the daemon's base URL, http or https (required)
  LOCKER_TICKET_TRANSPORT  header (default: Authorization: Bearer) or query (?ticket=)

stdout carries only MCP messages. Logs go to stderr: one line per tool call with its name,
outcome and duration; never arguments or results, which may hold write keys and tickets.` +
			cli.ExitCodes("the client closed stdin", "", "could not run: usage error, refused configuration, a broken transport"),
		Example: `  LOCKER_URL=http://127.0.0.1:8000 lockermcp
  lockermcp inspect demo-pad-v1 --url http://127.0.0.1:8000`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.LoadLockerMCP(env.Getenv)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("refusing to start: %w", err))
			}
			log := logx.New(env.Stderr, slog.LevelInfo)
			c, err := lockerclient.New(lockerclient.Config{BaseURL: cfg.URL, TicketTransport: cfg.TicketTransport})
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			srv, err := mcpserver.New(mcpserver.Config{Client: c, Logger: log})
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			log.InfoContext(cmd.Context(), "lockermcp serving on stdio", slog.String("version", version.String()), slog.Any("config", cfg))
			t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopCloser{env.Stdout}}
			if err := srv.Run(cmd.Context(), t); err != nil && cmd.Context().Err() == nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("mcp session ended: %w", err))
			}
			return nil
		},
	}
	root.AddCommand(newInspect(env))
	cli.Setup(root, env, cli.VersionInfo{Name: "lockermcp", Version: version.Version, Commit: version.Commit})
	return root
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
