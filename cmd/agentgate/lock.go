package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

func (a *app) lockCmd() *cobra.Command {
	var server string
	var noSnapshot bool
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "List every configured server and write agentgate.lock",
		Long: `lock starts or connects to every server in the MCP client config, lists its tools
(following pagination) and writes agentgate.lock: per server a surfaceHash, and per tool
the SHA-256 of its name, description and canonical (RFC 8785) input schema. It also writes
agentgate.snapshot.json, the plaintext of what was locked, so that diffs can show the old
words; commit both.

Nothing is written unless every listed server answered. If the surface is unchanged the
files are left as they are. --server NAME refreshes one server and keeps the others as
locked (a NAME no longer in the config is dropped from the lockfile).` + fmt.Sprintf(exitCodesHelp, "the lockfile was written or is already up to date", "(not used)"),
		Example: `  agentgate lock
  agentgate lock --config .vscode/mcp.json --server github`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := a.resolve(cmd, true)
			if err != nil {
				return err
			}
			return a.lock(cmd, o, server, !noSnapshot)
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "refresh only the server `NAME`, keeping the others as locked")
	cmd.Flags().BoolVar(&noSnapshot, "no-snapshot", false, "do not write the snapshot file")
	return cmd
}

func (a *app) lock(cmd *cobra.Command, o opts, server string, withSnapshot bool) error {
	cfg, err := a.loadConfig(o)
	if err != nil {
		return err
	}
	old, missing, err := a.readLockfile(o)
	if err != nil {
		return err
	}
	oldSnap := lockfile.Surface(nil)
	if !missing {
		oldSnap = a.readSnapshot(o)
	}

	servers := selectServers(cfg, server)
	dropped := false
	if server != "" && len(servers) == 0 {
		if old != nil {
			if _, ok := old.Servers[server]; ok {
				dropped = true
			}
		}
		if !dropped {
			return cli.Usage(cmd, "server %q is neither in %s (servers: %s) nor in %s", server, a.rel(o.config), namesOrNone(cfg.Names()), a.rel(o.lockfile))
		}
	}
	results := a.listAll(cmd.Context(), o, servers)
	if err := a.failures(results, "nothing was written"); err != nil {
		return err
	}

	live := lockfile.Surface{}
	for _, r := range results {
		live[r.name] = r.defs
	}
	now := a.deps.now()
	next, err := lockfile.New(live, "agentgate@"+a.deps.version, now)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	snap := live
	if server != "" && old != nil {
		// Keep every other server as locked, with its snapshot entry if it still matches.
		merged := lockfile.Surface{}
		for name, s := range old.Servers {
			if name == server {
				continue
			}
			next.Servers[name] = s
			if defs, ok := oldSnap[name]; ok && snapshotMatches(defs, s) {
				merged[name] = defs
			}
		}
		for name, defs := range live {
			merged[name] = defs
		}
		snap = merged
	}

	if old != nil && lockfile.SameSurface(old, next) {
		// Unchanged surface: keep generatedAt so an idle run changes no bytes.
		next.GeneratedAt = old.GeneratedAt
	}
	data, err := next.Marshal()
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	tools := 0
	for _, s := range next.Servers {
		tools += len(s.Tools)
	}
	prev, _ := os.ReadFile(o.lockfile)
	switch {
	case bytes.Equal(prev, data):
		fmt.Fprintf(a.env.Stdout, "%s is up to date: %s\n", a.rel(o.lockfile), counts(len(next.Servers), tools))
	default:
		if err := writeFileAtomic(o.lockfile, data); err != nil {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %w", a.rel(o.lockfile), unwrapPath(err)))
		}
		fmt.Fprintf(a.env.Stdout, "wrote %s: %s\n", a.rel(o.lockfile), counts(len(next.Servers), tools))
	}
	if dropped {
		fmt.Fprintf(a.env.Stdout, "dropped server %q, which is no longer in %s\n", server, a.rel(o.config))
	}
	if withSnapshot {
		sdata, err := lockfile.MarshalSnapshot(snap)
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		if prev, _ := os.ReadFile(o.snapshot); !bytes.Equal(prev, sdata) {
			if err := writeFileAtomic(o.snapshot, sdata); err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %w", a.rel(o.snapshot), unwrapPath(err)))
			}
		}
	}
	return nil
}

// snapshotMatches reports whether defs are exactly the tools locked in s.
func snapshotMatches(defs []lockfile.Definition, s lockfile.Server) bool {
	got, err := lockfile.LockServer(defs)
	return err == nil && got.SurfaceHash == s.SurfaceHash
}

func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
