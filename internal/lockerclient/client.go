package lockerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/setting"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds each HTTP request, including reading its response.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBlocks is the most blocks a read accepts (the contract's max_blocks cap).
	DefaultMaxBlocks = 4096
	// DefaultMaxPadBytes is the most payload bytes a read accepts (64 times the contract's
	// 256 KiB pad quota, for daemons with larger quotas).
	DefaultMaxPadBytes = 16 << 20
	// DefaultMaxPageBytes is the largest /blocks response body accepted.
	DefaultMaxPageBytes = 16 << 20
	// maxBodyBytes caps every other response body.
	maxBodyBytes = 1 << 20
	// maxDetailBytes caps daemon-supplied text quoted in an error.
	maxDetailBytes = 512
)

// Config configures a Client.
type Config struct {
	// BaseURL is the daemon's base URL (LOCKER_URL): http or https, no credentials, no query.
	// Required.
	BaseURL string
	// TicketTransport is how read tickets are sent. Default config.TicketHeader
	// (Authorization: Bearer); config.TicketQuery uses ?ticket=.
	TicketTransport config.TicketTransport
	// HTTPClient sends the requests; its own Timeout, if any, applies. Default: a client
	// that uses no proxy and follows no redirect (a redirect is answered as the daemon's
	// error), each request bounded by DefaultTimeout through its context.
	HTTPClient *http.Client
	// Logger receives one debug line per request: method, route template, status, duration.
	// Never a URL, header or body. Default: discard.
	Logger *slog.Logger
	// MaxBlocks is the most blocks a read walks. Default DefaultMaxBlocks.
	MaxBlocks int
	// MaxPadBytes is the most payload bytes a read keeps. Default DefaultMaxPadBytes.
	MaxPadBytes int
	// MaxPageBytes is the largest /blocks body read. Default DefaultMaxPageBytes.
	MaxPageBytes int
}

// Client talks to one Padlock daemon. It is safe for concurrent use.
type Client struct {
	base      string
	transport config.TicketTransport
	hc        *http.Client
	log       *slog.Logger
	maxBlocks int
	maxBytes  int
	maxPage   int
	bufs      sync.Pool // *[]byte page bodies, reused across pages and reads
	readers   sync.Pool // *padwire.Reader for binary answers, reused across reads
	arenas    sync.Pool // *[]byte payload memory of released chains
	// noWireUntil (unix nanoseconds) is when to ask for the binary form again after a
	// daemon answered without it.
	noWireUntil atomic.Int64
	// timeout bounds each request, response included, through the request's context (the
	// default client's DefaultTimeout). It is not http.Client.Timeout: net/http serves that
	// with a goroutine per request, woken when the body is closed — a thread wake-up per
	// read on the hot path (BenchmarkReadClientCPU: deadline against client-timeout).
	timeout time.Duration
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	base, err := config.CheckLockerURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("lockerclient: %w", err)
	}
	c := &Client{base: base, transport: cfg.TicketTransport, hc: cfg.HTTPClient, log: setting.Logger(cfg.Logger),
		maxBlocks: setting.Positive(cfg.MaxBlocks, DefaultMaxBlocks),
		maxBytes:  setting.Positive(cfg.MaxPadBytes, DefaultMaxPadBytes),
		maxPage:   setting.Positive(cfg.MaxPageBytes, DefaultMaxPageBytes)}
	switch c.transport {
	case "":
		c.transport = config.TicketHeader
	case config.TicketHeader, config.TicketQuery:
	default:
		return nil, fmt.Errorf("lockerclient: unknown ticket transport %q", c.transport)
	}
	if c.hc == nil {
		c.timeout = DefaultTimeout
		c.hc = &http.Client{
			Transport: &http.Transport{Proxy: nil, DialContext: dial, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return c, nil
}

// BaseURL returns the daemon's base URL (no trailing slash).
func (c *Client) BaseURL() string { return c.base }

// DaemonError is a request the daemon refused (Status is the HTTP status) or that failed in
// transport (Status 0). Detail is the daemon's "detail" text, else its raw body (capped), or a
// description of the transport failure; it never holds a secret of the request or a query
// string. Challenge is the payment challenge of a 402 that carries one.
type DaemonError struct {
	Status    int
	Detail    string
	Challenge json.RawMessage
}

func (e *DaemonError) Error() string {
	return fmt.Sprintf("locker daemon error %d: %s", e.Status, e.Detail)
}

// request is one call to the daemon.
type request struct {
	method  string
	route   string // template, for logs: /v1/pads/{pad_id}/blocks
	path    string // escaped path
	query   url.Values
	bearer  string
	body    []byte
	ctype   string
	proof   string   // X-Payment-Proof
	secrets []string // scrubbed from every text that leaves the client
	maxBody int
	buf     *[]byte // body buffer to read into (pages)
	accept  string  // default application/json
	// stream, when set, consumes a 2xx answer in the binary form (padwire) as it arrives;
	// do then returns no body.
	stream func(*http.Response) error
}

// redacted is the request's URL without any query: what errors may show.
func (c *Client) redacted(r *request) string { return c.base + r.path }

// do sends r and returns the status and body of a 2xx response, or a *DaemonError.
func (c *Client) do(ctx context.Context, r *request) (int, []byte, error) {
	rctx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(rctx, r.method, u, body)
	if err != nil {
		return 0, nil, &DaemonError{Detail: "cannot build the request for " + c.redacted(r)}
	}
	if r.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+r.bearer)
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	if r.proof != "" {
		req.Header.Set("X-Payment-Proof", r.proof)
	}
	accept := "application/json"
	if r.accept != "" {
		accept = r.accept
	}
	req.Header.Set("Accept", accept)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.log.DebugContext(ctx, "locker request", slog.String("method", r.method), slog.String("route", r.route),
			slog.Int("status", 0), slog.Duration("duration", time.Since(start)))
		return 0, nil, &DaemonError{Detail: c.transportDetail(ctx, r, err, "contacting")}
	}
	defer resp.Body.Close()
	if r.stream != nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 && isWire(resp.Header.Get("Content-Type")) {
		err := r.stream(resp)
		c.log.DebugContext(ctx, "locker request", slog.String("method", r.method), slog.String("route", r.route),
			slog.Int("status", resp.StatusCode), slog.Duration("duration", time.Since(start)))
		return resp.StatusCode, nil, err
	}
	limit := setting.Positive(r.maxBody, maxBodyBytes)
	data, err := readBody(resp, limit, r.buf)
	c.log.DebugContext(ctx, "locker request", slog.String("method", r.method), slog.String("route", r.route),
		slog.Int("status", resp.StatusCode), slog.Duration("duration", time.Since(start)))
	if r.buf != nil && data != nil {
		*r.buf = data[:0]
	}
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return resp.StatusCode, nil, &DaemonError{Status: resp.StatusCode,
				Detail: fmt.Sprintf("the response from %s exceeds %d bytes", c.redacted(r), limit)}
		}
		return 0, nil, &DaemonError{Detail: c.transportDetail(ctx, r, err, "reading the response from")}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, nil, c.statusError(resp.StatusCode, data, r)
	}
	return resp.StatusCode, data, nil
}

var errBodyTooLarge = errors.New("response body too large")

// readBody reads at most limit bytes, into *buf when given.
func readBody(resp *http.Response, limit int, buf *[]byte) ([]byte, error) {
	var b []byte
	if buf != nil {
		b = (*buf)[:0]
	}
	if n := resp.ContentLength; n > 0 {
		if n > int64(limit) {
			return b, errBodyTooLarge
		}
		if cap(b) < int(n) {
			b = make([]byte, 0, int(n))
		}
	} else if cap(b) == 0 {
		b = make([]byte, 0, 4096)
	}
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				return b, errBodyTooLarge
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			return b, errBodyTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// transportDetail describes a transport failure without the URL's query or any secret.
func (c *Client) transportDetail(ctx context.Context, r *request, err error, verb string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // url.Error's text carries the full URL
	}
	what := "request failed"
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		what = "request cancelled"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		what = "timeout" // the request's own deadline (timeout), or the transport's
	case err != nil:
		what = err.Error()
	}
	return scrub(fmt.Sprintf("%s %s: %s", verb, c.redacted(r), what), r)
}

// statusError turns a non-2xx response into a *DaemonError, keeping a 402 challenge.
func (c *Client) statusError(status int, body []byte, r *request) *DaemonError {
	var obj map[string]json.RawMessage
	isObj := json.Unmarshal(body, &obj) == nil && obj != nil
	if status == http.StatusPaymentRequired && isObj {
		if _, ok := obj["recipient"]; ok {
			return &DaemonError{Status: status, Detail: "payment required", Challenge: compact(body)}
		}
		if _, ok := obj["network"]; ok {
			return &DaemonError{Status: status, Detail: "payment required", Challenge: compact(body)}
		}
	}
	detail := ""
	if raw, ok := obj["detail"]; isObj && ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			detail = s
		} else {
			detail = string(compact(raw))
		}
	} else {
		detail = string(body)
	}
	return &DaemonError{Status: status, Detail: scrub(capText(detail), r)}
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return nil
	}
	return buf.Bytes()
}

// capText makes daemon text safe to quote: valid UTF-8, at most maxDetailBytes.
func capText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxDetailBytes {
		return s
	}
	cut := maxDetailBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (truncated)"
}

// scrub removes the request's secrets (also in URL-encoded form) and the query of any URL
// on this daemon from s.
func scrub(s string, r *request) string {
	for _, sec := range r.secrets {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, "<redacted>")
		if esc := url.QueryEscape(sec); esc != sec {
			s = strings.ReplaceAll(s, esc, "<redacted>")
		}
	}
	if strings.ContainsAny(s, "?#") {
		s = queryRE.ReplaceAllString(s, "$1")
	}
	return s
}

// queryRE matches an http(s) URL's query and fragment, whatever its host: a proxy may echo
// the URL in another form than LOCKER_URL.
var queryRE = regexp.MustCompile(`(https?://[^\s"'?#]*)[?#][^\s"']*`)

func padPath(padID, action string) string {
	return "/v1/pads/" + url.PathEscape(padID) + "/" + action
}

// getJSONObject sends r and returns its 2xx body, which must be one JSON object.
func (c *Client) getJSONObject(ctx context.Context, r *request) (int, []byte, error) {
	status, body, err := c.do(ctx, r)
	if err != nil {
		return status, nil, err
	}
	if !isJSONObject(body) {
		return status, nil, &DaemonError{Status: status, Detail: "the response from " + c.redacted(r) + " is not a JSON object"}
	}
	return status, body, nil
}

func isJSONObject(b []byte) bool {
	s := newScanner(b)
	if s.Peek() != jsontok.Object {
		return false
	}
	_, err := s.Skip()
	return err == nil && s.End() == nil
}

// CreateRequest is the body of POST /v1/pads.
type CreateRequest struct {
	// TTLSeconds is the write window.
	TTLSeconds int
	// MaxBlocks is the block quota.
	MaxBlocks int
	// PaymentTxHash, when set, is sent as X-Payment-Proof (txid mode).
	PaymentTxHash string
}

// Create creates a pad and returns the daemon's response body verbatim (a JSON object
// holding pad_id, write_key and read_ticket: secrets the caller must not log).
func (c *Client) Create(ctx context.Context, req CreateRequest) (json.RawMessage, error) {
	body := []byte(`{"ttl_seconds": ` + strconv.Itoa(req.TTLSeconds) + `, "max_blocks": ` + strconv.Itoa(req.MaxBlocks) + `}`)
	_, resp, err := c.getJSONObject(ctx, &request{method: http.MethodPost, route: "/v1/pads", path: "/v1/pads",
		body: body, ctype: "application/json", proof: req.PaymentTxHash})
	if err != nil {
		return nil, err
	}
	return compact(resp), nil
}

// Append appends one block and returns the daemon's acknowledgment verbatim. The client
// cannot verify it: it does not know the pad's prior head.
func (c *Client) Append(ctx context.Context, padID, writeKey, contentType string, payload []byte) (json.RawMessage, error) {
	if payload == nil {
		payload = []byte{}
	}
	_, resp, err := c.getJSONObject(ctx, &request{method: http.MethodPost, route: "/v1/pads/{pad_id}/append",
		path: padPath(padID, "append"), bearer: writeKey, body: payload, ctype: contentType, secrets: []string{writeKey}})
	if err != nil {
		return nil, err
	}
	return compact(resp), nil
}

// Seal seals a pad and returns the daemon's response verbatim (its assertion of the head).
func (c *Client) Seal(ctx context.Context, padID, writeKey string) (json.RawMessage, error) {
	_, resp, err := c.getJSONObject(ctx, &request{method: http.MethodPost, route: "/v1/pads/{pad_id}/seal",
		path: padPath(padID, "seal"), bearer: writeKey, secrets: []string{writeKey}})
	if err != nil {
		return nil, err
	}
	return compact(resp), nil
}

// ReceiveBuffer is the socket receive buffer the default transport asks for (the kernel
// caps it at net.core.rmem_max): a whole binary answer of a pad within its quota fits, so
// the daemon writes it in one go instead of waiting for this reader to open the window,
// and this reader hashes what has arrived while the rest is copied in. With the kernel's
// starting buffer (128 KiB here) the daemon stalled after its first 64 KiB. The verified
// read of a 256 KiB pad in 4 blocks ran at 0.34-0.35x raw SHA-256 with it against
// 0.23-0.29x without, in 256 blocks at 0.26-0.27x against 0.20-0.23x, in three runs of
// BenchmarkReadVerify256KiB (http-lockerd against http-lockerd-kernel-buffer).
const ReceiveBuffer = 1 << 20

// dial connects as net.Dialer does and asks for [ReceiveBuffer]. Not being given it only
// costs speed, so that failure is ignored.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetReadBuffer(ReceiveBuffer)
	}
	return c, err
}
