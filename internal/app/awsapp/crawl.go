package awsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/emf"
	"github.com/agentgate-dev/agentgate/internal/pkgid"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// CrawlEvent is what the crawl function accepts: an EventBridge event (scheduled:
// "detail-type": "Scheduled Event", or a manual one whose detail names servers) or a
// direct invocation {"servers": [...]}. No servers means every server in the catalog.
type CrawlEvent struct {
	DetailType string `json:"detail-type"`
	Detail     struct {
		Servers []string `json:"servers"`
	} `json:"detail"`
	Servers []string `json:"servers"`
}

// ServerOutcome is what one server's crawl did.
type ServerOutcome struct {
	Server      string   `json:"server"`
	OK          bool     `json:"ok"`
	Crawl       int64    `json:"crawl,omitempty"`
	Tools       int      `json:"tools"`
	Accepted    int      `json:"accepted"`
	NewVersions []string `json:"newVersions"`
	Refused     int      `json:"refused"`
	Removed     []string `json:"removed"`
	ElapsedMS   int64    `json:"elapsedMs"`
	Error       string   `json:"error,omitempty"`
}

// CrawlResult is the crawl function's result.
type CrawlResult struct {
	Servers  []ServerOutcome `json:"servers"`
	Crawled  int             `json:"crawled"`
	Failed   int             `json:"failed"`
	Recorded int             `json:"recorded"`
}

// CrawlDeps are what the crawl handler needs besides the service.
type CrawlDeps struct {
	Warrant *Warrant
	Config  config.WarrantAWS
	Bounds  config.Toolwarrant
	// Getenv resolves per-server header values named by environment variable at crawl time.
	Getenv func(string) string
	// Secrets reads the header values named by Secrets Manager or SSM ARN, at every
	// invocation. Zero: such headers fail their server with a clear error.
	Secrets Secrets
	// Crawler is the crawler configuration base (tests inject a resolver or dialer).
	Crawler crawler.Config
	Logger  *slog.Logger
	// Metrics receives one EMF line per invocation (ServersCrawled, ServersFailed).
	Metrics Metrics
}

// RegisterServers adds the configured catalog of servers (TOOLWARRANT_SERVERS); an
// identical server already present is a no-op. A different one with the same name is
// reported, not changed.
func RegisterServers(ctx context.Context, d CrawlDeps) error {
	var errs []error
	for _, s := range d.Config.Servers {
		added, err := d.Warrant.Service.AddServer(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if added {
			d.Logger.InfoContext(ctx, "server added", slog.String("server", s.Name), slog.String("url", s.URL))
		}
	}
	return errors.Join(errs...)
}

// CrawlHandler returns the crawl Lambda's handler: the crawl run of the domain
// (warrant.Service.Crawl, the CLI's too) with header values from the environment,
// Secrets Manager and SSM. It lists every requested server with
// bounded concurrency (TOOLWARRANT_CRAWL_CONCURRENCY), each within its own timeout and
// all of them within the invocation's deadline less CRAWL_DEADLINE_MARGIN, through the
// SSRF-guarded crawler; then records each listing (observations, versions, proposals and
// their KMS-signed audit entries in one transaction per server). Per-server outcomes are
// in the result and one log line each; a server that could not be listed or recorded
// (KMS down: nothing is recorded) is a failed outcome, not a failed invocation: a retry of
// the whole crawl would not help the others, and one unreachable upstream must not hide
// the rest. What makes a failed server visible is the EMF record each invocation ends with
// (MetricServersCrawled, MetricServersFailed, and the names of the failed servers), which
// template.yaml's crawl-failure alarm watches. An invocation that cannot even read the
// catalog returns an error (the Errors alarm, Lambda's retries, then the OnFailure queue).
func CrawlHandler(d CrawlDeps) func(context.Context, json.RawMessage) (CrawlResult, error) {
	return func(ctx context.Context, raw json.RawMessage) (CrawlResult, error) {
		var ev CrawlEvent
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &ev); err != nil {
				return CrawlResult{}, fmt.Errorf("crawl: the event is not JSON: %w", err)
			}
		}
		return d.crawl(ctx, append(ev.Servers, ev.Detail.Servers...))
	}
}

// crawl is one crawl run of the servers named by want (none: every server in the catalog),
// logged and metered as CrawlHandler says. Its error is the catalog's: no server was tried.
func (d CrawlDeps) crawl(ctx context.Context, want []string) (CrawlResult, error) {
	log := d.Logger
	var secrets config.SecretReader
	if d.Secrets.SecretsManager != nil || d.Secrets.SSM != nil {
		secrets = d.Secrets.Reader() // one read per ARN per invocation
	}
	cc := d.Crawler
	cc.Concurrency, cc.Timeout, cc.MaxResponseBytes = d.Bounds.CrawlConcurrency, d.Bounds.CrawlTimeout, d.Bounds.CrawlMaxResponseBytes
	cc.MaxListingBytes, cc.MaxServerBytes = d.Bounds.CrawlMaxListingBytes, d.Bounds.CrawlMaxServerBytes
	if cc.Logger == nil {
		cc.Logger = log
	}
	outcomes, err := d.Warrant.Service.Crawl(ctx, warrant.CrawlRequest{Servers: want, Headers: config.HeaderResolver(d.Getenv, secrets),
		Lister:   crawler.Lister{Config: cc, DeadlineMargin: d.Config.DeadlineMargin},
		Packages: crawler.PackageChecker(cc, pkgid.Config{NPMRegistry: d.Bounds.NPMRegistry, PyPIIndex: d.Bounds.PyPIIndex, Timeout: d.Bounds.CrawlTimeout})})
	if err != nil {
		return CrawlResult{}, fmt.Errorf("crawl: list servers: %w", err)
	}
	res := CrawlResult{Servers: []ServerOutcome{}}
	for _, o := range outcomes {
		so := ServerOutcome{Server: o.Server, ElapsedMS: o.Elapsed.Milliseconds(), NewVersions: []string{}, Removed: []string{}}
		if o.Listed() {
			res.Crawled++
			so.Tools = o.Tools
		}
		switch o.Failed {
		case "":
			ir := o.Result
			so.OK, so.Crawl, so.Accepted, so.Refused, so.Removed = true, ir.Crawl, ir.Accepted, len(ir.Refused), ir.Removed
			for _, nv := range ir.New {
				so.NewVersions = append(so.NewVersions, nv.Tool+"@"+string(nv.Digest))
			}
			res.Recorded++
		case warrant.StageSelect:
			so.Error = "not in the catalog"
		case warrant.StageRecord:
			so.Error = "record: " + o.Err.Error()
		default:
			so.Error = o.Err.Error()
		}
		res.Servers = append(res.Servers, so)
	}
	failed := []string{}
	for _, so := range res.Servers {
		if !so.OK {
			res.Failed++
			failed = append(failed, so.Server)
			log.ErrorContext(ctx, "crawl failed", slog.String("server", so.Server), slog.String("error", so.Error))
			continue
		}
		log.InfoContext(ctx, "crawl recorded", slog.String("server", so.Server), slog.Int64("crawl", so.Crawl), slog.Int("tools", so.Tools),
			slog.Int("new_versions", len(so.NewVersions)), slog.Int("refused", so.Refused), slog.Any("removed", so.Removed), slog.Int64("elapsed_ms", so.ElapsedMS))
	}
	d.Metrics.emit(ctx, log, []emf.Metric{
		{Name: MetricServersCrawled, Unit: emf.Count, Value: float64(len(res.Servers))},
		{Name: MetricServersFailed, Unit: emf.Count, Value: float64(res.Failed)},
	}, map[string]any{"failedServers": failed})
	return res, nil
}
