package enforce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate-dev/agentgate/internal/readbound"
)

// Defaults for [Config].
const (
	DefaultRefresh         = 5 * time.Second
	DefaultStaleness       = 30 * time.Second
	DefaultDecisionTimeout = 2 * time.Second
	// DefaultMaxMessageBytes bounds what the processor decides (the gateway sets no limit
	// on what it sends; gRPC refuses larger messages before they reach a handler): the one
	// message bound every remote read shares (readbound), so that what `agentgate lock` and
	// the crawler accept, the proxy and the processor decide.
	DefaultMaxMessageBytes = int(readbound.DefaultMessageBytes)
	// DefaultMaxReplyBytes keeps a mutated reply under the 4 MiB decode limit that
	// agentgateway before v1.4.1 applies to processor replies, with room for framing.
	DefaultMaxReplyBytes    = 4<<20 - 64<<10
	DefaultDigestCacheBytes = 16 << 20
	DefaultListingMemoBytes = 16 << 20
	DefaultRecordInterval   = time.Second
	DefaultRecordBatch      = 256
	DefaultRecordQueue      = 4096
	DefaultRecordTimeout    = 10 * time.Second
	// DefaultRecordEvery is how often decision records are written.
	DefaultRecordEvery = 60 * time.Second
)

// Config configures [New]. Zero values take the documented defaults.
type Config struct {
	// Servers are the upstream names this processor decides for: the gateway's MCP target
	// names, equal to the catalog's server names. Required; a message naming any other
	// target is denied.
	Servers []string
	// Source is where approvals and crawl results are read. Required.
	Source Source
	// Recorder receives observations of tools listed but not served. Nil discards them
	// (they are still logged and counted).
	Recorder Recorder
	// Refresh is how often every server's snapshot is re-read. Default DefaultRefresh. A
	// re-approval, rejection or rollback takes effect within one Refresh.
	Refresh time.Duration
	// Staleness bounds the age of the snapshot a decision may use; past it, everything for
	// that server is denied. Default DefaultStaleness; at least Refresh.
	Staleness time.Duration
	// LoadTimeout bounds one read of one server. Default Refresh.
	LoadTimeout time.Duration
	// DecisionTimeout bounds one decision (the gateway sets no gRPC deadline of its own).
	// Default DefaultDecisionTimeout.
	DecisionTimeout time.Duration
	// MaxMessageBytes bounds the JSON decided; larger is denied. Default
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxReplyBytes bounds a mutated reply; a larger one is a denial instead. Default
	// DefaultMaxReplyBytes.
	MaxReplyBytes int
	// DigestCacheBytes bounds the cache of live digests keyed by the raw bytes of each
	// listed tool. Default DefaultDigestCacheBytes; negative disables it.
	DigestCacheBytes int
	// ListingMemoBytes bounds the memo of whole tools/list decisions keyed by the exact
	// result bytes (and the approvals' generation): a repeat listing costs one hash and
	// one compare. Default DefaultListingMemoBytes; negative disables it.
	ListingMemoBytes int
	// RecordInterval, RecordBatch, RecordQueue and RecordTimeout shape the background
	// writes to Recorder: at most every RecordInterval or RecordBatch observations, at
	// most RecordQueue waiting (more are dropped and counted), each write bounded by
	// RecordTimeout. Defaults DefaultRecord*.
	RecordInterval time.Duration
	RecordBatch    int
	RecordQueue    int
	RecordTimeout  time.Duration
	// Point names the kind of enforcement point in decision records and denial reasons:
	// PointExtMcp (the default), PointProxy or PointAgentCore.
	Point string
	// Instance names this process in decision records. Default: host name and process id.
	Instance string
	// Shadow decides as usual, records every decision, and lets everything through: a
	// rollout's first step ([Decision.Shadow]).
	Shadow bool
	// Stateless decides a tools/call on the catalog's evidence alone, without the last
	// listing this processor saw: for a point whose instances do not see each other's
	// listings (the interceptor Lambda). The catalog's evidence includes what every
	// point's recorder wrote, so a drift one instance lists reaches the others within one
	// refresh.
	Stateless bool
	// Decisions receives the decision records: counts per (server, tool, method, live
	// digest, outcome, cause, approval set), every RecordEvery and on Close. Nil keeps
	// none (the metrics still count).
	Decisions DecisionRecorder
	// RecordEvery is the decision records' window. Default DefaultRecordEvery.
	RecordEvery time.Duration
	// Naming says how tool names carry their target. NamingGateway (the default) is
	// agentgateway's: as the upstream serves them when the message names one target, with
	// a "<target>_" prefix when it names several. NamingPrefixed is AgentCore Gateway's:
	// always "<target><Separator><tool>", whatever the message names; a tools/call is then
	// attributed by its prefix among Services.
	Naming Naming
	// Separator joins target and tool under NamingPrefixed. Default "___" (AgentCore's).
	Separator string
	// PassMethods passes, undecided, the MCP methods that carry no tool definition
	// (initialize, ping, notifications, resources, prompts, completion, logging, ...: see
	// [PassedMethod]), for a point that sees every message (the proxy, the interceptor).
	// Without it every method but tools/list and tools/call is denied: ExtMcp is
	// configured to send only those two, and anything else is a misconfiguration.
	PassMethods bool
	// Logger receives the processor's logs. Nil discards them.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// LogValue shows the effective configuration (it holds no secrets).
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("point", c.Point), slog.Bool("shadow", c.Shadow), slog.Bool("stateless", c.Stateless),
		slog.String("recordEvery", c.RecordEvery.String()), slog.Bool("decisionRecords", c.Decisions != nil),
		slog.Any("servers", c.Servers), slog.String("refresh", c.Refresh.String()), slog.String("staleness", c.Staleness.String()),
		slog.String("decisionTimeout", c.DecisionTimeout.String()), slog.Int("maxMessageBytes", c.MaxMessageBytes), slog.Int("maxReplyBytes", c.MaxReplyBytes),
		slog.Int("digestCacheBytes", c.DigestCacheBytes), slog.Int("listingMemoBytes", c.ListingMemoBytes))
}

// Processor decides the gateway's tools/list and tools/call messages from approvals held
// in memory. It is safe for concurrent use. Start it before serving; Close it after.
type Processor struct {
	cfg     Config
	cache   *cache
	servers map[string]*server
	rec     *batcher
	metrics *Metrics
	log     *slog.Logger
	now     func() time.Time
	scratch sync.Pool // *listScratch
	memo    *listingMemo
	tally   *tally          // nil without Config.Decisions
	dw      *decisionWriter // nil without Config.Decisions

	// tick drives the refresh loop; tests replace it to refresh on demand.
	tick     func() (<-chan time.Time, func())
	stop     context.CancelFunc
	stopRecs chan struct{}
	wg       sync.WaitGroup
	started  bool

	// hook, when set, runs at the start of every decision (tests inject panics and
	// delays with it).
	hook atomic.Pointer[func(ctx context.Context, method string)]
}

// New validates cfg and returns a Processor that has read nothing yet.
func New(cfg Config) (*Processor, error) {
	var errs []error
	if len(cfg.Servers) == 0 {
		errs = append(errs, errors.New("no server to serve"))
	}
	if cfg.Source == nil {
		errs = append(errs, errors.New("no source of approvals"))
	}
	seen := map[string]bool{}
	for _, s := range cfg.Servers {
		if s == "" || seen[s] {
			errs = append(errs, fmt.Errorf("server name %q is empty or given twice", s))
		}
		seen[s] = true
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.Refresh, DefaultRefresh)
	def(&cfg.Staleness, DefaultStaleness)
	def(&cfg.LoadTimeout, cfg.Refresh)
	def(&cfg.DecisionTimeout, DefaultDecisionTimeout)
	def(&cfg.RecordInterval, DefaultRecordInterval)
	def(&cfg.RecordTimeout, DefaultRecordTimeout)
	def(&cfg.RecordEvery, DefaultRecordEvery)
	if cfg.Point == "" {
		cfg.Point = PointExtMcp
	}
	if cfg.Separator == "" {
		cfg.Separator = "_"
		if cfg.Naming == NamingPrefixed {
			cfg.Separator = "___"
		}
	}
	if cfg.Instance == "" {
		host, _ := os.Hostname()
		cfg.Instance = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	defInt(&cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	defInt(&cfg.MaxReplyBytes, DefaultMaxReplyBytes)
	defInt(&cfg.DigestCacheBytes, DefaultDigestCacheBytes)
	defInt(&cfg.ListingMemoBytes, DefaultListingMemoBytes)
	defInt(&cfg.RecordBatch, DefaultRecordBatch)
	defInt(&cfg.RecordQueue, DefaultRecordQueue)
	if cfg.Staleness < cfg.Refresh {
		errs = append(errs, fmt.Errorf("staleness bound %s is shorter than the refresh interval %s: every snapshot would go stale before the next read", cfg.Staleness, cfg.Refresh))
	}
	if cfg.MaxMessageBytes < 0 || cfg.MaxReplyBytes < 0 || cfg.RecordBatch < 0 || cfg.RecordQueue < 0 {
		errs = append(errs, errors.New("size bounds must be positive"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("enforce: %w", errors.Join(errs...))
	}
	if cfg.Recorder == nil {
		cfg.Recorder = RecorderFunc(func(context.Context, []Observation) error { return nil })
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Servers = slices.Clone(cfg.Servers)
	p := &Processor{cfg: cfg, log: cfg.Logger, now: cfg.Now, servers: make(map[string]*server, len(cfg.Servers)), stopRecs: make(chan struct{})}
	p.scratch.New = newListScratch
	if cfg.Decisions != nil {
		p.tally = newTally(cfg.Now())
	}
	p.memo = newListingMemo(cfg.ListingMemoBytes, p.tally)
	p.cache = newCache(cfg.Source, cfg.Servers, cfg.Staleness, cfg.LoadTimeout, cfg.Now, cfg.Logger)
	m, err := newMetrics(p.cache)
	if err != nil {
		return nil, fmt.Errorf("enforce: metrics: %w", err)
	}
	p.metrics = m
	m.shadow.Set(0)
	if cfg.Shadow {
		m.shadow.Set(1)
	}
	if p.tally != nil {
		p.dw = &decisionWriter{t: p.tally, rec: cfg.Decisions, point: cfg.Point, instance: cfg.Instance, shadow: cfg.Shadow,
			timeout: cfg.RecordTimeout, now: cfg.Now, log: cfg.Logger, metrics: m}
		p.dw.last.Store(cfg.Now().UnixNano())
	}
	per := cfg.DigestCacheBytes / (2 * len(cfg.Servers))
	for _, name := range cfg.Servers {
		p.servers[name] = &server{name: name, prefix: name + cfg.Separator, plain: newDigestCache(per), muxed: newDigestCache(per),
			listing: map[string]listed{}, reported: map[string]string{}}
	}
	p.rec = newBatcher(cfg.Recorder, cfg.RecordQueue, cfg.RecordBatch, cfg.RecordInterval, cfg.RecordTimeout, cfg.Logger, p.metrics)
	p.tick = func() (<-chan time.Time, func()) {
		t := time.NewTicker(cfg.Refresh)
		return t.C, t.Stop
	}
	return p, nil
}

// Config returns the effective configuration (defaults applied).
func (p *Processor) Config() Config { return p.cfg }

// Logger returns the processor's logger.
func (p *Processor) Logger() *slog.Logger { return p.log }

// Metrics returns the processor's metrics.
func (p *Processor) Metrics() *Metrics { return p.metrics }

// Fresh reports whether every server has approvals younger than the staleness bound:
// the processor's health.
func (p *Processor) Fresh() bool { return p.cache.fresh() }

// Start reads every server once (bounded by LoadTimeout), then keeps refreshing every
// Refresh and writing observations in the background until Close. A failed first read is
// not an error: the processor denies until a read succeeds.
func (p *Processor) Start(ctx context.Context) {
	if p.started {
		return
	}
	p.started = true
	ctx, p.stop = context.WithCancel(context.WithoutCancel(ctx))
	p.cache.refresh(ctx)
	tick, stopTick := p.tick()
	p.wg.Go(func() { defer stopTick(); p.cache.run(ctx, tick) })
	p.wg.Go(func() { p.rec.run(ctx) })
	if p.dw != nil {
		p.wg.Go(func() { p.dw.run(ctx, p.cfg.RecordEvery, p.stopRecs) })
	}
	p.log.InfoContext(ctx, "enforce: processor started", slog.Any("config", p.cfg), slog.Bool("fresh", p.Fresh()))
}

// Close stops refreshing, writes the observations still queued and the decision records
// of the window so far, waiting at most until ctx ends.
func (p *Processor) Close(ctx context.Context) {
	if !p.started {
		return
	}
	p.rec.close(ctx)
	select {
	case <-p.stopRecs:
	default:
		close(p.stopRecs)
		if p.dw != nil {
			_ = p.dw.flush(ctx)
		}
	}
	p.stop()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Refresh re-reads every server's approvals now (each read bounded by LoadTimeout) and
// returns when all are done. The processor also refreshes on its own every Refresh; a
// transport whose process is frozen between requests (a Lambda) calls RefreshOlder first.
func (p *Processor) Refresh(ctx context.Context) { p.cache.refresh(ctx) }

// RefreshOlder refreshes now if any server's approvals are older than age (or were never
// read), and reports whether it did.
func (p *Processor) RefreshOlder(ctx context.Context, age time.Duration) bool {
	for name := range p.cache.entries {
		if a := p.cache.age(name); a < 0 || a > age {
			p.cache.refresh(ctx)
			return true
		}
	}
	return false
}

// Sync writes the queued observations now, and the decision records when a window of
// RecordEvery has passed since they were last written (or always, with force). It is for
// a transport whose process is frozen between requests (a Lambda), which calls it before
// answering; long-running transports need not: the processor writes both on its own.
func (p *Processor) Sync(ctx context.Context, force bool) error {
	err := p.rec.sync(ctx)
	if p.dw != nil && (force || p.dw.due(p.cfg.RecordEvery)) {
		err = errors.Join(err, p.dw.flush(ctx))
	}
	return err
}

// SetDecisionHook sets a function run at the start of every decision, inside its
// deadline and its panic recovery (nil removes it). It is for tests of the transports,
// which inject panics and delays with it; nothing in production sets one.
func (p *Processor) SetDecisionHook(f func(ctx context.Context, method string)) {
	if f == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&f)
}
