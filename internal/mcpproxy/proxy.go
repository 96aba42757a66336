package mcpproxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/mcpmsg"
	"github.com/agentgate-dev/agentgate/internal/netguard"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Upstream is one catalog server the proxy fronts.
type Upstream struct {
	// Name is the catalog's server name, and the route: /{Name}/mcp.
	Name string
	// URL is the server's Streamable HTTP endpoint.
	URL string
	// AllowPrivate lets the proxy connect to loopback and private addresses (the server was
	// added with --allow-private).
	AllowPrivate bool
	// Headers are sent on every request to the server (the catalog's --header-env values,
	// resolved). They are secrets: never logged.
	Headers map[string]string
}

// Defaults for [Config].
const (
	DefaultMaxRequestBytes = 4 << 20
	DefaultProbe           = 30 * time.Second
)

// Config configures [New].
type Config struct {
	// Processor decides (enforce.PointProxy, with PassMethods). Required; the caller
	// starts and closes it.
	Processor *enforce.Processor
	// Upstreams are the servers served, one route each. Required.
	Upstreams []Upstream
	// MaxRequestBytes bounds a client's request body (413 past it). Default
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxMessageBytes bounds one message from an upstream: a JSON body or one
	// server-sent event. Default: the processor's MaxMessageBytes.
	MaxMessageBytes int
	// Probe is how often the proxy lists every upstream itself (through the crawler's
	// client) and hands the listing to the processor, so that a definition changed upstream
	// stops its calls within one probe even if no client lists again. Zero: DefaultProbe;
	// negative: never.
	Probe time.Duration
	// Resolver, Dial and TLSConfig are the upstream connections' (tests map names and
	// addresses onto loopback listeners). Every dial is checked by netguard.
	Resolver  netguard.Resolver
	Dial      func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
	TLSConfig *tls.Config
	// Logger receives the proxy's logs. Nil discards them.
	Logger *slog.Logger
}

// Proxy is the MCP proxy: Streamable HTTP at /{server}/mcp for every upstream, forwarded
// through netguard's SSRF-hardened client, every tools/list result filtered and every
// tools/call decided by the decision core. Everything else passes through unchanged.
type Proxy struct {
	cfg       Config
	proc      *enforce.Processor
	upstreams map[string]*upstream
	names     []string
	log       *slog.Logger
}

type upstream struct {
	Upstream
	client *http.Client
}

// New checks cfg and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Processor == nil {
		return nil, errors.New("mcpproxy: no processor")
	}
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("mcpproxy: no upstream server to proxy")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = cfg.Processor.Config().MaxMessageBytes
	}
	if cfg.Probe == 0 {
		cfg.Probe = DefaultProbe
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{cfg: cfg, proc: cfg.Processor, upstreams: map[string]*upstream{}, log: cfg.Logger}
	served := cfg.Processor.Config().Servers
	var errs []error
	for _, u := range cfg.Upstreams {
		if !slices.Contains(served, u.Name) {
			errs = append(errs, fmt.Errorf("upstream %q is not a server the processor decides for", u.Name))
			continue
		}
		g := netguard.New(netguard.Config{AllowPrivate: u.AllowPrivate, Resolver: cfg.Resolver, Dial: cfg.Dial})
		if _, err := g.ParseURL(u.URL); err != nil {
			errs = append(errs, fmt.Errorf("upstream %q: %w", u.Name, err))
			continue
		}
		// No overall timeout and no body bound here: streams are long-lived, and the proxy
		// bounds each message itself; connecting and the response headers stay bounded.
		hc := g.HTTPClient(netguard.ClientConfig{Timeout: -1, MaxResponseBytes: -1, TLSConfig: cfg.TLSConfig})
		p.upstreams[u.Name] = &upstream{Upstream: u, client: hc}
		p.names = append(p.names, u.Name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("mcpproxy: %w", err)
	}
	slices.Sort(p.names)
	return p, nil
}

// Routes returns the route of every upstream, sorted: /{server}/mcp.
func (p *Proxy) Routes() []string {
	out := make([]string, len(p.names))
	for i, n := range p.names {
		out[i] = "/" + n + "/mcp"
	}
	return out
}

// Handler serves /{server}/mcp for every upstream, /healthz (200 while every server's
// approvals are fresh, else 503, with the state of each as JSON) and /metrics (the
// processor's, in the Prometheus text format).
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{server}/mcp", p.serveRoute)
	mux.HandleFunc("GET /healthz", p.serveHealth)
	mux.Handle("GET /metrics", p.proc.Metrics().Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "toolwarrant proxy: no such route; the MCP routes are "+strings.Join(p.Routes(), ", "), http.StatusNotFound)
	})
	return p.guard(mux)
}

// guard refuses what a web page could make a browser send to a loopback proxy: a Host that
// is not the address the request came in on (DNS rebinding), or an Origin from elsewhere.
func (p *Proxy) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(la.String()) && !isLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("toolwarrant proxy: Host %q is not a loopback address (DNS rebinding protection)", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, fmt.Sprintf("toolwarrant proxy: Origin %q is not a loopback origin", o), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && isLoopback(rest)
}

func (p *Proxy) serveHealth(w http.ResponseWriter, _ *http.Request) {
	st := p.proc.State()
	fresh := true
	for _, s := range st {
		fresh = fresh && s.Fresh
	}
	w.Header().Set("Content-Type", "application/json")
	if !fresh {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"fresh": fresh, "shadow": p.proc.Config().Shadow, "servers": st})
}

func (p *Proxy) serveRoute(w http.ResponseWriter, r *http.Request) {
	up := p.upstreams[r.PathValue("server")]
	if up == nil {
		http.Error(w, fmt.Sprintf("toolwarrant proxy: no server %q in the catalog; the MCP routes are %s", r.PathValue("server"), strings.Join(p.Routes(), ", ")), http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodPost:
		p.post(w, r, up)
	case http.MethodGet, http.MethodDelete:
		p.forward(w, r, up, nil, nil)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "toolwarrant proxy: use POST, GET or DELETE", http.StatusMethodNotAllowed)
	}
}

// post decides a client's POST: every request and notification in it goes to the
// decision core; a denied tools/call is answered here and never reaches the upstream.
func (p *Proxy) post(w http.ResponseWriter, r *http.Request, up *upstream) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, -32600, fmt.Sprintf("toolwarrant proxy: the request body is over %d bytes", mbe.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, -32700, "toolwarrant proxy: cannot read the request body")
		return
	}
	raws, batch, err := mcpmsg.SplitBatch(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, -32700, "toolwarrant proxy: "+err.Error())
		return
	}
	envs := make([]mcpmsg.Message, len(raws))
	for i, raw := range raws {
		if envs[i], err = mcpmsg.Parse(raw); err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, -32600, "toolwarrant proxy: "+err.Error()+"; refused (it would be read one way here and maybe another upstream)")
			return
		}
	}
	if !batch {
		if msg := headerMismatch(r.Header, envs[0]); msg != "" {
			writeRPCError(w, http.StatusBadRequest, envs[0].ID, -32600, "toolwarrant proxy: "+msg)
			return
		}
	}
	watched := map[string]string{}
	var denied [][]byte
	for _, e := range envs {
		if !e.HasMethod {
			continue // a client's answer to a server request: nothing to decide
		}
		d := p.proc.Decide(r.Context(), enforce.Message{Phase: enforce.PhaseRequest, Method: e.Method, Services: []string{up.Name}, Body: e.Params()})
		if d.Shadow {
			p.log.InfoContext(r.Context(), "proxy: would deny (shadow mode: passed)", slog.String("server", up.Name), slog.String("method", e.Method),
				slog.String("tool", d.Tool), slog.String("reason", d.Reason))
		}
		if d.Outcome == enforce.OutcomeDeny {
			p.log.InfoContext(r.Context(), "proxy: denied", slog.String("server", up.Name), slog.String("method", e.Method), slog.String("tool", d.Tool),
				slog.String("cause", d.Cause.String()))
			denied = append(denied, mcpmsg.ErrorResponse(e.ID, d.RPCCode(), d.Reason))
			continue
		}
		if e.IsRequest() {
			watched[string(e.ID)] = e.Method
		}
	}
	if len(denied) > 0 {
		if !batch {
			writeJSON(w, http.StatusOK, denied[0])
			return
		}
		// A batch is answered whole: its denials, and every other request refused with it.
		for _, e := range envs {
			if _, ok := watched[string(e.ID)]; ok {
				denied = append(denied, mcpmsg.ErrorResponse(e.ID, -32001, "toolwarrant proxy: not sent: the batch held a denied request; send requests one by one"))
			}
		}
		writeJSON(w, http.StatusOK, append(append([]byte("["), bytes.Join(denied, []byte(","))...), ']'))
		return
	}
	p.forward(w, r, up, body, watched)
}

// headerMismatch checks the standard headers of MCP 2026-07-28 against the body: a
// header that names another method or another tool, prompt or resource than the body is
// refused, so that nothing between here and the server can route by one and run the other.
func headerMismatch(h http.Header, e mcpmsg.Message) string {
	if m := h.Get("Mcp-Method"); m != "" && (!e.HasMethod || decodeHeader(m) != e.Method) {
		return fmt.Sprintf("the Mcp-Method header %q does not match the body's method %q", m, e.Method)
	}
	n, ok := h.Get("Mcp-Name"), len(h.Values("Mcp-Name")) > 0
	if !ok {
		return ""
	}
	member := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}[e.Method]
	want, found := "", false
	if member != "" {
		want, found = mcpmsg.StringMember(e.Params(), member)
	}
	if !found || decodeHeader(n) != want {
		return fmt.Sprintf("the Mcp-Name header %q does not match the body (%s)", n, cmp.Or(member, "no name for "+e.Method))
	}
	return ""
}

// decodeHeader undoes the "=?base64?…?=" form MCP 2026-07-28 uses for header values that
// are not plain ASCII.
func decodeHeader(v string) string {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(b)
			}
		}
	}
	return v
}

// requestHeaders are the client headers forwarded upstream. Authorization and cookies are
// not: the proxy authenticates to the upstream with the catalog's headers.
var requestHeaders = []string{"Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id", "User-Agent"}

// responseHeaders are the upstream headers passed back to the client.
var responseHeaders = []string{"Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Cache-Control"}

// forward sends the request upstream and relays the answer, every message of it through
// filter. watched maps the raw id of each request sent to its method.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, up *upstream, body []byte, watched map[string]string) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, up.URL, bytes.NewReader(body))
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, nil, -32603, "toolwarrant proxy: "+err.Error())
		return
	}
	if body == nil {
		req.Body = http.NoBody
	}
	for _, k := range requestHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			req.Header[k] = slices.Clone(vs)
		}
	}
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	resp, err := up.client.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		p.log.WarnContext(r.Context(), "proxy: upstream unreachable", slog.String("server", up.Name), slog.String("error", err.Error()))
		writeRPCError(w, http.StatusBadGateway, singleID(watched), -32603, fmt.Sprintf("toolwarrant proxy: cannot reach server %q: %v", up.Name, err))
		return
	}
	defer resp.Body.Close()
	for _, k := range responseHeaders {
		if v := resp.Header.Values(k); len(v) > 0 {
			w.Header()[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode/100 != 2 || resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, 64<<10))
	case ct == "text/event-stream":
		p.relayStream(w, r, up, resp, watched)
	case ct == "application/json":
		buf := bufPool.Get().(*bytes.Buffer)
		defer putBuf(buf)
		buf.Reset()
		if n := resp.ContentLength; n > 0 && n <= int64(p.cfg.MaxMessageBytes) {
			buf.Grow(int(n))
		}
		_, err := buf.ReadFrom(io.LimitReader(resp.Body, int64(p.cfg.MaxMessageBytes)+1))
		if err != nil || buf.Len() > p.cfg.MaxMessageBytes {
			p.log.WarnContext(r.Context(), "proxy: upstream answer unreadable or over the bound; denied", slog.String("server", up.Name), slog.Int("maxBytes", p.cfg.MaxMessageBytes))
			writeRPCError(w, http.StatusBadGateway, singleID(watched), -32603, fmt.Sprintf("toolwarrant proxy: the answer of server %q is unreadable or over %d bytes; denied", up.Name, p.cfg.MaxMessageBytes))
			return
		}
		out, ok := p.filterBody(r.Context(), up, buf.Bytes(), watched)
		if !ok {
			writeRPCError(w, http.StatusBadGateway, singleID(watched), -32603, fmt.Sprintf("toolwarrant proxy: the answer of server %q is not JSON-RPC; denied", up.Name))
			return
		}
		size := 0
		for _, piece := range out {
			size += len(piece)
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(resp.StatusCode)
		for _, piece := range out {
			if _, err := w.Write(piece); err != nil {
				return
			}
		}
	default:
		// Not an MCP answer: passed only when no request of this POST could be answered
		// by it with a listing.
		if hasWatched(watched, "tools/list") {
			writeRPCError(w, http.StatusBadGateway, singleID(watched), -32603, fmt.Sprintf("toolwarrant proxy: server %q answered tools/list with %q; denied", up.Name, ct))
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, int64(p.cfg.MaxMessageBytes)))
	}
}

// relayStream relays an event stream event by event, each message through filter.
func (p *Proxy) relayStream(w http.ResponseWriter, r *http.Request, up *upstream, resp *http.Response, watched map[string]string) {
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	sr := newSSEReader(resp.Body, p.cfg.MaxMessageBytes)
	for {
		ev, err := sr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				p.log.WarnContext(r.Context(), "proxy: upstream stream ended", slog.String("server", up.Name), slog.String("error", err.Error()))
			}
			return
		}
		out := ev.raw
		if ev.data != nil {
			pieces, ok := p.filterBody(r.Context(), up, ev.data, watched)
			if !ok {
				p.log.WarnContext(r.Context(), "proxy: dropped an event that is not JSON-RPC", slog.String("server", up.Name))
				continue
			}
			if msg := bytes.Join(pieces, nil); !bytes.Equal(msg, ev.data) {
				out = ev.encode(msg)
			}
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// filterBody filters one JSON body or event data: a message or a batch of them. It
// returns the answer in pieces, to be written one after the other (a filtered listing is
// not copied into one buffer); false when it is not JSON-RPC.
func (p *Proxy) filterBody(ctx context.Context, up *upstream, data []byte, watched map[string]string) ([][]byte, bool) {
	raws, batch, err := mcpmsg.SplitBatch(data)
	if err != nil {
		return nil, false
	}
	var out [][]byte
	if batch {
		out = append(out, []byte("["))
	}
	for i, raw := range raws {
		if i > 0 {
			out = append(out, []byte(","))
		}
		pieces, err := p.filterMessage(ctx, up, raw, watched)
		if err != nil {
			return nil, false
		}
		out = append(out, pieces...)
	}
	if batch {
		out = append(out, []byte("]"))
	}
	return out, true
}

// bufPool holds the buffers upstream answers are read into.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 4<<20 {
		bufPool.Put(b)
	}
}

// filterMessage decides one message from the upstream. A response to a tools/list this
// proxy forwarded — or any response whose result carries a "tools" array, whatever it
// answers (a replayed stream) — goes through the decision core; everything else passes.
func (p *Proxy) filterMessage(ctx context.Context, up *upstream, raw []byte, watched map[string]string) ([][]byte, error) {
	e, err := mcpmsg.Parse(raw)
	if err != nil {
		return nil, err
	}
	pass := [][]byte{raw}
	if e.HasMethod || e.Result() == nil {
		return pass, nil // a server request or notification, or an error answer
	}
	method, known := watched[string(e.ID)]
	if known && method != "tools/list" {
		return pass, nil
	}
	if !known && !mcpmsg.HasToolsArray(e.Result()) {
		return pass, nil
	}
	d := p.proc.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: "tools/list", Services: []string{up.Name}, Body: e.Result()})
	switch d.Outcome {
	case enforce.OutcomeMutated:
		before, after := e.AroundResult()
		return [][]byte{before, d.Mutated, after}, nil
	case enforce.OutcomeDeny:
		p.log.InfoContext(ctx, "proxy: listing denied", slog.String("server", up.Name), slog.String("cause", d.Cause.String()))
		return [][]byte{mcpmsg.ErrorResponse(e.ID, d.RPCCode(), d.Reason)}, nil
	default:
		return pass, nil
	}
}

func hasWatched(watched map[string]string, method string) bool {
	for _, m := range watched {
		if m == method {
			return true
		}
	}
	return false
}

// singleID is the id of the only request sent, for an error answer (nil otherwise).
func singleID(watched map[string]string) []byte {
	if len(watched) != 1 {
		return nil
	}
	for id := range watched {
		return []byte(id)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeRPCError(w http.ResponseWriter, status int, id []byte, code int64, msg string) {
	writeJSON(w, status, mcpmsg.ErrorResponse(id, code, msg))
}

// Run lists every upstream every Probe until ctx ends (see Config.Probe); it returns at
// once when probing is off.
func (p *Proxy) Run(ctx context.Context) {
	if p.cfg.Probe < 0 {
		return
	}
	t := time.NewTicker(p.cfg.Probe)
	defer t.Stop()
	for {
		p.ProbeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ProbeOnce lists every upstream once, concurrently, and hands each listing to the
// processor (enforce.Processor.Observe). A server that cannot be listed is logged and
// left to the clients' listings.
func (p *Proxy) ProbeOnce(ctx context.Context) {
	ccfg := crawler.Config{Resolver: p.cfg.Resolver, Dial: p.cfg.Dial, TLSConfig: p.cfg.TLSConfig, MaxResponseBytes: int64(p.cfg.MaxMessageBytes),
		ClientName: "toolwarrant-proxy", Logger: p.log}
	targets := make([]crawler.Target, 0, len(p.names))
	for _, n := range p.names {
		u := p.upstreams[n]
		targets = append(targets, crawler.Target{Server: warrant.Server{Name: u.Name, URL: u.URL, AllowPrivate: u.AllowPrivate}, Headers: u.Headers})
	}
	for _, o := range crawler.Crawl(ctx, ccfg, targets) {
		if o.Err != nil {
			if ctx.Err() == nil {
				p.log.WarnContext(ctx, "proxy: probe listing failed", slog.String("server", o.Server), slog.String("error", o.Err.Error()))
			}
			continue
		}
		var b bytes.Buffer
		b.WriteString(`{"tools":[`)
		for i, t := range o.Listing.Tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(t.Raw)
		}
		b.WriteString(`]}`)
		p.proc.Observe(ctx, []string{o.Server}, b.Bytes())
	}
}
