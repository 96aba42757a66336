package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/setting"
)

// Payments decides pay-per-pad creates (LOCKER_MODE=txid). A nil Payments is open mode.
type Payments interface {
	// Admit runs the payment steps of POST /v1/pads for the X-Payment-Proof value (trimmed,
	// possibly empty). It returns the receipt to commit with the pad, or why not: a
	// *payment.RequiredError (the challenge), payment.ErrInvalidProof, locker.ErrRedeemed,
	// payment.ErrUnconfigured, payment.ErrUnreachable, a *payment.Rejection, or a store
	// failure as locker.Unavailable; errors.go maps each to the wire's answer. It never
	// returns raw provider errors.
	Admit(ctx context.Context, proof string) (*locker.Receipt, error)
	// Probe reports whether the payment RPC answers, for /health; it must be fast.
	Probe(ctx context.Context) bool
	// Network names the payment network for /health ("base").
	Network() string
}

// Config configures the handler.
type Config struct {
	// Service applies the pad rules. Required.
	Service *locker.Service
	// Payments enables txid mode when non-nil.
	Payments Payments
	// Version is reported by /health. Default "dev".
	Version string
	// Logger receives one line per request (method, route, status, duration, request id;
	// never the URL or headers). Default: discard.
	Logger *slog.Logger
	// PadCacheBytes bounds the cache of sealed pads' binary /blocks form (padwire), keyed
	// by pad and head. Default DefaultPadCacheBytes; negative disables it.
	PadCacheBytes int
	// MaxWireBytes bounds a binary /blocks answer; a read whose answer would be larger is
	// refused with 413 (a client then reads JSON pages). Default DefaultMaxWireBytes.
	MaxWireBytes int
}

type api struct {
	svc     *locker.Service
	pay     Payments
	version string
	log     *slog.Logger
	pads    *padCache
	maxWire int
}

// New returns the Padlock HTTP handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("httpapi: Config.Service is required")
	}
	if cfg.PadCacheBytes == 0 {
		cfg.PadCacheBytes = DefaultPadCacheBytes
	}
	a := &api{svc: cfg.Service, pay: cfg.Payments, version: cfg.Version, log: cfg.Logger, pads: newPadCache(cfg.PadCacheBytes),
		maxWire: setting.Positive(cfg.MaxWireBytes, DefaultMaxWireBytes)}
	if a.version == "" {
		a.version = "dev"
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

type ctxKey struct{}

type reqInfo struct {
	id    string
	route string
}

func requestID(r *http.Request) string {
	if ri, ok := r.Context().Value(ctxKey{}).(*reqInfo); ok {
		return ri.id
	}
	return ""
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP routes a request. The route table is small enough that a hand-written matcher
// gives the contract's exact 404/405 bodies without a router dependency.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri := &reqInfo{id: newRequestID()}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))
	sw := &statusWriter{ResponseWriter: w}
	sw.Header().Set("X-Request-Id", ri.id)
	a.route(sw, r, ri)
	a.log.InfoContext(r.Context(), "request", slog.String("request_id", ri.id), slog.String("method", r.Method),
		slog.String("route", ri.route), slog.Int("status", sw.status), slog.Duration("duration", time.Since(start)))
}

func (a *api) route(w http.ResponseWriter, r *http.Request, ri *reqInfo) {
	path := r.URL.Path
	var handler func(http.ResponseWriter, *http.Request, string)
	var methods []string
	padID := ""
	switch {
	case path == "/health":
		ri.route, methods = "/health", []string{http.MethodGet, http.MethodHead}
		handler = func(w http.ResponseWriter, r *http.Request, _ string) { a.health(w, r) }
	case path == "/v1/pads":
		ri.route, methods = "/v1/pads", []string{http.MethodPost}
		handler = func(w http.ResponseWriter, r *http.Request, _ string) { a.create(w, r) }
	case strings.HasPrefix(path, "/v1/pads/"):
		rest := path[len("/v1/pads/"):]
		slash := strings.IndexByte(rest, '/')
		if slash <= 0 {
			break
		}
		padID = rest[:slash]
		switch action := rest[slash+1:]; action {
		case "append":
			methods, handler = []string{http.MethodPost}, a.append
		case "seal":
			methods, handler = []string{http.MethodPost}, a.seal
		case "tickets":
			methods, handler = []string{http.MethodPost}, a.tickets
		case "manifest":
			methods, handler = []string{http.MethodGet}, a.manifest
		case "blocks":
			methods, handler = []string{http.MethodGet}, a.blocks
		}
		if handler != nil {
			ri.route = "/v1/pads/{pad_id}/" + rest[slash+1:]
		}
	}
	if handler == nil {
		ri.route = "unknown"
		writeJSON(w, http.StatusNotFound, plainError{Detail: "Not Found"})
		return
	}
	for _, m := range methods {
		if r.Method == m {
			handler(w, r, padID)
			return
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeJSON(w, http.StatusMethodNotAllowed, plainError{Detail: "Method Not Allowed"})
}

// writeJSON writes v as compact JSON, without HTML escaping and with raw UTF-8, as the
// peer's framework does.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONFor(w, nil, status, v)
}

// encodeJSON is v as every JSON answer carries it: HTML characters unescaped, no newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSONFor is writeJSON that sends headers only when r is a HEAD request.
func writeJSONFor(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		http.Error(w, `{"detail":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r == nil || r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// writeKey extracts the write key the way the peer's HTTPBearer does: scheme compared
// case-insensitively, the credential is everything after the first space.
func writeKey(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(auth, " ")
	if !ok || scheme == "" || cred == "" || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	return cred, true
}

// readTicket takes ?ticket= first (q is the parsed query), else an exact-case "Bearer "
// Authorization header.
func readTicket(r *http.Request, q url.Values) string {
	if t := q.Get("ticket"); t != "" {
		return t
	}
	if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		return strings.TrimSpace(auth[len("Bearer "):])
	}
	return ""
}

type healthBody struct {
	Status   string         `json:"status"`
	Version  string         `json:"version"`
	Database healthDatabase `json:"database"`
	RPC      healthRPC      `json:"rpc"`
	Pads     healthPads     `json:"pads"`
}

type healthDatabase struct {
	Writable bool `json:"writable"`
	WALMode  bool `json:"wal_mode"`
}

// healthRPC is the payment RPC. In open mode no payment network is configured and nothing
// is probed: both members are null (the contract keeps the keys). In txid mode network
// names the chain and reachable is the probe's answer, null when the store is unavailable.
type healthRPC struct {
	Network   *string `json:"network"`
	Reachable *bool   `json:"reachable"`
}

type healthPads struct {
	Total    int `json:"total"`
	Unsealed int `json:"unsealed"`
	Sealed   int `json:"sealed"`
}

func (a *api) health(w http.ResponseWriter, r *http.Request) {
	h, err := a.svc.Health(r.Context())
	var rpc healthRPC
	if a.pay != nil {
		network := a.pay.Network()
		rpc.Network = &network
	}
	body := healthBody{Status: "ok", Version: a.version, RPC: rpc,
		Database: healthDatabase{Writable: h.Writable, WALMode: h.WALMode},
		Pads:     healthPads{Total: h.Pads.Total, Unsealed: h.Pads.Unsealed, Sealed: h.Pads.Sealed}}
	if err != nil || !h.Writable {
		if err != nil {
			a.log.WarnContext(r.Context(), "health: store unreadable", slog.String("request_id", requestID(r)), slog.String("error", err.Error()))
		}
		body.Status = "unavailable"
		body.Database.Writable = false
		writeJSONFor(w, r, http.StatusServiceUnavailable, body)
		return
	}
	if a.pay != nil {
		reachable := a.pay.Probe(r.Context())
		body.RPC.Reachable = &reachable
	}
	writeJSONFor(w, r, http.StatusOK, body)
}

type createdBody struct {
	PadID      string `json:"pad_id"`
	WriteKey   string `json:"write_key"`
	ReadTicket string `json:"read_ticket"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	obj, ok := a.readObject(w, r)
	if !ok {
		return
	}
	req := locker.DefaultCreateRequest()
	var okTTL, okMax bool
	req.TTLSeconds, okTTL = intField(obj, "ttl_seconds", req.TTLSeconds)
	req.MaxBlocks, okMax = intField(obj, "max_blocks", req.MaxBlocks)
	if !okTTL || !okMax || req.Validate() != nil {
		a.writeError(w, r, locker.ErrInvalidBody)
		return
	}
	var receipt *locker.Receipt
	if a.pay != nil {
		var err error
		if receipt, err = a.pay.Admit(r.Context(), strings.TrimSpace(r.Header.Get("X-Payment-Proof"))); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	c, err := a.svc.Create(r.Context(), req, receipt)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, createdBody{PadID: c.PadID, WriteKey: c.WriteKey, ReadTicket: c.ReadTicket})
}

// readObject reads a small JSON body (create, tickets) under its cap and parses it as one
// object, answering 413 or 422 itself when it cannot.
func (a *api) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, bool) {
	body, err := readCapped(r, locker.MaxJSONBodyBytes)
	if err != nil {
		a.bodyError(w, r, err, locker.ErrBodyTooLarge)
		return nil, false
	}
	obj, ok := jsonObject(body)
	if !ok {
		a.writeError(w, r, locker.ErrInvalidBody)
	}
	return obj, ok
}

// bodyError answers a failed capped read.
func (a *api) bodyError(w http.ResponseWriter, r *http.Request, err error, tooLarge *locker.Error) {
	if errors.Is(err, errTooLarge) {
		// The rest of the body is never read: close the connection rather than drain it.
		w.Header().Set("Connection", "close")
		a.writeError(w, r, tooLarge)
		return
	}
	a.writeError(w, r, err)
}

type ackBody struct {
	PadID    string `json:"pad_id"`
	Seq      int    `json:"seq"`
	CurrHash string `json:"curr_hash"`
}

func (a *api) append(w http.ResponseWriter, r *http.Request, padID string) {
	payload, err := readCapped(r, locker.MaxBlockBytes)
	if err != nil {
		a.bodyError(w, r, err, locker.ErrBlockTooLarge)
		return
	}
	ct := r.Header.Get("Content-Type")
	if _, present := r.Header["Content-Type"]; !present {
		ct = "application/json"
	}
	key, hasKey := writeKey(r)
	ack, err := a.svc.Append(r.Context(), padID, key, hasKey, ct, payload)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ackBody{PadID: ack.PadID, Seq: ack.Seq, CurrHash: ack.CurrHash})
}

type sealBody struct {
	PadID    string `json:"pad_id"`
	State    string `json:"state"`
	SealedAt int64  `json:"sealed_at"`
	HeadHash string `json:"head_hash"`
}

// seal never reads the request body.
func (a *api) seal(w http.ResponseWriter, r *http.Request, padID string) {
	key, hasKey := writeKey(r)
	s, err := a.svc.Seal(r.Context(), padID, key, hasKey)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sealBody{PadID: s.PadID, State: string(s.State), SealedAt: s.SealedAt, HeadHash: s.HeadHash})
}

type ticketBody struct {
	PadID  string `json:"pad_id"`
	Ticket string `json:"ticket"`
	Type   string `json:"type"`
}

func (a *api) tickets(w http.ResponseWriter, r *http.Request, padID string) {
	obj, ok := a.readObject(w, r)
	if !ok {
		return
	}
	typ := locker.TicketReadUnlimited
	if raw, present := obj["type"]; present {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			a.writeError(w, r, locker.ErrInvalidBody)
			return
		}
		var err error
		if typ, err = locker.ParseTicketType(v); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	key, hasKey := writeKey(r)
	m, err := a.svc.MintTicket(r.Context(), padID, key, hasKey, typ)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ticketBody{PadID: m.PadID, Ticket: m.Ticket, Type: string(m.Type)})
}

type manifestBody struct {
	PadID      string `json:"pad_id"`
	State      string `json:"state"`
	BlockCount int    `json:"block_count"`
	TotalBytes int    `json:"total_bytes"`
	SealedAt   *int64 `json:"sealed_at"`
	HeadHash   string `json:"head_hash"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at"`
}

func (a *api) manifest(w http.ResponseWriter, r *http.Request, padID string) {
	p, err := a.svc.Manifest(r.Context(), padID)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newManifest(p))
}

// newManifest is p's GET /manifest body (also carried in the binary form's header).
func newManifest(p locker.Pad) manifestBody {
	m := manifestBody{PadID: p.ID, State: string(p.State), BlockCount: p.BlockCount, TotalBytes: p.TotalBytes,
		HeadHash: p.HeadHash, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}
	if p.SealedAt != 0 {
		m.SealedAt = &p.SealedAt
	}
	return m
}

type blockBody struct {
	Seq         int     `json:"seq"`
	PrevHash    string  `json:"prev_hash"`
	CurrHash    string  `json:"curr_hash"`
	ContentType string  `json:"content_type"`
	PayloadB64  string  `json:"payload_b64"`
	PayloadUTF8 *string `json:"payload_utf8"`
	CreatedAt   int64   `json:"created_at"`
}

type blocksBody struct {
	PadID       string      `json:"pad_id"`
	From        int         `json:"from"`
	To          int         `json:"to"`
	Count       int         `json:"count"`
	TotalBlocks int         `json:"total_blocks"`
	Blocks      []blockBody `json:"blocks"`
}

// validationItem is one entry of error shape 3, the framework's query validation list.
type validationItem struct {
	Type  string   `json:"type"`
	Loc   []string `json:"loc"`
	Msg   string   `json:"msg"`
	Input string   `json:"input"`
}

// queryInt parses an optional integer query parameter as the peer's framework does: the
// last value wins, surrounding whitespace is allowed, out-of-range values saturate.
func queryInt(q url.Values, name string) (n int, present bool, bad *validationItem) {
	vals, ok := q[name]
	if !ok || len(vals) == 0 {
		return 0, false, nil
	}
	raw := vals[len(vals)-1]
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || !errors.Is(ne.Err, strconv.ErrRange) {
			return 0, true, &validationItem{Type: "int_parsing", Loc: []string{"query", name},
				Msg: "Input should be a valid integer, unable to parse string as an integer", Input: raw}
		}
	}
	switch {
	case v > math.MaxInt32:
		v = math.MaxInt32
	case v < math.MinInt32:
		v = math.MinInt32
	}
	return int(v), true, nil
}

func (a *api) blocks(w http.ResponseWriter, r *http.Request, padID string) {
	q := r.URL.Query() // parsed once: from, to and the ticket
	from, _, badFrom := queryInt(q, "from")
	to, hasTo, badTo := queryInt(q, "to")
	if badFrom != nil || badTo != nil {
		var items []validationItem
		for _, b := range []*validationItem{badFrom, badTo} {
			if b != nil {
				items = append(items, *b)
			}
		}
		writeJSON(w, http.StatusUnprocessableEntity, struct {
			Detail []validationItem `json:"detail"`
		}{items})
		return
	}
	if acceptsPadwire(r) {
		a.blocksWire(w, r, padID, readTicket(r, q), from, to, hasTo)
		return
	}
	s, err := a.svc.ReadBlocks(r.Context(), padID, readTicket(r, q), from, to, hasTo)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeBlocksJSON(w, s)
}

// writeBlocksJSON writes a /blocks answer in the contract's JSON form.
func (a *api) writeBlocksJSON(w http.ResponseWriter, s locker.Slice) {
	bp := blockBufs.Get().(*[]byte)
	body := appendBlocksBody((*bp)[:0], s)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	if cap(body) <= 1<<20 {
		*bp = body
		blockBufs.Put(bp)
	}
}

// blockBufs recycles /blocks response buffers (a full slice is about 150 KiB of JSON).
var blockBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}
