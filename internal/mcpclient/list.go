package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/readbound"
	"github.com/agentgate-dev/agentgate/internal/setting"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/canon"
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
	// Logger receives debug logs of the exchange, and a warning for every line a stdio
	// server printed on stdout that is not JSON-RPC. Nil discards them.
	Logger *slog.Logger
	// Profile is the client the listing acts as: the protocol revision offered and the
	// capabilities declared. Nil means the built-in "generic" profile.
	Profile *Profile
	// Everything also lists prompts, resources and resource templates (of a server that
	// advertises them) and keeps the server's instructions. False lists tools only.
	Everything bool
	// ProbeTimeout bounds the wait for an answer to the server/discover probe that a
	// profile offering MCP 2026-07-28 sends first; without one the client falls back to
	// initialize. Zero means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// MaxSkippedLines bounds the lines a stdio server may print on stdout that are not
	// JSON-RPC (each is skipped and logged). Zero means DefaultMaxSkippedLines.
	MaxSkippedLines int
	// Limits bound what the server may make the client read — one message (an HTTP body,
	// one server-sent event, one stdio line), every page of one list method, everything in
	// the session — enforced while reading. Zero fields take readbound's defaults.
	Limits readbound.Limits
}

// DefaultProbeTimeout bounds the wait for an answer to server/discover: a server that
// ignores the unknown request costs this much, not the whole timeout.
const DefaultProbeTimeout = time.Second

func (o Options) profile() Profile {
	if o.Profile != nil {
		return *o.Profile
	}
	p, _ := BuiltinProfile(ProfileGeneric)
	return p
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
	// Profile is the name of the profile the server was listed as.
	Profile string
	// Instructions are the server's instructions from initialize (or server/discover); nil
	// when it sent none.
	Instructions *string
	// Prompts, Resources and ResourceTemplates are the raw objects of each list, in the order
	// served, when Options.Everything was set and the server advertises them.
	Prompts, Resources, ResourceTemplates []Item
	// Notes say what the client worked around that a person should hear about: lines
	// skipped on stdout, a server restarted after it exited on the server/discover probe.
	Notes []string
	// ProbeUnanswered is true when the server did not answer the server/discover probe in
	// time and was listed with initialize: what the specification expects of a server that
	// predates MCP 2026-07-28, so not a note.
	ProbeUnanswered bool
}

// Item is one prompt, resource or resource template as the server sent it.
type Item struct {
	// Key identifies it: a prompt's name, a resource's uri, a template's uriTemplate ("" if
	// missing or not a string).
	Key string
	// Raw is the object exactly as the server sent it.
	Raw json.RawMessage
}

// ListTools connects to s, lists all its tools following nextCursor pagination, and
// disconnects. A stdio child and every process it started are stopped before ListTools
// returns, whether it succeeds or not.
//
// Errors name the server and wrap [ErrUnavailable] (could not start, connect, or finish
// within the timeout) or [ErrProtocol] (the server answered with something that is not a
// tool listing). A server that does not advertise the tools capability has no tools.
func ListTools(ctx context.Context, s Server, opts Options) (*Listing, error) {
	timeout := setting.Positive(opts.Timeout, DefaultTimeout)
	parent := ctx
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
		if parent.Err() != nil && !errors.Is(err, ErrProtocol) {
			return l, fmt.Errorf("server %q: %w: interrupted (%v)", s.Name, ErrUnavailable, context.Cause(parent))
		}
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
	l, t, err := listStdioOnce(ctx, s, opts, false)
	if err == nil || ctx.Err() != nil || !opts.profile().modern() || errors.Is(err, ErrProtocol) {
		return l, err
	}
	// A legacy server may exit on a request it does not know. The specification's stdio
	// backward-compatibility rule: restart it and use initialize.
	if sent, _, lost := t.probe(); sent && lost {
		l2, _, err2 := listStdioOnce(ctx, s, opts, true)
		if err2 == nil {
			l2.Notes = append(l2.Notes, "the server exited when sent the server/discover probe; restarted and listed with initialize (MCP "+LegacyProtocolVersion+")")
			return l2, nil
		}
		return l2, err2
	}
	return l, err
}

// listStdioOnce starts s once and lists it; legacy skips the server/discover probe.
func listStdioOnce(ctx context.Context, s Server, opts Options, legacy bool) (*Listing, *tap, error) {
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

	budget := readbound.NewBudget(opts.Limits)
	filter := &lineFilter{max: setting.Positive(opts.MaxSkippedLines, DefaultMaxSkippedLines), logger: opts.logger(), server: s.Name, budget: budget}
	tap := opts.newTap()
	stdio := &stdioTransport{cmd: cmd, terminate: 2 * time.Second, filter: filter, ctx: ctx}
	transport := &tapTransport{inner: stdio, tap: tap}
	l := &Listing{Server: s.Name, Transport: TransportStdio}
	defer func() {
		if cmd.Process != nil {
			l.PID = cmd.Process.Pid
			killProcessGroup(cmd.Process.Pid)
		}
	}()
	err := list(ctx, s, opts, transport, tap, budget, l, legacy)
	if e := budget.Exceeded(); e != nil {
		return l, tap, boundError(s, e)
	}
	if n, first := filter.stats(); n > 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("skipped %d %s on stdout that %s not JSON-RPC (the first: %s)", n, plural(n, "line", "lines"), plural(n, "is", "are"), first))
	}
	if ferr := filter.err(); err != nil && ferr != nil {
		return l, tap, fmt.Errorf("server %q: %w", s.Name, ferr)
	}
	if err != nil && cmd.Process == nil {
		why := err
		if stdio.startErr != nil {
			why = pathErr(unwrapExec(stdio.startErr))
		}
		return nil, tap, fmt.Errorf("server %q: %w: cannot start %s: %v", s.Name, ErrUnavailable, s.Command, why)
	}
	if err != nil && !errors.Is(err, ErrProtocol) {
		if last := stderr.summary(); last != "" {
			err = fmt.Errorf("%w (server stderr: %s)", err, last)
		}
	}
	return l, tap, err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (o Options) logger() *slog.Logger { return setting.Logger(o.Logger) }

func (o Options) newTap() *tap {
	return newTap(o.profile().Capabilities, setting.Positive(o.ProbeTimeout, DefaultProbeTimeout))
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func listRemote(ctx context.Context, s Server, opts Options, t Transport) (*Listing, error) {
	// Over HTTP every request gets a status at once, so the probe needs no deadline of its
	// own (a slow server would otherwise be taken for a legacy one).
	tap := newTap(opts.profile().Capabilities, 0)
	budget := readbound.NewBudget(opts.Limits)
	hc := wrapHTTPClient(opts.HTTPClient, s, tap, budget)
	// The SDK's own bound on one event stays above ours, so that ours, which names the
	// flag, is the one that fires.
	sdkEvent := int(min(budget.Limits().Message*2, 1<<40))
	var inner mcp.Transport
	if t == TransportSSE {
		inner = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxEventSize: sdkEvent}
	} else {
		inner = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: 2, MaxEventSize: sdkEvent}
	}
	l := &Listing{Server: s.Name, Transport: t}
	err := list(ctx, s, opts, &tapTransport{inner: inner, tap: tap}, tap, budget, l, false)
	if e := budget.Exceeded(); e != nil {
		return l, boundError(s, e)
	}
	if err != nil && !errors.Is(err, ErrProtocol) {
		if he := tap.lastHTTPError(); he != nil {
			err = fmt.Errorf("%w (%s)", err, he)
		}
	}
	return l, err
}

// list runs the handshake and the paginated list calls over transport.
func list(ctx context.Context, s Server, opts Options, transport mcp.Transport, tap *tap, budget *readbound.Budget, l *Listing, legacy bool) error {
	name, version := opts.ClientName, opts.ClientVersion
	if name == "" {
		name = "agentgate"
	}
	if version == "" {
		version = "dev"
	}
	profile := opts.profile()
	l.Profile = profile.Name
	offered := profile.ProtocolVersion
	if legacy && profile.modern() {
		offered = LegacyProtocolVersion
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, &mcp.ClientOptions{Logger: opts.logger()})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: offered})
	if err != nil {
		return fmt.Errorf("server %q: %w: %s", s.Name, ErrUnavailable, oneLine(err))
	}
	defer cs.Close()
	if sent, timedOut, _ := tap.probe(); sent && timedOut {
		l.ProbeUnanswered = true
	}

	init := cs.InitializeResult()
	if init != nil {
		l.ProtocolVersion = init.ProtocolVersion
		if init.ServerInfo != nil {
			l.ServerName, l.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	if opts.Everything {
		instr, err := instructionsOf(tap.handshakeResult())
		if err != nil {
			return fmt.Errorf("server %q: %w: %v", s.Name, ErrProtocol, err)
		}
		l.Instructions = instr
	}
	caps := &mcp.ServerCapabilities{}
	if init != nil && init.Capabilities != nil {
		caps = init.Capabilities
	}
	p := pager{s: s, cs: cs, tap: tap, budget: budget, maxPages: setting.Positive(opts.MaxPages, DefaultMaxPages),
		maxItems: setting.Positive(opts.MaxTools, DefaultMaxTools)}
	if init == nil || caps.Tools != nil {
		items, pages, err := p.all(ctx, "tools/list", "tools", "name")
		if err != nil {
			return err
		}
		l.Pages = pages
		for _, it := range items {
			l.Tools = append(l.Tools, Tool{Name: it.Key, Raw: it.Raw})
		}
	}
	if !opts.Everything {
		return nil
	}
	if caps.Prompts != nil {
		if l.Prompts, _, err = p.all(ctx, "prompts/list", "prompts", "name"); err != nil {
			return err
		}
	}
	if caps.Resources != nil {
		if l.Resources, _, err = p.all(ctx, "resources/list", "resources", "uri"); err != nil {
			return err
		}
		l.ResourceTemplates, _, err = p.all(ctx, "resources/templates/list", "resourceTemplates", "uriTemplate")
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound {
			// Servers with static resources only often leave templates unimplemented.
			l.ResourceTemplates, err = nil, nil
			l.Notes = append(l.Notes, "resources/templates/list is not implemented (method not found); no resource templates")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// instructionsOf reads "instructions" from a raw initialize or discover result, refusing a
// string that is not valid Unicode (which a decoder would silently repair).
func instructionsOf(raw json.RawMessage) (*string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("the initialize result is not a JSON object")
	}
	v, ok := top["instructions"]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	if _, err := canon.Transform(v); err != nil || v[0] != '"' {
		return nil, fmt.Errorf("instructions is not a valid string")
	}
	var out string
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("instructions is not a valid string")
	}
	return &out, nil
}

// pager follows nextCursor pagination of one list method.
type pager struct {
	s                  Server
	cs                 *mcp.ClientSession
	tap                *tap
	budget             *readbound.Budget
	maxPages, maxItems int
}

// all fetches every page of method and returns the raw objects of member, keyed by the
// string member key. A JSON-RPC error is returned wrapped, so that callers can inspect its
// code.
func (p pager) all(ctx context.Context, method, member, key string) ([]Item, int, error) {
	var items []Item
	seen := map[string]bool{}
	cursor := ""
	total := p.budget.Listing(method)
	for page := 0; ; page++ {
		if page >= p.maxPages {
			return nil, page, fmt.Errorf("server %q: %w: more than %d pages of %s", p.s.Name, ErrProtocol, p.maxPages, method)
		}
		var err error
		switch method {
		case "tools/list":
			_, err = p.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		case "prompts/list":
			_, err = p.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		case "resources/list":
			_, err = p.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		case "resources/templates/list":
			_, err = p.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		}
		if err != nil {
			var werr *jsonrpc.Error
			if errors.As(err, &werr) && !transportFailure(err, werr) {
				return nil, page, fmt.Errorf("server %q: %w: %s failed: %w", p.s.Name, ErrProtocol, method, werr)
			}
			return nil, page, fmt.Errorf("server %q: %w: %s: %s", p.s.Name, ErrUnavailable, method, oneLine(err))
		}
		raw, ok := p.tap.take(method)
		if !ok {
			return nil, page, fmt.Errorf("server %q: %w: %s page %d was not seen on the wire", p.s.Name, ErrProtocol, method, page+1)
		}
		if e := total.Add(len(raw)); e != nil {
			return nil, page, boundError(p.s, e)
		}
		got, next, err := parsePage(raw, member, key)
		if err != nil {
			return nil, page, fmt.Errorf("server %q: %w: %s page %d: %v", p.s.Name, ErrProtocol, method, page+1, err)
		}
		items = append(items, got...)
		if len(items) > p.maxItems {
			return nil, page, fmt.Errorf("server %q: %w: more than %d %s", p.s.Name, ErrProtocol, p.maxItems, member)
		}
		if next == "" {
			return items, page + 1, nil
		}
		if seen[next] {
			return nil, page, fmt.Errorf("server %q: %w: %s returned the cursor %q twice", p.s.Name, ErrProtocol, method, next)
		}
		seen[next] = true
		cursor = next
	}
}

// parseToolsPage extracts the raw tool objects and nextCursor of a tools/list result.
// Keys are matched exactly ("tools", not "Tools"), which encoding/json would not do.
func parseToolsPage(result json.RawMessage) ([]Tool, string, error) {
	items, next, err := parsePage(result, "tools", "name")
	if err != nil {
		return nil, "", err
	}
	tools := make([]Tool, len(items))
	for i, it := range items {
		tools[i] = Tool{Name: it.Key, Raw: it.Raw}
	}
	return tools, next, nil
}

// parsePage extracts the raw objects of member and nextCursor from a list result.
func parsePage(result json.RawMessage, member, key string) ([]Item, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil || top == nil {
		return nil, "", errors.New("the result is not a JSON object")
	}
	var raws []json.RawMessage
	if t, ok := top[member]; ok && string(t) != "null" {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, "", fmt.Errorf("%q is not an array", member)
		}
	}
	items := make([]Item, 0, len(raws))
	for i, r := range raws {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil || obj == nil {
			return nil, "", fmt.Errorf("%s[%d] is not a JSON object", member, i)
		}
		var k string
		_ = json.Unmarshal(obj[key], &k)
		items = append(items, Item{Key: k, Raw: bytes.Clone(r)})
	}
	var next string
	if c, ok := top["nextCursor"]; ok && string(c) != "null" {
		if err := json.Unmarshal(c, &next); err != nil {
			return nil, "", errors.New("\"nextCursor\" is not a string")
		}
	}
	return items, next, nil
}

// wrapHTTPClient returns a shallow copy of base (or a new client) whose transport adds the
// configured headers, keeps the body of HTTP error responses (redacted) for error messages,
// and, because the tapped connection hides the negotiated version from the SDK's HTTP
// transport, adds the MCP-Protocol-Version header.
func wrapHTTPClient(base *http.Client, s Server, tap *tap, budget *readbound.Budget) *http.Client {
	var hc http.Client
	if base != nil {
		hc = *base
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = &headerTransport{base: rt, headers: s.Headers, secrets: secretsOf(s), tap: tap, budget: budget}
	return &hc
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	secrets []string
	tap     *tap
	budget  *readbound.Budget
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
	resp, err := h.base.RoundTrip(req)
	if err == nil {
		if resp.Body != nil {
			framing := readbound.Whole
			if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
				framing = readbound.Events
			}
			resp.Body = h.budget.Body(resp.Body, framing)
		}
		captureError(resp, h.secrets, h.tap)
	}
	return resp, err
}

// boundError is the error of a listing that crossed a read bound: the server's answer is
// refused, whatever the SDK made of the failed read.
func boundError(s Server, e *readbound.Error) error {
	return fmt.Errorf("server %q: %w: %w", s.Name, ErrProtocol, e)
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

// summary is the end of a child's stderr on one bounded line: its last three telling lines,
// joined by " | ". Stack frames ("at …"), a caret under a source line and Node's closing
// "Node.js vX" say nothing of what went wrong and are left out, so a Node crash reads as its
// source line and its Error, an npm failure as its "npm error" lines.
func (b *tailBuffer) summary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keep []string
	for _, line := range strings.Split(string(b.buf), "\n") {
		line = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return -1 // control characters and the ANSI escapes they start
			}
			return r
		}, ansiEscape.ReplaceAllString(line, ""))
		line = strings.TrimSpace(strings.ToValidUTF8(line, "?"))
		switch {
		case line == "", strings.HasPrefix(line, "at "), strings.Trim(line, "^~ ") == "", nodeVersionLine.MatchString(line):
			continue
		}
		keep = append(keep, line)
	}
	// From the first of the last run of error lines ("Error: …", "npm error …",
	// "Traceback …"), else the last lines.
	start := max(len(keep)-3, 0)
	for i := len(keep) - 1; i >= 0; i-- {
		if errorLine.MatchString(keep[i]) {
			for start = i; start > 0 && errorLine.MatchString(keep[start-1]); start-- {
			}
			break
		}
	}
	keep = keep[start:min(start+3, len(keep))]
	s := strings.Join(keep, " | ")
	if r := []rune(s); len(r) > 400 {
		s = "…" + string(r[len(r)-400:])
	}
	return s
}

var (
	ansiEscape      = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
	nodeVersionLine = regexp.MustCompile(`^Node\.js v[0-9.]+$`)
	errorLine       = regexp.MustCompile(`(?i)(^|[^a-z])(error|err!|exception|fatal|panic|traceback)([^a-z]|$)`)
)

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
