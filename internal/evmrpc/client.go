package evmrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/agentgate-dev/agentgate/internal/setting"
)

// Defaults of Config.
const (
	DefaultReceiptTimeout   = 5 * time.Second
	DefaultChainIDTimeout   = 2 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

var (
	// ErrTransport: the request did not get a usable HTTP answer (connection refused, timeout,
	// cancellation, a non-2xx status, a redirect).
	ErrTransport = errors.New("rpc transport failed")
	// ErrMalformed: the answer is not a JSON-RPC 2.0 response to this request (not JSON,
	// oversized, wrong version or id, no result, or a result of the wrong type).
	ErrMalformed = errors.New("rpc response malformed")
)

// CallError is a JSON-RPC error object returned by the provider. Message is the provider's
// text, shortened and stripped of control characters; it is for logs, never for clients.
type CallError struct {
	Method  string
	Code    int64
	Message string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s: json-rpc error %d: %s", e.Method, e.Code, e.Message)
}

// Config configures New.
type Config struct {
	// URL is the JSON-RPC endpoint, http or https. Required. It never appears in errors.
	URL string
	// HTTPClient sends the requests. Default: a client on a clone of
	// http.DefaultTransport that follows no redirects. Its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// ReceiptTimeout bounds TransactionReceipt. Default DefaultReceiptTimeout (5 s).
	ReceiptTimeout time.Duration
	// ChainIDTimeout bounds ChainID. Default DefaultChainIDTimeout (2 s).
	ChainIDTimeout time.Duration
	// MaxResponseBytes caps the response body; a longer one is ErrMalformed. Default
	// DefaultMaxResponseBytes (1 MiB, far above any payment receipt).
	MaxResponseBytes int64
}

// Client is a JSON-RPC client. It is safe for concurrent use.
type Client struct {
	url      string
	endpoint string
	hc       *http.Client
	receiptT time.Duration
	chainT   time.Duration
	max      int64
	id       atomic.Uint64
}

// New returns a client for cfg.URL. It sends nothing.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("evmrpc: Config.URL must be an http or https URL")
	}
	c := &Client{url: cfg.URL, endpoint: u.Scheme + "://" + u.Host, hc: cfg.HTTPClient,
		receiptT: setting.Positive(cfg.ReceiptTimeout, DefaultReceiptTimeout),
		chainT:   setting.Positive(cfg.ChainIDTimeout, DefaultChainIDTimeout),
		max:      setting.Positive(cfg.MaxResponseBytes, DefaultMaxResponseBytes)}
	if c.hc == nil {
		c.hc = &http.Client{
			Transport:     http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return c, nil
}

// Endpoint is the URL's scheme and host, without path, query or credentials: safe to log.
func (c *Client) Endpoint() string { return c.endpoint }

// ChainID calls eth_chainId and returns the chain ID, within the chain ID timeout.
func (c *Client) ChainID(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.chainT)
	defer cancel()
	raw, err := c.Call(ctx, "eth_chainId", []any{})
	if err != nil {
		return 0, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("eth_chainId: %w: result is not a string", ErrMalformed)
	}
	n, ok := quantity(s)
	if !ok {
		return 0, fmt.Errorf("eth_chainId: %w: result %.40q is not a hex quantity", ErrMalformed, s)
	}
	return n, nil
}

// quantity parses a JSON-RPC QUANTITY: 0x and 1 to 16 hex digits.
func quantity(s string) (uint64, bool) {
	if len(s) < 3 || len(s) > 18 || s[:2] != "0x" {
		return 0, false
	}
	n, err := strconv.ParseUint(s[2:], 16, 64)
	return n, err == nil
}

// TransactionReceipt calls eth_getTransactionReceipt for txHash and returns the raw result:
// the JSON literal null when the node knows no such transaction, else the receipt object
// (checked by internal/payment). It is bounded by the receipt timeout.
func (c *Client) TransactionReceipt(ctx context.Context, txHash string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.receiptT)
	defer cancel()
	return c.Call(ctx, "eth_getTransactionReceipt", []any{txHash})
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Call sends one JSON-RPC request and returns its result (possibly the literal null). It
// applies no timeout of its own beyond ctx and the HTTP client's.
func (c *Client) Call(ctx context.Context, method string, params []any) (json.RawMessage, error) {
	id := c.id.Add(1)
	body, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: build request", method, ErrTransport)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", method, ErrTransport, scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s: %w: HTTP status %d", method, ErrTransport, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: read response: %v", method, ErrTransport, scrub(err))
	}
	if int64(len(data)) > c.max {
		return nil, fmt.Errorf("%s: %w: response exceeds %d bytes", method, ErrMalformed, c.max)
	}
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: not a JSON-RPC response object", method, ErrMalformed)
	}
	if r.JSONRPC != "2.0" || string(r.ID) != strconv.FormatUint(id, 10) {
		return nil, fmt.Errorf("%s: %w: wrong jsonrpc version or id", method, ErrMalformed)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(r.Error, &e); err != nil {
			return nil, fmt.Errorf("%s: %w: unreadable error object", method, ErrMalformed)
		}
		return nil, &CallError{Method: method, Code: e.Code, Message: clean(e.Message)}
	}
	if len(r.Result) == 0 {
		return nil, fmt.Errorf("%s: %w: no result", method, ErrMalformed)
	}
	return r.Result, nil
}

// scrub drops the URL from a net/http error: the inner error names at most host and port.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// clean shortens a provider message and strips control characters, so a hostile or chatty
// provider cannot flood or forge log lines.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
