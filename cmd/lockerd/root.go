package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"

	"github.com/agentgate-dev/agentgate/internal/app"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/logx"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/version"
)

// shutdownGrace bounds how long in-flight requests may take to finish after SIGTERM.
const shutdownGrace = 15 * time.Second

func newRoot(env cli.Env) *cobra.Command {
	var db, host string
	var port int
	root := &cobra.Command{
		Use:   "lockerd",
		Short: "Padlock daemon: tamper-evident append-only pads for agent handoff",
		Long: `lockerd serves the Padlock HTTP API from one SQLite file.

Configuration comes from flags, then environment variables, then defaults:
  --db    LOCKER_DB_PATH             (locker.db)
  --host  LOCKER_HOST                (127.0.0.1)
  --port  LOCKER_PORT                (8000)
          LOCKER_MODE                open (default; aliases local, dev) or txid (alias x402)
          PAYMENT_WALLET_ADDRESS     txid: the wallet a create must pay (required in txid mode)
          BASE_RPC_URL               txid: Base JSON-RPC endpoint (https://mainnet.base.org)
          REQUIRED_USDC_UNITS        txid: price per pad in USDC units, 6 decimals (2000)
          USDC_CONTRACT              txid: token contract (Base native USDC)
          LOCKER_READ_LEASE_SECONDS  read_once lease window (600)
          LOCKER_READ_TIMEOUT        bound on reading one request, headers and body (30s)
          LOCKER_MAX_CONNS           connections served at once; more wait to be accepted (512)
          LOCKER_LOG_LEVEL           debug, info, warn, error (info)

Logs go to stderr (JSON unless stderr is a terminal) and never contain write keys or
tickets. SIGTERM or Ctrl-C finishes in-flight requests, then exits.` +
			cli.ExitCodes("clean shutdown (SIGTERM or Ctrl-C)", "refused configuration, every problem named (the Padlock wire contract's code: docs/cli.md)",
				"could not start: usage error, the store cannot be opened, the address is in use"),
		Example: `  lockerd --db /var/lib/padlock/locker.db
  curl -s http://127.0.0.1:8000/v1/pads/demo-pad-v1/blocks`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A flag's bad value is the caller's usage error (2), named as the flag; the
			// same value from LOCKER_PORT is a refused configuration (1).
			if cmd.Flags().Changed("port") && (port < 0 || port > 65535) {
				return cli.Usage(cmd, "--port %d: a port is from 0 to 65535 (0 picks a free one)", port)
			}
			getenv := func(k string) string {
				switch {
				case k == "LOCKER_DB_PATH" && cmd.Flags().Changed("db"):
					return db
				case k == "LOCKER_HOST" && cmd.Flags().Changed("host"):
					return host
				case k == "LOCKER_PORT" && cmd.Flags().Changed("port"):
					return strconv.Itoa(port)
				}
				return env.Getenv(k)
			}
			cfg, err := config.LoadLocker(getenv)
			if err == nil && cfg.Mode == config.ModeTxid && cfg.WalletAddress == "" {
				// The handler would answer every create 500 "payment configuration error"
				// (the wire contract's answer); a daemon refuses to start that way instead.
				err = errors.New("LOCKER_MODE=txid needs PAYMENT_WALLET_ADDRESS, the 0x address every create must pay: set it, or use LOCKER_MODE=open for free pads")
			}
			if err != nil {
				return cli.Exit(1, fmt.Errorf("refusing to start: %w", err))
			}
			return serve(cmd.Context(), cfg, env, nil)
		},
	}
	root.Flags().StringVar(&db, "db", "", "SQLite database file (env LOCKER_DB_PATH, default locker.db)")
	root.Flags().StringVar(&host, "host", "", "bind address (env LOCKER_HOST, default 127.0.0.1)")
	root.Flags().IntVar(&port, "port", 0, "bind port, 0 picks a free one (env LOCKER_PORT, default 8000)")
	root.AddCommand(newCheckIntegrity(env))
	cli.Setup(root, env, cli.VersionInfo{Name: "lockerd", Version: version.Version, Commit: version.Commit})
	return root
}

// serve runs the daemon until ctx is cancelled. ready, when set, receives the bound address.
// maxHeaderBytes bounds a request's headers (net/http allows 4,096 bytes over it).
const maxHeaderBytes = 16 << 10

func serve(ctx context.Context, cfg config.Locker, env cli.Env, ready chan<- string) error {
	log := logx.New(env.Stderr, cfg.LogLevel)
	store, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: cfg.DBPath})
	if err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("cannot open the pad store: %w", err))
	}
	defer store.Close()
	h, err := app.LockerHandler(ctx, cfg, store, nil, log)
	if err != nil {
		if cfg.Mode == config.ModeTxid {
			return cli.Exit(1, fmt.Errorf("refusing to start: %w", err))
		}
		return cli.Exit(cli.ExitUsage, err)
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		// The port is taken or privileged; anything else (a name that does not resolve, an
		// address not on this machine) is the host's.
		hint := "choose an address of this machine with LOCKER_HOST or --host, such as 127.0.0.1"
		if errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EACCES) {
			hint = "choose another port with LOCKER_PORT or --port; 0 picks a free one"
		}
		return cli.Exit(cli.ExitUsage, fmt.Errorf("cannot listen on %s: %w (%s)", cfg.Addr(), err, hint))
	}
	// A client may not hold a connection by trickling its request (ReadTimeout covers the
	// body), nor may many such clients exhaust file descriptors (LimitListener: at most
	// MaxConns served at once, the rest wait in the accept queue). Request headers are
	// bounded as uvicorn's default h11 parser bounds the Python peer's (16 KiB), not by Go's 1 MB: a
	// block's content_type is stored verbatim and is not part of the pad's byte quota.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, cfg.ReadTimeout), ReadTimeout: cfg.ReadTimeout,
		WriteTimeout: cfg.ReadTimeout + 60*time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: maxHeaderBytes}
	ln = netutil.LimitListener(ln, cfg.MaxConns)
	url := "http://" + ln.Addr().String()
	// The effective configuration beside the URL: in txid mode the payment terms a create
	// must meet (docs/payments.md), the RPC endpoint's scheme and host only (its path or
	// query may carry an API key).
	log.InfoContext(ctx, "lockerd listening", "url", url, "version", version.String(), "db_path", store.Path(), "mode", string(cfg.Mode), "config", cfg)
	fmt.Fprintf(env.Stderr, "lockerd %s serving %s (store %s)\n  try: curl -s %s/v1/pads/demo-pad-v1/blocks\n", version.Version, url, store.Path(), url)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return cli.Exit(cli.ExitUsage, fmt.Errorf("server stopped: %w", err))
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("shutdown: %w", err))
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return cli.Exit(cli.ExitUsage, err)
	}
	return nil
}

// integrityReport is check-integrity's --json document (docs/lockerd.md).
type integrityReport struct {
	Database    string      `json:"database"`
	PadsChecked int         `json:"pads_checked"`
	Problems    int         `json:"pads_with_problems"`
	Consistent  bool        `json:"consistent"`
	Pads        []padReport `json:"pads"`
}

type padReport struct {
	PadID      string   `json:"pad_id"`
	State      string   `json:"state"`
	BlockCount int      `json:"block_count"`
	TotalBytes int      `json:"total_bytes"`
	HeadHash   string   `json:"head_hash"`
	Consistent bool     `json:"consistent"`
	Problems   []string `json:"problems"`
}

func newCheckIntegrity(env cli.Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check-integrity DB",
		Short: "Check every pad's chain in a database, read-only",
		Long: `check-integrity opens the database read-only, changes nothing, and checks every pad:
contiguous seq, prev linkage from genesis, each curr_hash recomputed from its payload, the
stored head and the byte and block counts.

It cannot tell you that acknowledged data was lost: a chain whose tail was discarded looks
like a shorter consistent chain. Compare against your own acknowledgment records for that.` +
			cli.ExitCodes("every pad consistent", "problems found", "could not run: usage error, the database could not be read"),
		Example: `  lockerd check-integrity locker.db --json`,
		Args:    cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: args[0], ReadOnly: true})
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read %s: %w", args[0], err))
			}
			defer store.Close()
			rep := integrityReport{Database: store.Path(), Pads: []padReport{}}
			err = store.EachPad(ctx, func(p locker.Pad) error {
				blocks, err := store.Blocks(ctx, p.ID, 0, 1<<31-1)
				if err != nil {
					return err
				}
				problems := locker.Audit(p, blocks)
				pr := padReport{PadID: p.ID, State: string(p.State), BlockCount: p.BlockCount, TotalBytes: p.TotalBytes,
					HeadHash: p.HeadHash, Consistent: len(problems) == 0, Problems: problems}
				if pr.Problems == nil {
					pr.Problems = []string{}
				} else {
					rep.Problems++
				}
				rep.Pads = append(rep.Pads, pr)
				return nil
			})
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read %s: %w", args[0], err))
			}
			rep.PadsChecked = len(rep.Pads)
			rep.Consistent = rep.Problems == 0
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Pads {
					if p.Consistent {
						fmt.Fprintf(env.Stdout, "ok        %s  %s, %d blocks, %d bytes, head %s\n", p.PadID, p.State, p.BlockCount, p.TotalBytes, p.HeadHash)
						continue
					}
					fmt.Fprintf(env.Stdout, "PROBLEMS  %s  %s, %d blocks, %d bytes\n", p.PadID, p.State, p.BlockCount, p.TotalBytes)
					for _, pr := range p.Problems {
						fmt.Fprintf(env.Stdout, "          - %s\n", pr)
					}
				}
				fmt.Fprintf(env.Stdout, "%s checked, %d with problems\n", cli.Count(rep.PadsChecked, "pad", ""), rep.Problems)
			}
			if !rep.Consistent {
				return cli.Found()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return cmd
}
