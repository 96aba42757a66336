package extmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for [Config].
const (
	DefaultRefresh         = 5 * time.Second
	DefaultStaleness       = 30 * time.Second
	DefaultDecisionTimeout = 2 * time.Second
	// DefaultMaxMessageBytes bounds what the processor decides (the gateway sets no limit
	// on what it sends; gRPC refuses larger messages before they reach a handler).
	DefaultMaxMessageBytes = 16 << 20
	// DefaultMaxReplyBytes keeps a mutated reply under the 4 MiB decode limit that
	// agentgateway before v1.4.1 applies to processor replies, with room for framing.
	DefaultMaxReplyBytes    = 4<<20 - 64<<10
	DefaultDigestCacheBytes = 16 << 20
	DefaultListingMemoBytes = 16 << 20
	DefaultRecordInterval   = time.Second
	DefaultRecordBatch      = 256
	DefaultRecordQueue      = 4096
	DefaultRecordTimeout    = 10 * time.Second
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
	// Logger receives the processor's logs. Nil discards them.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// LogValue shows the effective configuration (it holds no secrets).
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("servers", c.Servers), slog.String("refresh", c.Refresh.String()), slog.String("staleness", c.Staleness.String()),
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

	// tick drives the refresh loop; tests replace it to refresh on demand.
	tick    func() (<-chan time.Time, func())
	stop    context.CancelFunc
	wg      sync.WaitGroup
	started bool

	// hook, when set, runs at the start of every RPC handler (tests inject panics and
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
		return nil, fmt.Errorf("extmcp: %w", errors.Join(errs...))
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
	p := &Processor{cfg: cfg, log: cfg.Logger, now: cfg.Now, servers: make(map[string]*server, len(cfg.Servers))}
	p.scratch.New = newListScratch
	p.memo = newListingMemo(cfg.ListingMemoBytes)
	p.cache = newCache(cfg.Source, cfg.Servers, cfg.Staleness, cfg.LoadTimeout, cfg.Now, cfg.Logger)
	m, err := newMetrics(p.cache)
	if err != nil {
		return nil, fmt.Errorf("extmcp: metrics: %w", err)
	}
	p.metrics = m
	per := cfg.DigestCacheBytes / (2 * len(cfg.Servers))
	for _, name := range cfg.Servers {
		p.servers[name] = &server{name: name, prefix: name + "_", plain: newDigestCache(per), muxed: newDigestCache(per),
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
	p.log.InfoContext(ctx, "extmcp: processor started", slog.Any("config", p.cfg), slog.Bool("fresh", p.Fresh()))
}

// Close stops refreshing and writes the observations still queued, waiting at most
// until ctx ends.
func (p *Processor) Close(ctx context.Context) {
	if !p.started {
		return
	}
	p.rec.close(ctx)
	p.stop()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
