package crawler

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/setting"

	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/netguard"
	"github.com/agentgate-dev/agentgate/internal/readbound"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Defaults for Config.
const (
	DefaultConcurrency      = 4
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	DefaultMaxListingBytes  = 24 << 20
	DefaultMaxServerBytes   = 32 << 20
	DefaultMaxTools         = 10000
)

// ErrRefused is wrapped, together with the netguard error, when a server's URL or an
// address it led to was refused by the address policy.
var ErrRefused = errors.New("refused by the address policy")

// Config configures a crawl. The zero value is ready to use.
type Config struct {
	// Concurrency is how many servers are listed at once. Default 4.
	Concurrency int
	// Timeout bounds one server's whole listing: connect, handshake, every page. Default 30s.
	Timeout time.Duration
	// MaxResponseBytes bounds each HTTP response body and each server-sent event: one
	// message. Default 10 MiB.
	MaxResponseBytes int64
	// MaxListingBytes bounds all pages of one list method together. Default 24 MiB.
	MaxListingBytes int64
	// MaxServerBytes bounds everything one server sends in one listing, across bodies,
	// streams and pages. Default 32 MiB: with Concurrency servers at once, a crawl holds
	// at most about Concurrency × MaxServerBytes of what servers sent.
	MaxServerBytes int64
	// Knob names the setting that raises a bound, for errors. Default: the environment
	// variables of internal/config (TOOLWARRANT_CRAWL_MAX_*_BYTES).
	Knob func(readbound.Kind) string
	// MaxTools bounds the tools accepted from one server. Default 10000.
	MaxTools int
	// Resolver resolves host names. Default net.DefaultResolver. Tests inject one.
	Resolver netguard.Resolver
	// Dial replaces the final connect step (tests map addresses onto loopback listeners);
	// it only ever sees addresses that passed the policy. Default nil: a real dial.
	Dial func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
	// TLSConfig is used for https servers (a private CA, a test server). Default nil.
	TLSConfig *tls.Config
	// ClientName and ClientVersion are sent as clientInfo. Default "toolwarrant", "dev".
	ClientName, ClientVersion string
	// Progress, when set, is called after each server is done, never concurrently.
	Progress func(done, total int, server string)
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Concurrency = setting.Positive(c.Concurrency, DefaultConcurrency)
	c.Timeout = setting.Positive(c.Timeout, DefaultTimeout)
	c.MaxResponseBytes = setting.Positive(c.MaxResponseBytes, DefaultMaxResponseBytes)
	c.MaxListingBytes = setting.Positive(c.MaxListingBytes, DefaultMaxListingBytes)
	c.MaxServerBytes = setting.Positive(c.MaxServerBytes, DefaultMaxServerBytes)
	if c.Knob == nil {
		c.Knob = EnvKnob
	}
	c.MaxTools = setting.Positive(c.MaxTools, DefaultMaxTools)
	c.ClientName = cmp.Or(c.ClientName, "toolwarrant")
	c.ClientVersion = cmp.Or(c.ClientVersion, "dev")
	c.Logger = setting.Logger(c.Logger)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// EnvKnob names the environment variable that raises each bound of a crawl (the CLI's and
// the crawl function's).
func EnvKnob(k readbound.Kind) string {
	switch k {
	case readbound.KindMessage:
		return "TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES"
	case readbound.KindListing:
		return "TOOLWARRANT_CRAWL_MAX_LISTING_BYTES"
	default:
		return "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES"
	}
}

// Target is one server to list and the header values resolved for it from the
// environment (internal/config.ResolveHeaders). The values are secrets: they are sent
// and never logged or put in errors.
type Target struct {
	Server  warrant.Server
	Headers map[string]string
}

// Outcome is the result of listing one server.
type Outcome struct {
	// Server is the server's name.
	Server string
	// Listing is the complete listing, nil when Err is set.
	Listing *warrant.Listing
	// Transport is the transport that answered ("http" or "sse"); Pages how many
	// tools/list pages were read.
	Transport string
	Pages     int
	// Err names the server and wraps mcpclient.ErrUnavailable or ErrProtocol, or
	// ErrRefused and the netguard error.
	Err error
	// Elapsed is how long the listing took.
	Elapsed time.Duration
}

// Crawl lists every target, at most cfg.Concurrency at a time, and returns one Outcome
// per target sorted by server name. It returns when every listing has finished or ctx is
// done (each listing then fails with its context error).
func Crawl(ctx context.Context, cfg Config, targets []Target) []Outcome {
	cfg = cfg.withDefaults()
	out := make([]Outcome, len(targets))
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = Outcome{Server: t.Server.Name, Err: fmt.Errorf("server %q: %w: %v", t.Server.Name, mcpclient.ErrUnavailable, ctx.Err())}
				return
			}
			out[i] = crawlOne(ctx, cfg, t)
			<-sem
			if cfg.Progress != nil {
				mu.Lock()
				done++
				cfg.Progress(done, len(targets), t.Server.Name)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortStableFunc(out, func(a, b Outcome) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// CrawlOne lists one server.
func CrawlOne(ctx context.Context, cfg Config, t Target) Outcome {
	return crawlOne(ctx, cfg.withDefaults(), t)
}

func crawlOne(ctx context.Context, cfg Config, t Target) Outcome {
	s := t.Server
	o := Outcome{Server: s.Name}
	start := cfg.Now()
	defer func() { o.Elapsed = cfg.Now().Sub(start) }()

	guard := netguard.New(netguard.Config{AllowPrivate: s.AllowPrivate, Resolver: cfg.Resolver, Dial: cfg.Dial})
	if _, err := guard.ParseURL(s.URL); err != nil {
		o.Err = fmt.Errorf("server %q: %w: %w", s.Name, ErrRefused, err)
		return o
	}
	rec := &recorder{}
	// The read bounds (one message, one listing, the server) are mcpclient's, which name
	// them; netguard's bound on one response is only a backstop above them.
	hc := guard.HTTPClient(netguard.ClientConfig{Timeout: cfg.Timeout, MaxResponseBytes: cfg.MaxServerBytes + 1, TLSConfig: cfg.TLSConfig})
	hc = rec.watch(hc)

	l, err := mcpclient.ListTools(ctx, mcpclient.Server{Name: s.Name, Transport: mcpclient.TransportHTTP, URL: s.URL, Headers: t.Headers},
		mcpclient.Options{Timeout: cfg.Timeout, HTTPClient: hc, MaxTools: cfg.MaxTools,
			Limits:     readbound.Limits{Message: cfg.MaxResponseBytes, Listing: cfg.MaxListingBytes, Server: cfg.MaxServerBytes, Knob: cfg.Knob},
			ClientName: cfg.ClientName, ClientVersion: cfg.ClientVersion, Logger: cfg.Logger})
	finished := cfg.Now()
	if err != nil {
		if gerr := rec.get(); gerr != nil && !errors.Is(err, readbound.ErrExceeded) {
			if errors.Is(gerr, netguard.ErrForbiddenAddress) || errors.Is(gerr, netguard.ErrInvalidURL) {
				o.Err = fmt.Errorf("server %q: %w: %w", s.Name, ErrRefused, gerr)
			} else {
				o.Err = fmt.Errorf("server %q: %w: %w", s.Name, mcpclient.ErrUnavailable, gerr)
			}
		} else {
			o.Err = err
		}
		cfg.Logger.DebugContext(ctx, "crawl failed", slog.String("server", s.Name), slog.String("error", o.Err.Error()))
		return o
	}
	o.Transport, o.Pages = string(l.Transport), l.Pages
	wl := &warrant.Listing{Server: s.Name, StartedAt: start, FinishedAt: finished, Tools: make([]warrant.RawTool, len(l.Tools))}
	for i, tool := range l.Tools {
		wl.Tools[i] = warrant.RawTool{Name: tool.Name, Raw: tool.Raw}
	}
	o.Listing = wl
	return o
}

// recorder keeps the first address-policy or size error seen by a client, which mcpclient
// would otherwise flatten into text.
type recorder struct {
	mu  sync.Mutex
	err error
}

func (r *recorder) note(err error) {
	if err == nil {
		return
	}
	if !errors.Is(err, netguard.ErrForbiddenAddress) && !errors.Is(err, netguard.ErrInvalidURL) &&
		!errors.Is(err, netguard.ErrResponseTooLarge) && !errors.Is(err, netguard.ErrTooManyRedirects) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *recorder) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// watch returns a copy of hc whose transport, redirect check and response bodies report
// their errors to r.
func (r *recorder) watch(hc *http.Client) *http.Client {
	c := *hc
	c.Transport = &recordingTransport{base: hc.Transport, rec: r}
	if cr := hc.CheckRedirect; cr != nil {
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			err := cr(req, via)
			r.note(err)
			return err
		}
	}
	return &c
}

type recordingTransport struct {
	base http.RoundTripper
	rec  *recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.rec.note(err)
		return resp, err
	}
	resp.Body = &recordingBody{ReadCloser: resp.Body, rec: t.rec}
	return resp, nil
}

type recordingBody struct {
	io.ReadCloser
	rec *recorder
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.rec.note(err)
	}
	return n, err
}

// Lister is the warrant.Lister of a crawl run (warrant.Service.Crawl): it lists the
// targets with Crawl and Config.
type Lister struct {
	Config Config
	// DeadlineMargin, when ctx has a deadline, ends the listing this long before it, so
	// that what was listed can still be recorded (the crawl function's
	// CRAWL_DEADLINE_MARGIN). Default 0: the listing may use all of ctx's time.
	DeadlineMargin time.Duration
}

var _ warrant.Lister = Lister{}

// List implements warrant.Lister.
func (l Lister) List(ctx context.Context, targets []warrant.CrawlTarget) []warrant.Listed {
	if dl, ok := ctx.Deadline(); ok && l.DeadlineMargin > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-l.DeadlineMargin))
		defer cancel()
	}
	ts := make([]Target, len(targets))
	for i, t := range targets {
		ts[i] = Target{Server: t.Server, Headers: t.Headers}
	}
	outs := Crawl(ctx, l.Config, ts)
	out := make([]warrant.Listed, len(outs))
	for i, o := range outs {
		out[i] = warrant.Listed{Server: o.Server, Listing: o.Listing, Transport: o.Transport, Elapsed: o.Elapsed, Err: o.Err}
	}
	return out
}
