package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/mcpmsg"
)

// Bridge connects an MCP client that speaks stdio (an editor's "command" server entry) to
// a proxy route over Streamable HTTP: each message the client writes is POSTed to URL, and
// every message of every answer, and of the standalone stream the route offers once the
// session is initialized, is written back. The client's messages are read and written
// with the go-sdk's stdio transport (newline-delimited JSON-RPC).
type Bridge struct {
	// URL is the route: http://127.0.0.1:PORT/SERVER/mcp.
	URL string
	// Client makes the requests. Default: a client of its own.
	Client *http.Client
	// In and Out are the client's stdio.
	In  io.Reader
	Out io.Writer
	// MaxMessageBytes bounds one message of an answer. Default 16 MiB.
	MaxMessageBytes int
	// Logger receives the bridge's logs (on stderr: stdout is the protocol). Nil
	// discards them.
	Logger *slog.Logger

	conn      mcp.Connection
	writeMu   sync.Mutex
	mu        sync.Mutex
	session   string
	version   string
	streaming bool
	wg        sync.WaitGroup
}

// Run relays until the client closes its stdin (or ctx ends), then ends the session.
func (b *Bridge) Run(ctx context.Context) error {
	if b.Client == nil {
		b.Client = &http.Client{}
	}
	if b.MaxMessageBytes <= 0 {
		b.MaxMessageBytes = 16 << 20
	}
	if b.Logger == nil {
		b.Logger = slog.New(slog.DiscardHandler)
	}
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(b.In), Writer: nopCloser{b.Out}}).Connect(ctx)
	if err != nil {
		return err
	}
	b.conn = conn
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		b.wg.Wait()
		b.endSession()
	}()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read from the client: %w", err)
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return err
		}
		req, _ := msg.(*jsonrpc.Request)
		b.wg.Go(func() { b.send(ctx, data, req) })
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// send POSTs one message and relays the answer.
func (b *Bridge) send(ctx context.Context, data []byte, req *jsonrpc.Request) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, b.URL, bytes.NewReader(data))
	if err != nil {
		b.fail(ctx, req, err.Error())
		return
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	b.mu.Lock()
	session, version := b.session, b.version
	b.mu.Unlock()
	if req != nil {
		if v := metaVersion(req.Params); v != "" {
			version = v
		}
		if version >= "2026-07-28" {
			hr.Header.Set("Mcp-Method", req.Method)
		}
	}
	if session != "" {
		hr.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		hr.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := b.Client.Do(hr)
	if err != nil {
		if ctx.Err() == nil {
			b.fail(ctx, req, "cannot reach the proxy at "+b.URL+": "+err.Error())
		}
		return
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		b.mu.Lock()
		b.session = s
		b.mu.Unlock()
	}
	isInit := req != nil && req.Method == "initialize"
	if err := b.relay(ctx, resp, req, isInit); err != nil && ctx.Err() == nil {
		b.fail(ctx, req, err.Error())
	}
	if req != nil && req.Method == "notifications/initialized" {
		b.openStream(ctx)
	}
}

// relay writes every message of an answer to the client.
func (b *Bridge) relay(ctx context.Context, resp *http.Response, req *jsonrpc.Request, isInit bool) error {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return nil
	case ct == "text/event-stream":
		sr := newSSEReader(resp.Body, b.MaxMessageBytes)
		for {
			ev, err := sr.next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if ev.data != nil {
				b.deliver(ctx, ev.data, isInit)
			}
		}
	case ct == "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(b.MaxMessageBytes)+1))
		if err != nil || len(data) > b.MaxMessageBytes {
			return fmt.Errorf("the proxy's answer is unreadable or over %d bytes", b.MaxMessageBytes)
		}
		if !b.deliver(ctx, data, isInit) && resp.StatusCode/100 != 2 {
			return fmt.Errorf("the proxy answered %s", resp.Status)
		}
		return nil
	case resp.StatusCode/100 != 2:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("the proxy answered %s: %s", resp.Status, bytes.TrimSpace(body))
	default:
		return fmt.Errorf("the proxy answered with %q", ct)
	}
}

// deliver writes one message (or batch) to the client; false when it is not JSON-RPC.
func (b *Bridge) deliver(ctx context.Context, data []byte, isInit bool) bool {
	raws, _, err := mcpmsg.SplitBatch(data)
	if err != nil {
		b.Logger.WarnContext(ctx, "bridge: dropped an answer that is not JSON-RPC")
		return false
	}
	ok := true
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			b.Logger.WarnContext(ctx, "bridge: dropped a message that is not JSON-RPC", slog.String("error", err.Error()))
			ok = false
			continue
		}
		if res, isResp := msg.(*jsonrpc.Response); isResp && isInit && res.Error == nil {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(res.Result, &r) == nil && r.ProtocolVersion != "" {
				b.mu.Lock()
				b.version = r.ProtocolVersion
				b.mu.Unlock()
			}
		}
		b.writeMu.Lock()
		err = b.conn.Write(ctx, msg)
		b.writeMu.Unlock()
		if err != nil {
			return false
		}
	}
	return ok
}

// fail answers the client's request with a JSON-RPC error (a notification gets none).
func (b *Bridge) fail(ctx context.Context, req *jsonrpc.Request, msg string) {
	b.Logger.WarnContext(ctx, "bridge: "+msg)
	if req == nil || !req.IsCall() {
		return
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	_ = b.conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "toolwarrant proxy --stdio: " + msg}})
}

// openStream opens the session's standalone stream once (server requests and
// notifications outside any request: tools/list_changed), if the route offers one.
func (b *Bridge) openStream(ctx context.Context) {
	b.mu.Lock()
	if b.streaming || b.session == "" {
		b.mu.Unlock()
		return
	}
	b.streaming = true
	session, version := b.session, b.version
	b.mu.Unlock()
	b.wg.Go(func() {
		hr, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL, nil)
		if err != nil {
			return
		}
		hr.Header.Set("Accept", "text/event-stream")
		hr.Header.Set("Mcp-Session-Id", session)
		if version != "" {
			hr.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := b.Client.Do(hr)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return // 405: the server offers no standalone stream
		}
		_ = b.relay(ctx, resp, nil, false)
	})
}

// endSession ends the HTTP session (DELETE), when there is one.
func (b *Bridge) endSession() {
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.URL, nil)
	if err != nil {
		return
	}
	hr.Header.Set("Mcp-Session-Id", session)
	if resp, err := b.Client.Do(hr); err == nil {
		resp.Body.Close()
	}
}

// metaVersion is the protocol version a 2026-07-28 request carries in its _meta.
func metaVersion(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v)
	return v
}
