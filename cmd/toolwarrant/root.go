package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// exitCodes formats the "Exit codes" section of a command's help.
func exitCodes(ok, found string) string {
	s := "\n\nExit codes:\n  0  " + ok + "\n"
	if found != "" {
		s += "  1  " + found + "\n"
	}
	return s + "  2  could not run: usage error, no or unreadable catalog (or one readable by group or\n" +
		"     others), invalid configuration, a server that could not be crawled"
}

type app struct {
	env  cli.Env
	deps deps

	flagCatalog, flagIdentity, flagLogKey, flagRemote string
	// flagBlobBucket is --blob-bucket of the commands that take --store.
	flagBlobBucket string
}

func newRoot(env cli.Env, d deps) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	a := &app{env: env, deps: d}
	root := &cobra.Command{
		Use:   "toolwarrant",
		Short: "Catalog, crawl and grade every MCP tool definition an agent could be shown",
		Long: `toolwarrant keeps a catalog of the MCP servers you front with agentgateway. 'crawl' lists
their tools directly (never through the gateway) with a client that refuses loopback,
private, link-local and cloud-metadata addresses unless a server was added with
--allow-private; every exact tool definition becomes an immutable version named by its
digest, the SHA-256 of the RFC 8785 canonical JSON of the tool object as served. Every new
digest opens a pending proposal, and every change is graded CRITICAL, WARNING or INFO with a
reason per rule (docs/drift-grading.md). Text that could hide instructions from a person
(invisible, bidi and tag characters, look-alike names) is flagged, and never printed raw
unless you pass --accept-suspicious.

A named person approves one exact digest with their SSH key ('approve --hash'), over the
audit head they read; the trust list of such keys and every observation and decision are
entries of a hash-chained audit log signed by the log key, written in the same transaction
as what they record, and checked by 'audit verify'.

The catalog is one SQLite file, created 0600 by 'toolwarrant init': --catalog, else
$TOOLWARRANT_CATALOG, else ./toolwarrant.db.

Every command exits 0 when it did what it says, 1 when it ran and found something (changes,
something new, problems in the audit log), 2 when it could not run; its --help says which
apply.`,
		Example: `  toolwarrant init
  toolwarrant server add weather https://weather.example.com/mcp --header-env Authorization=WEATHER_TOKEN
  toolwarrant crawl
  toolwarrant list --pending
  toolwarrant diff weather get_forecast
  toolwarrant trust init --ssh-key ~/.ssh/id_ed25519.pub --principal alice@example.com
  toolwarrant approve weather get_forecast --hash sha256:… --sign-key ~/.ssh/id_ed25519
  toolwarrant review --sign-key ~/.ssh/id_ed25519`,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.flagCatalog, "catalog", "", "catalog `PATH` (env TOOLWARRANT_CATALOG; default ./toolwarrant.db)")
	pf.StringVar(&a.flagLogKey, "log-key", "", "the log key `PATH` that signs every audit entry (env TOOLWARRANT_LOG_KEY; default: the catalog path + .logkey)")
	pf.StringVar(&a.flagIdentity, "identity", "", "who this process acts as, recorded with every crawl and added server (env TOOLWARRANT_IDENTITY; default user@host)")
	root.AddCommand(a.initCmd(), a.trustCmd(), a.serverCmd(), a.crawlCmd(), a.listCmd(), a.showCmd(), a.diffCmd(),
		a.decideCmd(warrant.DecisionApproved), a.decideCmd(warrant.DecisionRejected), a.decideCmd(warrant.DecisionRolledBack),
		a.auditCmd())
	root.AddCommand(newServeCmd(a), newProxyCmd(a), a.decisionsCmd(), a.demoCmd())
	root.AddCommand(newEmitCmd(a))
	root.AddCommand(newVerifyGatewayCmd(a))
	root.AddCommand(a.reviewCmd(), a.reviewPolicyCmd())
	root.AddCommand(a.tlogCmd())
	root.AddCommand(a.witnessCmd())
	cli.Setup(root, env, cli.VersionInfo{Name: "toolwarrant", Version: d.version, Commit: d.commit})
	return root
}

// settings resolves configuration once: flag > environment > default. Problems exit 2.
func (a *app) settings(cmd *cobra.Command) (config.Toolwarrant, error) {
	cfg, err := config.LoadToolwarrant(a.env.Getenv)
	if err != nil {
		return cfg, cli.Exit(cli.ExitUsage, err)
	}
	if cmd.Flags().Changed("catalog") {
		cfg.Catalog = a.flagCatalog
	}
	if cmd.Flags().Changed("identity") {
		cfg.Identity = strings.TrimSpace(a.flagIdentity)
	}
	if cfg.Catalog == "" {
		return cfg, cli.Usage(cmd, "--catalog must not be empty")
	}
	if !filepath.IsAbs(cfg.Catalog) {
		wd, err := a.deps.getwd()
		if err != nil {
			return cfg, cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read the working directory: %v", err))
		}
		cfg.Catalog = filepath.Join(wd, cfg.Catalog)
	}
	if cfg.Identity == "" {
		cfg.Identity = a.deps.identity()
	}
	if cmd.Flags().Changed("log-key") {
		cfg.LogKey = a.flagLogKey
	}
	if cfg.LogKey == "" {
		cfg.LogKey = cfg.Catalog + ".logkey"
	} else if !filepath.IsAbs(cfg.LogKey) {
		wd, _ := a.deps.getwd()
		cfg.LogKey = filepath.Join(wd, cfg.LogKey)
	}
	return cfg, nil
}

// open opens the catalog and the service over it. The caller closes the catalog.
func (a *app) open(ctx context.Context, cmd *cobra.Command, readOnly bool) (*sqlitestore.Catalog, *warrant.Service, config.Toolwarrant, error) {
	w, cfg, err := a.openWarrant(ctx, cmd, readOnly)
	if err != nil {
		return nil, nil, cfg, err
	}
	return w.Catalog, w.Service, cfg, nil
}

// openWarrant resolves the settings and opens embedded toolwarrant (internal/app/localapp).
// The caller closes it.
func (a *app) openWarrant(ctx context.Context, cmd *cobra.Command, readOnly bool) (*localapp.Toolwarrant, config.Toolwarrant, error) {
	cfg, err := a.settings(cmd)
	if err != nil {
		return nil, cfg, err
	}
	w, err := localapp.OpenToolwarrant(ctx, a.toolwarrantConfig(cfg, readOnly))
	if err != nil {
		return nil, cfg, cli.Exit(cli.ExitUsage, err)
	}
	return w, cfg, nil
}

// openAuditLog opens the catalog at path read-only, for its audit log (audit verify,
// checkpoint). The caller closes it.
func openAuditLog(ctx context.Context, path string) (*sqlitestore.Catalog, error) {
	w, err := localapp.OpenToolwarrant(ctx, localapp.ToolwarrantConfig{Catalog: path, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return w.Catalog, nil
}

func (a *app) toolwarrantConfig(cfg config.Toolwarrant, readOnly bool) localapp.ToolwarrantConfig {
	return localapp.ToolwarrantConfig{Catalog: cfg.Catalog, LogKey: cfg.LogKey, ReadOnly: readOnly, Identity: cfg.Identity, Now: a.deps.now}
}

// failed maps a service error to an exit code: not found and invalid input are usage
// errors (2), as is everything else that stops a command from running.
func failed(err error) error {
	if err == nil {
		return nil
	}
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		return err
	}
	return cli.Exit(cli.ExitUsage, err)
}

func (a *app) initCmd() *cobra.Command {
	var keyType string
	c := &cobra.Command{
		Use:   "init",
		Short: "Create an empty catalog, readable and writable by you alone (mode 0600)",
		Long: `Create an empty catalog at --catalog (else $TOOLWARRANT_CATALOG, else ./toolwarrant.db),
and the log key that signs every audit entry (--log-key, else $TOOLWARRANT_LOG_KEY, else the
catalog path + .logkey; an ECDSA P-256 key, or --key-type ed25519), both with mode 0600. An
existing file is never touched.` + exitCodes("the catalog and the key were created", ""),
		Example: "  toolwarrant init\n  toolwarrant --catalog /var/lib/toolwarrant/catalog.db init --key-type ed25519",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.settings(cmd)
			if err != nil {
				return err
			}
			w, err := localapp.CreateToolwarrant(cmd.Context(), a.toolwarrantConfig(cfg, false), keyType)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			defer w.Close()
			fmt.Fprintf(a.env.Stdout, "created catalog %s (mode 0600)\ncreated log key %s (mode 0600), key id %s\n", w.Catalog.Path(), cfg.LogKey, w.LogKey.KeyID())
			return nil
		},
	}
	c.Flags().StringVar(&keyType, "key-type", "ecdsa-p256", "log key algorithm: ecdsa-p256 or ed25519")
	return c
}
