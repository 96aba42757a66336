package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/version"
)

// Name is the MCP server's name.
const Name = "lockermcp"

// Config configures the server.
type Config struct {
	// Client talks to the daemon. Required.
	Client *lockerclient.Client
	// Logger receives one line per tool call: tool, outcome class, duration. Never
	// arguments or results. Default: discard.
	Logger *slog.Logger
	// Version is reported in the MCP handshake. Default version.Version.
	Version string
}

type server struct {
	c   *lockerclient.Client
	log *slog.Logger
}

// New returns the lockermcp MCP server with its six tools.
func New(cfg Config) (*mcp.Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("mcpserver: Config.Client is required")
	}
	s := &server{c: cfg.Client, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = version.Version
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// Tools only: no logging, prompts, resources or completions are advertised, and
		// requests for them are refused (onlyAdvertised).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range tools {
		srv.AddTool(&mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: json.RawMessage(t.schema),
			OutputSchema: json.RawMessage(t.output), Annotations: t.annotations}, s.handler(t))
	}
	srv.AddReceivingMiddleware(onlyAdvertised)
	return srv, nil
}

// unadvertised are the methods of capabilities lockermcp does not advertise. The SDK would
// answer some of them (an empty prompts/list); a server must not answer what it did not
// advertise, so they get "method not found".
var unadvertised = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
}

func onlyAdvertised(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if unadvertised[method] {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: lockermcp offers tools only (" + method + " is not advertised)"}
		}
		return next(ctx, method, req)
	}
}

// obj is a JSON object whose members keep their order.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the members in order, without HTML escaping.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := encode(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := encode(m.v)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", m.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode is compact JSON without HTML escaping: payload text reaches the model as written.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// outcome classifies a result for the log line (never its content).
type outcome string

type tool struct {
	name        string
	title       string
	description string
	schema      string
	output      string // the outputSchema: success and failure shapes alike
	params      []string
	annotations *mcp.ToolAnnotations
	run         func(s *server, ctx context.Context, req *mcp.CallToolRequest, a *args) (any, outcome, error)
}

func (s *server) handler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res, oc, err := s.call(ctx, t, req)
		s.log.InfoContext(ctx, "tool call", slog.String("tool", t.name), slog.String("outcome", string(oc)),
			slog.Duration("duration", time.Since(start)))
		return res, err
	}
}

func (s *server) call(ctx context.Context, t tool, req *mcp.CallToolRequest) (*mcp.CallToolResult, outcome, error) {
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	a, err := parseArgs(raw, t.params...)
	var result any
	var oc outcome
	if err == nil {
		result, oc, err = t.run(s, ctx, req, a)
	}
	if err != nil {
		var ae *argError
		if !errors.As(err, &ae) && !errors.Is(err, lockerclient.ErrPreflight) {
			return nil, "internal_error", err
		}
		result = obj{{"error", obj{{"status", 0}, {"kind", "invalid_arguments"}, {"detail", t.name + ": " + err.Error()}}}}
		oc = "invalid_arguments"
	}
	compact, err := encode(result)
	if err != nil {
		return nil, "internal_error", fmt.Errorf("%s: encode result: %w", t.name, err)
	}
	var text bytes.Buffer
	if err := json.Indent(&text, compact, "", "  "); err != nil {
		return nil, "internal_error", fmt.Errorf("%s: indent result: %w", t.name, err)
	}
	// Every failure (invalid arguments, a daemon error, a failed verification, a deposit
	// that did not complete) is isError, with the same structured content as text, so that a
	// generic client or model never takes it for success.
	return &mcp.CallToolResult{IsError: isFailure(result), Content: []mcp.Content{&mcp.TextContent{Text: text.String()}},
		StructuredContent: json.RawMessage(compact)}, oc, nil
}

// isFailure reports whether a result is one of the failure shapes: an object whose first
// member is "error".
func isFailure(result any) bool {
	o, ok := result.(obj)
	return ok && len(o) > 0 && o[0].k == "error"
}

// progressReporter returns a function that sends notifications/progress for the call's
// progress token, or nil when the caller gave none. A notification that cannot be sent is
// dropped: progress is advice, never a reason to fail a deposit.
func progressReporter(ctx context.Context, call *mcp.CallToolRequest) func(done, total int, message string) {
	if call == nil || call.Params == nil || call.Session == nil {
		return nil
	}
	token := call.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(done, total int, message string) {
		_ = call.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(done), Total: float64(total), Message: message})
	}
}

// errorResult turns a client error into the contract's error result.
func errorResult(padID string, err error) (any, outcome, error) {
	var de *lockerclient.DaemonError
	if errors.As(err, &de) {
		return daemonError(de), outcome(fmt.Sprintf("daemon_error_%d", de.Status)), nil
	}
	var ve *lockerclient.VerificationError
	if errors.As(err, &ve) {
		return obj{
			{"error", obj{{"status", 0}, {"kind", "verification_failed"}, {"cause", ve.Cause}, {"detail", ve.Error()}}},
			{"pad_id", padID},
			{"integrity", ve.Integrity},
		}, outcome("verification_failed_" + string(ve.Cause)), nil
	}
	return nil, "internal_error", err
}

func daemonError(de *lockerclient.DaemonError) obj {
	if de.Challenge != nil {
		return obj{{"error", obj{{"status", de.Status}, {"challenge", de.Challenge}}}}
	}
	return obj{{"error", obj{{"status", de.Status}, {"detail", de.Error()}}}}
}

// daemonResult is the result of a call whose daemon response is returned as the daemon
// sent it (a JSON object), or the contract's error result.
func daemonResult(padID string, raw json.RawMessage, err error) (any, outcome, error) {
	if err != nil {
		return errorResult(padID, err)
	}
	return raw, "ok", nil
}

func runCreate(s *server, ctx context.Context, _ *mcp.CallToolRequest, a *args) (any, outcome, error) {
	req := lockerclient.CreateRequest{TTLSeconds: a.integer("ttl_seconds", true, 0), MaxBlocks: a.integer("max_blocks", false, 32)}
	req.PaymentTxHash = paymentProof(a)
	if a.err != nil {
		return nil, "", a.err
	}
	raw, err := s.c.Create(ctx, req)
	return daemonResult("", raw, err)
}

// paymentProof is the optional payment_tx_hash argument, "" when absent or null.
func paymentProof(a *args) string {
	if p := a.optStr("payment_tx_hash"); p != nil {
		return *p
	}
	return ""
}

func runAppend(s *server, ctx context.Context, _ *mcp.CallToolRequest, a *args) (any, outcome, error) {
	padID, key, payload := a.reqStr("pad_id"), a.reqStr("write_key"), a.payload("payload")
	ct, _ := a.str("content_type", false, false, "application/json")
	if a.err != nil {
		return nil, "", a.err
	}
	raw, err := s.c.Append(ctx, padID, key, ct, payload)
	return daemonResult(padID, raw, err)
}

func runSeal(s *server, ctx context.Context, _ *mcp.CallToolRequest, a *args) (any, outcome, error) {
	padID, key := a.reqStr("pad_id"), a.reqStr("write_key")
	if a.err != nil {
		return nil, "", a.err
	}
	raw, err := s.c.Seal(ctx, padID, key)
	return daemonResult(padID, raw, err)
}

func runDeposit(s *server, ctx context.Context, call *mcp.CallToolRequest, a *args) (any, outcome, error) {
	env, arts := a.typed("envelope", kObject, "an object"), a.typed("artifacts", kArray, "a list")
	ttl, proof := a.integer("ttl_seconds", false, 3600), paymentProof(a)
	if a.err != nil {
		return nil, "", a.err
	}
	// Every block is encoded and checked before anything is created, so a bad artifact can
	// never orphan a pad.
	envBytes, err := pyDumps(env)
	if err != nil {
		return nil, "", argErrorf("envelope: %v", err)
	}
	req := lockerclient.DepositRequest{TTLSeconds: ttl, PaymentTxHash: proof,
		Blocks: []lockerclient.DepositBlock{{Payload: envBytes, ContentType: "application/json"}}}
	req.Progress = progressReporter(ctx, call)
	for i, it := range arts.items {
		p, isJSON, err := payloadBytes(it, fmt.Sprintf("artifact %d", i))
		if err != nil {
			return nil, "", err
		}
		ct := "text/plain"
		if isJSON {
			ct = "application/json"
		}
		req.Blocks = append(req.Blocks, lockerclient.DepositBlock{Payload: p, ContentType: ct})
	}
	d, err := s.c.Deposit(ctx, req)
	var de *lockerclient.DepositError
	switch {
	case errors.As(err, &de):
		return depositFailure(de), outcome("deposit_failed_" + de.Cause), nil
	case err != nil:
		return nil, "", err // ErrPreflight: nothing was sent
	}
	return obj{{"pad_id", d.PadID}, {"read_ticket", d.ReadTicket}, {"head_hash", d.HeadHash}, {"head_source", d.HeadSource},
		{"server_head_hash", d.ServerHeadHash}, {"status", d.Status}}, "ok", nil
}

func depositFailure(e *lockerclient.DepositError) obj {
	var errObj any
	if e.Daemon != nil {
		errObj = daemonError(e.Daemon)[0].v
	} else {
		errObj = obj{{"status", 0}, {"kind", e.Kind}, {"cause", e.Cause}, {"detail", e.Detail}}
	}
	out := obj{{"error", errObj}, {"pad_id", e.PadID}, {"partial", e.Partial}}
	if e.Integrity != nil {
		out = append(out, kv{"integrity", e.Integrity})
	}
	return out
}

func runManifest(s *server, ctx context.Context, _ *mcp.CallToolRequest, a *args) (any, outcome, error) {
	padID, ticket, expected := a.reqStr("pad_id"), a.optStr("ticket"), a.optStr("expected_head_hash")
	if a.err != nil {
		return nil, "", a.err
	}
	hasTicket := ticket != nil && *ticket != ""
	if expected != nil {
		if lockerclient.IsMalformedHead(*expected) {
			return errorResult(padID, lockerclient.MalformedExpectedHead(*expected))
		}
		if !hasTicket {
			// With no ticket there is no chain to walk; the daemon's manifest head is never
			// used in place of the caller's reference.
			return errorResult(padID, lockerclient.TicketRequired(*expected))
		}
	}
	var m *lockerclient.Manifest
	var in lockerclient.Integrity
	if hasTicket {
		ch, err := s.c.Read(ctx, padID, *ticket, lockerclient.ReadOptions{ExpectedHead: expected})
		if err != nil {
			return errorResult(padID, err)
		}
		m, in = ch.Manifest, ch.Integrity
		ch.Release() // the manifest does not share the payloads' memory
	} else {
		var err error
		if m, err = s.c.Manifest(ctx, padID); err != nil {
			return errorResult(padID, err)
		}
		in = lockerclient.NotChecked()
	}
	out := make(obj, 0, len(m.Fields)+2)
	for _, f := range m.Fields {
		out = append(out, kv{f.Key, f.Value})
	}
	var head any
	if v := m.Value("head_hash"); v != nil {
		head = v
	}
	out = append(out, kv{"integrity", in}, kv{"head_provenance", lockerclient.NewHeadProvenance(head, in)})
	return out, outcome("ok_" + string(in.Verdict)), nil
}

// blockOut is a verified block as returned: content_type is deliberately absent (the hash
// does not cover it and it is a processing instruction), payload_utf8 is this client's
// strict decode of the verified bytes.
type blockOut struct {
	Seq               int               `json:"seq"`
	PrevHash          lockerclient.Hash `json:"prev_hash"`
	CurrHash          lockerclient.Hash `json:"curr_hash"`
	PayloadB64        string            `json:"payload_b64"`
	PayloadUTF8       *string           `json:"payload_utf8"`
	CreatedAt         *int64            `json:"created_at"`
	PayloadUTF8Source string            `json:"payload_utf8_source"`
}

func runReadBlocks(s *server, ctx context.Context, _ *mcp.CallToolRequest, a *args) (any, outcome, error) {
	padID, ticket := a.reqStr("pad_id"), a.reqStr("ticket")
	from, to := a.integer("from_block", false, 0), a.integer("to_block", false, 0)
	expected := a.optStr("expected_head_hash")
	if a.err != nil {
		return nil, "", a.err
	}
	ch, err := s.c.Read(ctx, padID, ticket, lockerclient.ReadOptions{ExpectedHead: expected})
	if err != nil {
		return errorResult(padID, err)
	}
	defer ch.Release() // every block returned is copied out (base64, text)
	// The whole chain was verified; the slice is cut locally.
	total := len(ch.Blocks)
	blocks := []blockOut{}
	outTo := 0
	if total > 0 {
		f := max(0, from)
		outTo = min(to, total-1)
		for i := f; i <= outTo; i++ {
			b := &ch.Blocks[i]
			bo := blockOut{Seq: b.Seq, PrevHash: b.PrevHash, CurrHash: b.CurrHash,
				PayloadB64: base64.StdEncoding.EncodeToString(b.Payload), PayloadUTF8Source: "client-derived"}
			if b.HasCreatedAt {
				bo.CreatedAt = &b.CreatedAt
			}
			if text, ok := b.Text(); ok {
				bo.PayloadUTF8 = &text
			}
			blocks = append(blocks, bo)
		}
	}
	return obj{{"pad_id", padID}, {"from", from}, {"to", outTo}, {"count", len(blocks)}, {"total_blocks", total},
		{"integrity", ch.Integrity}, {"blocks", blocks}}, outcome("ok_" + string(ch.Integrity.Verdict)), nil
}
