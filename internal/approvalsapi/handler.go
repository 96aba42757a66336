package approvalsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Caller is who sent a request, as the authorizer in front of the API established it.
type Caller struct {
	// Principal is the caller's IAM principal ARN, whose SigV4 signature API Gateway
	// verified; "" when the request carries none (every route then answers 403).
	Principal string
	// RequestID is API Gateway's request ID: recorded as a decision's signature
	// (iamattest.SignaturePrefix), quoted in internal errors.
	RequestID string
}

// Config configures New.
type Config struct {
	// Service is the toolwarrant service the API reads and decides through. Required.
	Service *warrant.Service
	// Caller returns the caller of a request (awsapp reads API Gateway's request
	// context). Default: nobody, so every route answers 403.
	Caller func(*http.Request) Caller
	// CrawlRole is the crawl function's role ARN: it and its sessions can never decide.
	CrawlRole string
	// HeaderSecrets are the ARN patterns of the secrets the crawl role may read
	// (CRAWL_HEADER_SECRETS): a server added through the API may name only those for its
	// headers. Default none: a server with headers is refused.
	HeaderSecrets []string
	// Logger receives internal errors and one line per recorded decision. Default:
	// discard.
	Logger *slog.Logger
}

// Handler is the approvals API (the routes are in the package documentation). The
// decider is the caller's IAM principal; a request without one is refused. A decision is
// recorded by warrant.Service.DecideAs with iamattest.Attester: the exact digest of a
// recorded version, over the audit head the caller read (refused if the log moved),
// never by the crawl role nor by an identity that crawled that digest, suspicious text
// only with acceptSuspicious. Its audit entry is signed by the service's log key and
// attests the principal.
type Handler struct {
	svc       *warrant.Service
	caller    func(*http.Request) Caller
	crawlRole string
	secrets   []string
	log       *slog.Logger
	mux       *http.ServeMux
}

// New returns the approvals API handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("approvalsapi: Config.Service is required")
	}
	h := &Handler{svc: cfg.Service, caller: cfg.Caller, crawlRole: cfg.CrawlRole, secrets: cfg.HeaderSecrets, log: cfg.Logger, mux: http.NewServeMux()}
	if h.caller == nil {
		h.caller = func(*http.Request) Caller { return Caller{} }
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.mux.HandleFunc("GET /v1/proposals", func(rw http.ResponseWriter, r *http.Request) { h.tools(rw, r, "proposals", true) })
	h.mux.HandleFunc("GET /v1/tools", func(rw http.ResponseWriter, r *http.Request) { h.tools(rw, r, "tools", false) })
	h.mux.HandleFunc("GET /v1/audit", h.audit)
	h.mux.HandleFunc("GET /v1/servers/{server}/tools/{tool}/diff", h.diff)
	h.mux.HandleFunc("GET /v1/servers/{server}/tools/{tool}/versions/{version}", h.version)
	h.mux.HandleFunc("POST /v1/servers/{server}/tools/{tool}/decisions", h.decide)
	h.mux.HandleFunc("POST /v1/servers", h.addServer)
	h.mux.HandleFunc("GET /v1/servers/{server}/bulk", h.bulkCandidates)
	h.mux.HandleFunc("POST /v1/servers/{server}/bulk", h.bulkApprove)
	h.mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		h.writeErr(rw, r, fmt.Errorf("%w: no route %s %s", errRoute, r.Method, r.URL.Path))
	})
	return h, nil
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(rw, r) }

// principal returns the caller's principal, or ErrForbidden when the request has none.
func (h *Handler) principal(r *http.Request) (Caller, error) {
	c := h.caller(r)
	if c.Principal == "" {
		return c, fmt.Errorf("%w: no IAM principal in the request context: the route must use AWS_IAM authorization", ErrForbidden)
	}
	return c, nil
}

// tools answers the tool rows (only the pending ones for /v1/proposals) under key, with
// the audit head read before them: a decision over that head is refused if anything was
// recorded since.
func (h *Handler) tools(rw http.ResponseWriter, r *http.Request, key string, pending bool) {
	head, ok := h.readHead(rw, r)
	if !ok {
		return
	}
	rows, err := h.svc.List(r.Context(), pending)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	if rows == nil {
		rows = []warrant.ToolRow{}
	}
	writeJSON(rw, http.StatusOK, map[string]any{"auditHead": head, key: rows})
}

// readHead refuses a caller without an IAM principal and reads the audit head a read
// route answers with (the head a decision is then made over). On failure it has answered.
func (h *Handler) readHead(rw http.ResponseWriter, r *http.Request) (warrant.AuditHead, bool) {
	if _, err := h.principal(r); err != nil {
		h.writeErr(rw, r, err)
		return warrant.AuditHead{}, false
	}
	head, err := h.svc.Catalog().AuditHead(r.Context())
	if err != nil {
		h.writeErr(rw, r, err)
		return warrant.AuditHead{}, false
	}
	return head, true
}

// audit answers the entries with seq > after as export lines (audit.WriteExport, what
// `toolwarrant audit export` writes), for offline `audit verify --export`.
func (h *Handler) audit(rw http.ResponseWriter, r *http.Request) {
	if _, err := h.principal(r); err != nil {
		h.writeErr(rw, r, err)
		return
	}
	q := r.URL.Query()
	after, limit := int64(0), MaxAuditPage
	var err error
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			h.writeErr(rw, r, fmt.Errorf("%w: after=%q: give the seq of the last entry you have (0 for the start)", warrant.ErrInvalid, v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxAuditPage {
			h.writeErr(rw, r, fmt.Errorf("%w: limit=%q: give 1..%d", warrant.ErrInvalid, v, MaxAuditPage))
			return
		}
	}
	recs, err := h.svc.Catalog().AuditRecords(r.Context(), after, limit)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	var buf bytes.Buffer
	more := len(recs) == limit
	for i := range recs {
		n := buf.Len()
		if err := audit.WriteExport(&buf, recs[i:i+1]); err != nil {
			h.writeErr(rw, r, err)
			return
		}
		if i > 0 && buf.Len() > auditPageBytes {
			buf.Truncate(n)
			more = true
			break
		}
	}
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.Header().Set(AuditMoreHeader, strconv.FormatBool(more))
	rw.WriteHeader(http.StatusOK)
	_, _ = rw.Write(buf.Bytes())
}

func (h *Handler) diff(rw http.ResponseWriter, r *http.Request) {
	head, ok := h.readHead(rw, r)
	if !ok {
		return
	}
	ctx := r.Context()
	dv, err := h.svc.Diff(ctx, r.PathValue("server"), r.PathValue("tool"), r.URL.Query().Get("from"), r.URL.Query().Get("to"))
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	out := map[string]any{"auditHead": head, "server": dv.Server, "tool": dv.Tool, "from": dv.From, "to": dv.To,
		"grade": dv.Drift.Grade, "rules": dv.Drift.Rules(), "drift": dv.Drift, "toInspection": dv.ToInspection, "fromInspection": dv.FromInspection,
		"toDefinition": json.RawMessage(dv.ToVersion.Canonical)}
	if dv.From != "" {
		out["fromDefinition"] = json.RawMessage(dv.FromVersion.Canonical)
	}
	if _, err := encodeAnswer(out); errors.Is(err, errTooLarge) {
		// Both definitions do not fit one Lambda response: answer the grading and let the
		// client read each version on its own (GET …/versions/{digest}).
		delete(out, "toDefinition")
		delete(out, "fromDefinition")
		out["definitionsOmitted"] = true
	}
	writeJSON(rw, http.StatusOK, out)
}

func (h *Handler) version(rw http.ResponseWriter, r *http.Request) {
	head, ok := h.readHead(rw, r)
	if !ok {
		return
	}
	ctx := r.Context()
	want := r.PathValue("version")
	if want == "current" {
		want = ""
	}
	v, err := h.svc.Show(ctx, r.PathValue("server"), r.PathValue("tool"), want)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	out := VersionAnswer{AuditHead: head, VersionDoc: v.Doc()}
	writeJSON(rw, http.StatusOK, out)
}

// decide decodes a decision and hands it to the decision use case with the caller's
// principal as the attester.
func (h *Handler) decide(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := h.principal(r)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	server, tool := r.PathValue("server"), r.PathValue("tool")
	var req DecisionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.writeErr(rw, r, fmt.Errorf("%w: the body is not a decision: %v", warrant.ErrInvalid, err))
		return
	}
	switch {
	case req.Decision != warrant.DecisionApproved && req.Decision != warrant.DecisionRejected && req.Decision != warrant.DecisionRolledBack:
		err = fmt.Errorf("%w: decision %q: use approved, rejected or rolled_back", warrant.ErrInvalid, req.Decision)
	case !req.Digest.Valid():
		err = fmt.Errorf("%w: digest %q: give the exact digest (sha256: and all 64 hex digits)", warrant.ErrInvalid, req.Digest)
	case req.AuditHead == nil:
		err = fmt.Errorf("%w: auditHead is required: the head you read, from /v1/proposals or the diff", warrant.ErrInvalid)
	}
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	res, err := h.svc.DecideAs(ctx, warrant.DecisionRequest{Server: server, Tool: tool, Digest: req.Digest, Kind: req.Decision,
		AcceptSuspicious: req.AcceptSuspicious, Note: req.Note, ReadHead: req.AuditHead},
		iamattest.Attester{Principal: c.Principal, RequestID: c.RequestID, CrawlRole: h.crawlRole})
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	if res.Unchanged {
		writeJSON(rw, http.StatusOK, map[string]any{"server": server, "tool": tool, "digest": req.Digest, "decision": req.Decision, "unchanged": true})
		return
	}
	who, head := res.Decision.Actor, res.AuditHead
	h.log.InfoContext(ctx, "decision recorded", slog.String("server", server), slog.String("tool", tool), slog.String("digest", string(req.Digest)),
		slog.String("decision", string(req.Decision)), slog.String("by", who), slog.Int64("audit_seq", head.Seq))
	writeJSON(rw, http.StatusCreated, map[string]any{"server": server, "tool": tool, "digest": req.Digest, "decision": req.Decision, "by": who,
		"auditHead": head, "auditEntry": strconv.FormatInt(head.Seq, 10)})
}

// bulkCandidates answers what one bulk approval of the server may name, and what it
// may not (BulkAnswer), over the audit head read first.
func (h *Handler) bulkCandidates(rw http.ResponseWriter, r *http.Request) {
	if _, err := h.principal(r); err != nil {
		h.writeErr(rw, r, err)
		return
	}
	server := r.PathValue("server")
	head, items, held, err := h.svc.BulkCandidates(r.Context(), server)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	a := BulkAnswer{AuditHead: head, Server: server, Items: items, Held: Held(held)}
	if a.Items == nil {
		a.Items = []warrant.BulkItem{}
	}
	writeJSON(rw, http.StatusOK, a)
}

// bulkApprove records one bulk approval (warrant.Service.ApproveAllAs) as the caller's
// principal: every item must be a routine first-sight tool at its pending digest, the
// head the caller read must still be the head, and one statement attests them all.
func (h *Handler) bulkApprove(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := h.principal(r)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	server := r.PathValue("server")
	var req BulkRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.writeErr(rw, r, fmt.Errorf("%w: the body is not a bulk approval: %v", warrant.ErrInvalid, err))
		return
	}
	if req.AuditHead == nil {
		h.writeErr(rw, r, fmt.Errorf("%w: auditHead is required: the head you read, from GET /v1/servers/%s/bulk", warrant.ErrInvalid, server))
		return
	}
	res, err := h.svc.ApproveAllAs(ctx, warrant.BulkRequest{Server: server, Items: req.Items, Note: req.Note, ReadHead: req.AuditHead},
		iamattest.Attester{Principal: c.Principal, RequestID: c.RequestID, CrawlRole: h.crawlRole})
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	who := res.Decisions[0].Actor
	h.log.InfoContext(ctx, "bulk approval recorded", slog.String("server", server), slog.Int("tools", len(res.Decisions)),
		slog.String("by", who), slog.Int64("audit_seq", res.AuditHead.Seq))
	writeJSON(rw, http.StatusCreated, BulkApproval{Server: server, Approved: req.Items, By: who, AuditHead: res.AuditHead})
}

// ServerRequest is the body of POST /v1/servers: a server for the crawl to list, its
// headers' values read from the Secrets Manager secrets or SSM parameters they name (which
// CrawlHeaderSecretArns must list). A server on a private address cannot be added here:
// the crawl function refuses loopback, private and link-local addresses for it.
type ServerRequest struct {
	Name    string              `json:"name"`
	URL     string              `json:"url"`
	Headers []warrant.HeaderRef `json:"headers,omitempty"`
}

// ServerAnswer is the answer of POST /v1/servers: Added is false when an identical server
// was already in the catalog (200; 201 when added).
type ServerAnswer struct {
	Server string `json:"server"`
	Added  bool   `json:"added"`
	By     string `json:"by,omitempty"`
}

// addServer adds a server to the catalog as the caller's principal (its audit entry's
// actor); the next scheduled crawl queues it. The crawl role cannot add one.
func (h *Handler) addServer(rw http.ResponseWriter, r *http.Request) {
	c, err := h.principal(r)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	if iamattest.Same(c.Principal, h.crawlRole) {
		h.writeErr(rw, r, fmt.Errorf("%w: %s is the crawl role, which adds only the servers of TOOLWARRANT_SERVERS", warrant.ErrForbidden, c.Principal))
		return
	}
	var req ServerRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.writeErr(rw, r, fmt.Errorf("%w: the body is not a server {name, url, headers: [{header, secret}]}: %v", warrant.ErrInvalid, err))
		return
	}
	for _, hd := range req.Headers {
		switch {
		case hd.Env != "" || hd.Secret == "":
			err = fmt.Errorf("%w: header %s: on AWS a header's value comes from a secret (\"secret\": its ARN), not an environment variable", warrant.ErrInvalid, hd.Header)
		case !slices.ContainsFunc(h.secrets, func(p string) bool { return config.MatchARN(p, hd.Secret) }):
			err = fmt.Errorf("%w: header %s reads %s, which the crawl role may not read: add it to the stack's CrawlHeaderSecretArns parameter first", warrant.ErrInvalid, hd.Header, hd.Secret)
		}
		if err != nil {
			h.writeErr(rw, r, err)
			return
		}
	}
	added, err := h.svc.AddServerAs(r.Context(), warrant.Server{Name: req.Name, URL: req.URL, Headers: req.Headers}, c.Principal)
	if err != nil {
		h.writeErr(rw, r, err)
		return
	}
	if !added {
		writeJSON(rw, http.StatusOK, ServerAnswer{Server: req.Name})
		return
	}
	h.log.InfoContext(r.Context(), "server added", slog.String("server", req.Name), slog.String("url", req.URL), slog.String("by", c.Principal))
	writeJSON(rw, http.StatusCreated, ServerAnswer{Server: req.Name, Added: true, By: c.Principal})
}
