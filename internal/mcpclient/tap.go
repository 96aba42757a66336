package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaClientCapabilities is the _meta key that carries the client's capabilities on every
// request of MCP 2026-07-28 (and on server/discover).
const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// listMethods are the paginated list requests whose raw results the tap keeps.
var listMethods = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true}

// tap sits between the SDK and the transport. From the messages the session reads it keeps
// the raw result of every list call and of the handshake, so that definitions are kept
// exactly as served rather than as the SDK decodes them. On the messages the session writes
// it replaces the declared capabilities with the profile's exact JSON (the SDK's typed
// capabilities cannot express every capability a client declares), and it bounds the wait
// for an answer to the server/discover probe.
type tap struct {
	capabilities json.RawMessage // sent in place of the SDK's; nil: leave as is
	probeTimeout time.Duration

	mu              sync.Mutex
	pending         map[jsonrpc.ID]string // request ID → method, for requests we watch
	results         map[string][]json.RawMessage
	handshake       json.RawMessage // the raw result of initialize or server/discover
	protocolVersion string

	probeID     jsonrpc.ID
	probeSent   bool
	probeDone   bool // answered, or given up on
	probeGaveUp bool // given up on: no answer within probeTimeout
	probeLost   bool // the connection ended while the probe was unanswered
	injected    chan jsonrpc.Message
	httpErr     *httpError
}

func newTap(capabilities json.RawMessage, probeTimeout time.Duration) *tap {
	return &tap{capabilities: capabilities, probeTimeout: probeTimeout, pending: map[jsonrpc.ID]string{},
		results: map[string][]json.RawMessage{}, injected: make(chan jsonrpc.Message, 1)}
}

// rewrite returns msg with the profile's capabilities in place of the SDK's.
func (t *tap) rewrite(req *jsonrpc.Request) *jsonrpc.Request {
	if t.capabilities == nil || len(req.Params) == 0 {
		return req
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return req
	}
	changed := false
	if req.Method == "initialize" {
		params["capabilities"] = t.capabilities
		changed = true
	}
	if rawMeta, ok := params["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(rawMeta, &meta) == nil && meta != nil {
			if _, ok := meta[metaClientCapabilities]; ok {
				meta[metaClientCapabilities] = t.capabilities
				if b, err := json.Marshal(meta); err == nil {
					params["_meta"] = b
					changed = true
				}
			}
		}
	}
	if !changed {
		return req
	}
	b, err := json.Marshal(params)
	if err != nil {
		return req
	}
	out := *req
	out.Params = b
	return &out
}

func (t *tap) wrote(req *jsonrpc.Request) {
	if !req.ID.IsValid() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case listMethods[req.Method], req.Method == "initialize":
		t.pending[req.ID] = req.Method
	case req.Method == "server/discover":
		t.pending[req.ID] = req.Method
		t.probeID, t.probeSent, t.probeDone, t.probeGaveUp = req.ID, true, false, false
		if t.probeTimeout > 0 {
			id := req.ID
			time.AfterFunc(t.probeTimeout, func() { t.giveUpProbe(id) })
		}
	}
}

// giveUpProbe answers an unanswered server/discover probe on the server's behalf with
// "method not found", which makes the SDK fall back to initialize on the same connection,
// as the specification's stdio backward-compatibility rule says a client does when a server
// does not answer in time.
func (t *tap) giveUpProbe(id jsonrpc.ID) {
	t.mu.Lock()
	if t.probeID != id || t.probeDone {
		t.mu.Unlock()
		return
	}
	t.probeDone, t.probeGaveUp = true, true
	t.mu.Unlock()
	resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "agentgate: no answer to server/discover; falling back to initialize"}}
	select {
	case t.injected <- resp:
	default:
	}
}

// read records msg and reports whether the session should see it (a late answer to a
// probe given up on is dropped: the session already moved on).
func (t *tap) read(msg jsonrpc.Message) bool {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	method, watched := t.pending[resp.ID]
	if !watched {
		return true
	}
	delete(t.pending, resp.ID)
	switch method {
	case "server/discover":
		if t.probeID == resp.ID {
			if t.probeGaveUp {
				return false
			}
			t.probeDone = true
		}
		fallthrough
	case "initialize":
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
			t.handshake = bytes.Clone(resp.Result)
			if r.ProtocolVersion != "" {
				t.protocolVersion = r.ProtocolVersion
			}
		}
	default:
		if resp.Error == nil {
			t.results[method] = append(t.results[method], bytes.Clone(resp.Result))
		}
	}
	return true
}

// closed notes that the connection ended; a probe unanswered then was lost with it.
func (t *tap) closed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.probeSent && !t.probeDone {
		t.probeLost = true
	}
}

func (t *tap) take(method string) (json.RawMessage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.results[method]
	if len(q) == 0 {
		return nil, false
	}
	t.results[method] = q[1:]
	return q[0], true
}

func (t *tap) version() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.protocolVersion
}

func (t *tap) handshakeResult() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handshake
}

// probe reports what became of the server/discover probe.
func (t *tap) probe() (sent, timedOut, lost bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.probeSent, t.probeGaveUp, t.probeLost
}

func (t *tap) setHTTPError(e *httpError) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.httpErr = e
}

func (t *tap) lastHTTPError() *httpError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.httpErr
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
	pumpCtx, cancel := context.WithCancel(context.Background())
	return &tapConn{Connection: c, tap: t.tap, pumpCtx: pumpCtx, cancel: cancel, in: make(chan readResult, 1)}, nil
}

// tapConn reads the inner connection from one goroutine (started by the first Read), so that
// a Read can also return a message the tap injects.
type tapConn struct {
	mcp.Connection
	tap     *tap
	pumpCtx context.Context
	cancel  context.CancelFunc
	once    sync.Once
	in      chan readResult
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func (c *tapConn) pump() {
	for {
		msg, err := c.Connection.Read(c.pumpCtx)
		if err != nil {
			c.tap.closed()
		}
		select {
		case c.in <- readResult{msg, err}:
		case <-c.pumpCtx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.once.Do(func() { go c.pump() })
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.pumpCtx.Done():
			return nil, io.EOF // closed
		case msg := <-c.tap.injected:
			return msg, nil
		case r := <-c.in:
			if r.err != nil {
				return nil, r.err
			}
			if c.tap.read(r.msg) {
				return r.msg, nil
			}
		}
	}
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		req = c.tap.rewrite(req)
		c.tap.wrote(req)
		msg = req
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Close() error {
	c.cancel()
	return c.Connection.Close()
}
