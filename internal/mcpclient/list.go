package mcpclient

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
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for [Options].
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxPages = 1000
	DefaultMaxTools = 100000
)

// Options configures [ListTools]. The zero value is ready to use.
type Options struct {
	// Timeout bounds one server's whole listing: start or connect, handshake, every page.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient is used for remote servers. Nil means a plain client with no address
	// filtering; callers that list untrusted URLs pass one with a guarded dialer. Its
	// Transport is wrapped (to add configured headers), never modified.
	HTTPClient *http.Client
	// Environ is the base environment of stdio children, before Server.Env is applied.
	// Nil means os.Environ().
	Environ []string
	// MaxPages bounds the number of tools/list pages followed. Zero means DefaultMaxPages.
	MaxPages int
	// MaxTools bounds the number of tools accepted from one server. Zero means DefaultMaxTools.
	MaxTools int
	// ClientName and ClientVersion are sent as clientInfo. Empty means "agentgate" and "dev".
	ClientName, ClientVersion string
	// Logger receives debug logs of the exchange. Nil discards them.
	Logger *slog.Logger
}

// Tool is one tool object from a tools/list result.
type Tool struct {
	// Name is the tool's "name" ("" if the server sent none or a non-string).
	Name string
	// Raw is the tool object exactly as the server sent it, byte for byte.
	Raw json.RawMessage
}

// Listing is the result of listing one server.
type Listing struct {
	// Server is the name of the server listed.
	Server string
	// Tools are the tools in the order the server sent them, across all pages.
	Tools []Tool
	// Pages is the number of tools/list pages fetched.
	Pages int
	// Transport is the transport that answered: stdio, http or sse (after a fallback).
	Transport Transport
	// ProtocolVersion is the negotiated MCP protocol version.
	ProtocolVersion string
	// ServerName and ServerVersion are the server's own serverInfo.
	ServerName, ServerVersion string
	// PID is the process ID of a stdio server's child (already stopped when ListTools returns).
	PID int
}

// ListTools connects to s, lists all its tools following nextCursor pagination, and
// disconnects. A stdio child and every process it started are stopped before ListTools
// returns, whether it succeeds or not.
//
// Errors name the server and wrap [ErrUnavailable] (could not start, connect, or finish
// within the timeout) or [ErrProtocol] (the server answered with something that is not a
// tool listing). A server that does not advertise the tools capability has no tools.
func ListTools(ctx context.Context, s Server, opts Options) (*Listing, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		l   *Listing
		err error
	)
	switch s.Transport {
	case TransportStdio:
		l, err = listStdio(ctx, s, opts)
	case TransportSSE:
		l, err = listRemote(ctx, s, opts, TransportSSE)
	case TransportHTTP, "":
		if s.URL == "" && s.Command != "" {
			l, err = listStdio(ctx, s, opts)
			break
		}
		l, err = listRemote(ctx, s, opts, TransportHTTP)
		if err != nil && fallbackToSSE(ctx, err) {
			var sseErr error
			if l, sseErr = listRemote(ctx, s, opts, TransportSSE); sseErr == nil {
				err = nil
			} else {
				err = fmt.Errorf("%w (SSE fallback: %v)", err, unwrapServer(sseErr))
			}
		}
	default:
		return nil, fmt.Errorf("server %q: unknown transport %q", s.Name, s.Transport)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrProtocol) {
			return l, fmt.Errorf("server %q: %w: no complete answer within %s (raise --timeout if it is just slow)", s.Name, ErrUnavailable, timeout)
		}
		return l, err
	}
	return l, nil
}

// fallbackToSSE reports whether a Streamable HTTP failure looks like a legacy SSE server
// (it answered, but refused the POST) rather than an unreachable one.
func fallbackToSSE(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrProtocol) {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout()) {
		return false
	}
	return true
}

// codeRejectedByTransport is the JSON-RPC code the MCP SDK wraps around a request its
// transport could not deliver or get an answer for (a timeout, a refused connection).
const codeRejectedByTransport = -32005

// transportFailure reports whether a JSON-RPC-shaped error is really the transport
// giving up (the server did not answer in time or could not be reached), which makes the
// server unavailable rather than its answer invalid.
func transportFailure(err error, werr *jsonrpc.Error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	return werr.Code == codeRejectedByTransport
}

func unwrapServer(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "server ") {
		return msg[i+2:]
	}
	return msg
}

func listStdio(ctx context.Context, s Server, opts Options) (*Listing, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Cwd
	env := opts.Environ
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	for _, k := range sortedKeys(s.Env) {
		env = append(env, k+"="+s.Env[k])
	}
	cmd.Env = env
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	// If a grandchild keeps stderr open after the server exits, don't wait for it forever.
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd)

	tap := newTap()
	transport := &tapTransport{
		inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second},
		tap:   tap,
	}
	l := &Listing{Server: s.Name, Transport: TransportStdio}
	defer func() {
		if cmd.Process != nil {
			l.PID = cmd.Process.Pid
			killProcessGroup(cmd.Process.Pid)
		}
	}()
	err := list(ctx, s, opts, transport, tap, l)
	if err != nil && cmd.Process == nil {
		return nil, fmt.Errorf("server %q: %w: cannot start %s: %v", s.Name, ErrUnavailable, s.Command, pathErr(unwrapExec(err)))
	}
	if err != nil && !errors.Is(err, ErrProtocol) {
		if last := stderr.lastLine(); last != "" {
			err = fmt.Errorf("%w (server stderr: %s)", err, last)
		}
	}
	return l, err
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func listRemote(ctx context.Context, s Server, opts Options, t Transport) (*Listing, error) {
	tap := newTap()
	hc := wrapHTTPClient(opts.HTTPClient, s.Headers, tap)
	var inner mcp.Transport
	if t == TransportSSE {
		inner = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}
	} else {
		inner = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: 2}
	}
	l := &Listing{Server: s.Name, Transport: t}
	err := list(ctx, s, opts, &tapTransport{inner: inner, tap: tap}, tap, l)
	return l, err
}

// list runs the handshake and the paginated tools/list over transport.
func list(ctx context.Context, s Server, opts Options, transport mcp.Transport, tap *tap, l *Listing) error {
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name = "agentgate"
	}
	if version == "" {
		version = "dev"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, &mcp.ClientOptions{Logger: logger})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("server %q: %w: %s", s.Name, ErrUnavailable, oneLine(err))
	}
	defer cs.Close()

	init := cs.InitializeResult()
	if init != nil {
		l.ProtocolVersion = init.ProtocolVersion
		if init.ServerInfo != nil {
			l.ServerName, l.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	if init != nil && (init.Capabilities == nil || init.Capabilities.Tools == nil) {
		return nil // no tools capability: no tools
	}

	maxPages, maxTools := opts.MaxPages, opts.MaxTools
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if maxTools <= 0 {
		maxTools = DefaultMaxTools
	}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page >= maxPages {
			return fmt.Errorf("server %q: %w: more than %d pages of tools/list", s.Name, ErrProtocol, maxPages)
		}
		if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor}); err != nil {
			var werr *jsonrpc.Error
			if errors.As(err, &werr) && !transportFailure(err, werr) {
				return fmt.Errorf("server %q: %w: tools/list failed: %s", s.Name, ErrProtocol, oneLine(err))
			}
			return fmt.Errorf("server %q: %w: tools/list: %s", s.Name, ErrUnavailable, oneLine(err))
		}
		raw, ok := tap.takeToolsResult()
		if !ok {
			return fmt.Errorf("server %q: %w: tools/list page %d was not seen on the wire", s.Name, ErrProtocol, page+1)
		}
		tools, next, err := parseToolsPage(raw)
		if err != nil {
			return fmt.Errorf("server %q: %w: tools/list page %d: %v", s.Name, ErrProtocol, page+1, err)
		}
		l.Pages++
		l.Tools = append(l.Tools, tools...)
		if len(l.Tools) > maxTools {
			return fmt.Errorf("server %q: %w: more than %d tools", s.Name, ErrProtocol, maxTools)
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("server %q: %w: tools/list returned the cursor %q twice", s.Name, ErrProtocol, next)
		}
		seen[next] = true
		cursor = next
	}
}

// parseToolsPage extracts the raw tool objects and nextCursor of a tools/list result.
// Keys are matched exactly ("tools", not "Tools"), which encoding/json would not do.
func parseToolsPage(result json.RawMessage) ([]Tool, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil || top == nil {
		return nil, "", errors.New("the result is not a JSON object")
	}
	var raws []json.RawMessage
	if t, ok := top["tools"]; ok && string(t) != "null" {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, "", errors.New("\"tools\" is not an array")
		}
	}
	tools := make([]Tool, 0, len(raws))
	for i, r := range raws {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil || obj == nil {
			return nil, "", fmt.Errorf("tools[%d] is not a JSON object", i)
		}
		var name string
		_ = json.Unmarshal(obj["name"], &name)
		tools = append(tools, Tool{Name: name, Raw: bytes.Clone(r)})
	}
	var next string
	if c, ok := top["nextCursor"]; ok && string(c) != "null" {
		if err := json.Unmarshal(c, &next); err != nil {
			return nil, "", errors.New("\"nextCursor\" is not a string")
		}
	}
	return tools, next, nil
}

// tap records, from the messages a session reads, the raw result of every tools/list call
// and the negotiated protocol version, so that tools are kept exactly as served rather than
// as the SDK decodes them.
type tap struct {
	mu              sync.Mutex
	toolsIDs        map[jsonrpc.ID]bool
	initIDs         map[jsonrpc.ID]bool
	results         []json.RawMessage
	protocolVersion string
}

func newTap() *tap {
	return &tap{toolsIDs: map[jsonrpc.ID]bool{}, initIDs: map[jsonrpc.ID]bool{}}
}

func (t *tap) wrote(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch req.Method {
	case "tools/list":
		t.toolsIDs[req.ID] = true
	case "initialize", "server/discover":
		t.initIDs[req.ID] = true
	}
}

func (t *tap) read(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.toolsIDs[resp.ID] {
		delete(t.toolsIDs, resp.ID)
		if resp.Error == nil {
			t.results = append(t.results, bytes.Clone(resp.Result))
		}
	}
	if t.initIDs[resp.ID] {
		delete(t.initIDs, resp.ID)
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
			t.protocolVersion = r.ProtocolVersion
		}
	}
}

func (t *tap) takeToolsResult() (json.RawMessage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.results) == 0 {
		return nil, false
	}
	r := t.results[0]
	t.results = t.results[1:]
	return r, true
}

func (t *tap) version() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.protocolVersion
}

type tapTransport struct {
	inner mcp.Transport
	tap   *tap
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap}, nil
}

type tapConn struct {
	mcp.Connection
	tap *tap
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.tap.read(msg)
	}
	return msg, err
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.tap.wrote(msg)
	return c.Connection.Write(ctx, msg)
}

// wrapHTTPClient returns a shallow copy of base (or a new client) whose transport adds the
// configured headers and, because the tapped connection hides the negotiated version from
// the SDK's HTTP transport, the MCP-Protocol-Version header.
func wrapHTTPClient(base *http.Client, headers map[string]string, tap *tap) *http.Client {
	var hc http.Client
	if base != nil {
		hc = *base
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = &headerTransport{base: rt, headers: headers, tap: tap}
	return &hc
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	tap     *tap
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Mcp-Protocol-Version") == "" {
		if v := h.tap.version(); v != "" {
			req.Header.Set("Mcp-Protocol-Version", v)
		}
	}
	return h.base.RoundTrip(req)
}

// tailBuffer keeps the last max bytes written to it (a child's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(b.buf)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	return strings.ToValidUTF8(last, "?")
}

var _ io.Writer = (*tailBuffer)(nil)

// oneLine flattens an error to one bounded line, so an upstream body can't flood the output.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
