package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/logx"
)

// enforceFlags are the flags serve and proxy share: where approvals come from, how fresh
// they must be, shadow mode and the decision records.
type enforceFlags struct {
	servers                    []string
	store, observations        string
	logLevel                   string
	refresh, staleness, decide time.Duration
	recordEvery                time.Duration
	shadow                     bool
}

func (f *enforceFlags) register(c *cobra.Command, a *app) {
	fs := c.Flags()
	fs.StringArrayVar(&f.servers, "server", nil, "upstream `NAME` to decide for (the catalog's server name); repeat for several (default: every server in the catalog)")
	fs.StringVar(&f.store, "store", "catalog", storeHelp)
	fs.StringVar(&a.flagBlobBucket, "blob-bucket", "", blobBucketHelp)
	fs.StringVar(&f.observations, "observations", "", "append observations (tools listed but not served) and decision records as JSON lines to `FILE` instead of the audit log (the catalog is then only read)")
	fs.DurationVar(&f.refresh, "refresh", enforce.DefaultRefresh, "re-read approvals this often")
	fs.DurationVar(&f.staleness, "staleness", enforce.DefaultStaleness, "deny everything when approvals are older than this")
	fs.DurationVar(&f.decide, "decision-timeout", enforce.DefaultDecisionTimeout, "deny a decision that takes longer")
	fs.DurationVar(&f.recordEvery, "record-every", enforce.DefaultRecordEvery, "write the decision records (counts per server, tool, digest and outcome) to the audit log this often, and on SIGTERM")
	fs.BoolVar(&f.shadow, "shadow", false, "shadow mode: decide and record as usual, but let everything through (what would have been stopped is recorded as would-deny)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (JSON logs on stderr unless it is a terminal)")
}

// open opens the store, resolves the servers and fills cfg with what the flags say. The
// caller closes the store.
func (f *enforceFlags) open(ctx context.Context, cmd *cobra.Command, a *app, cfg *enforce.Config) (*evidenceStore, *slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, nil, cli.Usage(cmd, "--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	if f.recordEvery < time.Second {
		return nil, nil, cli.Usage(cmd, "--record-every %s: use at least 1s", f.recordEvery)
	}
	log := logx.New(a.env.Stderr, level)
	// With --observations FILE the catalog is only read.
	st, err := a.openStore(ctx, cmd, f.store, f.observations == "")
	if err != nil {
		return nil, nil, err
	}
	servers, err := servedServers(ctx, cmd, st, f.servers)
	if err != nil {
		st.close()
		return nil, nil, err
	}
	rec, decisions := st.recorder, st.decisions
	if f.observations != "" {
		j := &enforce.JSONLRecorder{Path: f.observations}
		rec, decisions = j, j
	}
	if rec == nil {
		log.WarnContext(ctx, "enforce: observations and decision records are only logged: this store cannot record them; pass --observations FILE to keep them")
		decisions = enforce.LogDecisions(log)
	}
	cfg.Servers, cfg.Source, cfg.Recorder, cfg.Decisions = servers, st.source, rec, decisions
	cfg.Refresh, cfg.Staleness, cfg.DecisionTimeout = f.refresh, f.staleness, f.decide
	cfg.RecordEvery, cfg.Shadow, cfg.Logger = f.recordEvery, f.shadow, log
	return st, log, nil
}
