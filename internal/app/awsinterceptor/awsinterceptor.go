package awsinterceptor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/agentcore"
	"github.com/agentgate-dev/agentgate/internal/app/awswarrant"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/enforce"
)

// Config is what [New] composes.
type Config struct {
	// Warrant and Interceptor are the function's configuration (internal/config).
	Warrant     config.WarrantAWS
	Interceptor config.Interceptor
	// AWS is the SDK configuration; nil loads it from the environment (Lambda).
	AWS *aws.Config
	// Options are extra client options and the clock (tests).
	Options awswarrant.Options
	// Instance names the execution environment in decision records. Default the core's
	// (host name and process id).
	Instance string
	// RetryEvery is how often an environment whose start failed tries again. Default 10s.
	RetryEvery time.Duration
	// Logger receives the logs. Default: discard.
	Logger *slog.Logger
}

// Bounds of the writes and reads an invocation waits for, within the function's timeout
// (template.yaml: 10 s): one read of a server's approvals, one write of observations or of
// a window of decision records.
const (
	loadTimeout   = 3 * time.Second
	recordTimeout = 3 * time.Second
)

// New builds and starts the interceptor: the catalog and log key (awswarrant.ColdStart),
// the servers to decide for ([Served]), a processor started on them, and agentcore.Handler
// over it. If any of that fails, the handler is agentcore.Retry of the same start. final
// writes the decision records held (Processor.Sync with force): the main calls it on
// SIGTERM.
func New(ctx context.Context, c Config) (h agentcore.HandlerFunc, final func(context.Context), err error) {
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if c.RetryEvery <= 0 {
		c.RetryEvery = 10 * time.Second
	}
	ic := c.Interceptor
	var proc atomic.Pointer[enforce.Processor]
	start := func(ctx context.Context) (agentcore.HandlerFunc, error) {
		w, err := awswarrant.ColdStart(ctx, c.Warrant, c.AWS, ic.Role, log, c.Options)
		if err != nil {
			return nil, err
		}
		servers, err := Served(ctx, w, ic.Servers)
		if err != nil {
			return nil, err
		}
		p, err := enforce.New(agentcore.ProcessorConfig(enforce.Config{Servers: servers, Source: enforce.CatalogFeedSource{CatalogSource: enforce.CatalogSource{Catalog: w.Catalog}},
			Recorder: enforce.CatalogRecorder(w.Service), Decisions: enforce.CatalogDecisions(w.Service), Shadow: ic.Shadow, RecordEvery: ic.RecordEvery,
			Refresh: ic.Refresh, Staleness: ic.Staleness, LoadTimeout: loadTimeout, RecordTimeout: recordTimeout, Instance: c.Instance, Logger: log, Now: c.Options.Now}))
		if err != nil {
			return nil, err
		}
		p.Start(ctx)
		proc.Store(p)
		log.InfoContext(ctx, "interceptor: started", slog.Any("config", ic), slog.Bool("fresh", p.Fresh()))
		return agentcore.Handler(p, agentcore.Options{Refresh: ic.Refresh, Logger: log}), nil
	}
	if h, err = start(ctx); err != nil {
		log.ErrorContext(ctx, "interceptor: cold start failed; denying every message and retrying", slog.String("error", err.Error()), slog.Duration("retry", c.RetryEvery))
		h = agentcore.Retry(start, c.RetryEvery, log)
	}
	return h, func(ctx context.Context) {
		if p := proc.Load(); p != nil {
			if err := p.Sync(ctx, true); err != nil {
				log.WarnContext(ctx, "interceptor: the last decision records were not written", slog.String("error", err.Error()))
			}
		}
	}, nil
}

// Served returns the servers to decide for: the ones named, each of which the catalog must
// hold, or every server it holds (at least one).
func Served(ctx context.Context, w *awswarrant.Warrant, named []string) ([]string, error) {
	srvs, err := w.Catalog.Servers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the catalog's servers: %w", err)
	}
	var known []string
	for _, s := range srvs {
		known = append(known, s.Name)
	}
	for _, n := range named {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("INTERCEPTOR_SERVERS names %q, which the catalog does not hold (it holds %v)", n, known)
		}
	}
	if len(named) > 0 {
		return named, nil
	}
	if len(known) == 0 {
		return nil, errors.New("the catalog holds no server yet (the crawl function registers TOOLWARRANT_SERVERS at its cold start)")
	}
	return known, nil
}
