package awsapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// ApprovalsHandler is the approvals API behind API Gateway (HTTP API, AWS_IAM
// authorization on every route):
//
//	GET  /v1/proposals                                   pending versions, graded, and the audit head
//	GET  /v1/tools                                       every tool, graded, and the audit head
//	GET  /v1/servers/{server}/tools/{tool}/diff?from=&to= the graded diff of two versions
//	GET  /v1/servers/{server}/tools/{tool}/versions/{v}  one version (a digest, a prefix, or "current")
//	POST /v1/servers/{server}/tools/{tool}/decisions     approve, reject or roll back one exact digest
//	GET  /v1/audit?after=SEQ&limit=N                     audit entries after SEQ, as export lines
//
// The decider is the caller's IAM principal ARN from the request context (API Gateway
// verified its SigV4 signature); a request without one is refused. A decision is recorded
// with part 2's rules: the exact digest of a recorded version, over the audit head the
// caller read (refused if the log moved), never by the crawl role nor by an identity that
// crawled that digest, suspicious text only with acceptSuspicious; its audit entry is
// signed by the KMS log key and attests the principal (internal/iamattest).
func ApprovalsHandler(w *Warrant, crawlRole string, log *slog.Logger) http.Handler {
	a := &approvals{w: w, crawlRole: crawlRole, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/proposals", func(rw http.ResponseWriter, r *http.Request) { a.tools(rw, r, "proposals", true) })
	mux.HandleFunc("GET /v1/tools", func(rw http.ResponseWriter, r *http.Request) { a.tools(rw, r, "tools", false) })
	mux.HandleFunc("GET /v1/audit", a.audit)
	mux.HandleFunc("GET /v1/servers/{server}/tools/{tool}/diff", a.diff)
	mux.HandleFunc("GET /v1/servers/{server}/tools/{tool}/versions/{version}", a.version)
	mux.HandleFunc("POST /v1/servers/{server}/tools/{tool}/decisions", a.decide)
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeErr(rw, r, log, fmt.Errorf("%w: no route %s %s", errRoute, r.Method, r.URL.Path))
	})
	return mux
}

type approvals struct {
	w         *Warrant
	crawlRole string
	log       *slog.Logger
}

var (
	errRoute     = errors.New("not found")
	errForbidden = errors.New("forbidden")
)

// principal returns the caller's IAM principal ARN from the API Gateway request context.
func principal(r *http.Request) (string, string) {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return "", rc.RequestID
	}
	return rc.Authorizer.IAM.UserARN, rc.RequestID
}

// MaxAnswerBytes bounds one answer as Lambda carries it. A synchronous invocation's
// response may not exceed 6 MB (6,291,456 bytes), and the answer travels inside it as a
// JSON string — every quote and backslash escaped, control and HTML characters as \uXXXX — next to
// the status and headers; 64 KiB is left for those. API Gateway answers 500 for a Lambda
// response over the limit, so the handler must never produce one.
const MaxAnswerBytes = 6*1024*1024 - 64*1024

// errTooLarge is an answer over MaxAnswerBytes.
var errTooLarge = errors.New("answer too large for one Lambda response")

// encodeAnswer encodes v and checks its size as Lambda carries it.
func encodeAnswer(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if n := escapedLen(buf.Bytes()); n > MaxAnswerBytes {
		return nil, fmt.Errorf("%w: %d bytes as a JSON string, over %d", errTooLarge, n, MaxAnswerBytes)
	}
	return buf.Bytes(), nil
}

// escapedLen is len(b) once escaped as a JSON string body (without the quotes).
func escapedLen(b []byte) int {
	n := len(b)
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&': // \u00XX; the Lambda runtime's encoder escapes HTML characters too
			n += 5
		}
	}
	return n
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	b, err := encodeAnswer(v)
	if err != nil {
		status = http.StatusInternalServerError
		msg := "could not encode the answer"
		if errors.Is(err, errTooLarge) {
			status, msg = http.StatusRequestEntityTooLarge, err.Error()+": Lambda cannot return it; the tool's definition is too large to be shown through the approvals API (read it with toolwarrant show on the catalog, or from the catalog blob bucket by its digest)"
		}
		b, _ = json.Marshal(map[string]string{"error": msg})
		b = append(b, '\n')
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_, _ = rw.Write(b)
}

// writeErr is the one error-to-status mapping of the approvals API. Internal errors are
// logged and answered with a generic message and the request ID.
func writeErr(rw http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	_, reqID := principal(r)
	status, msg := http.StatusInternalServerError, "internal error (request "+reqID+")"
	switch {
	case errors.Is(err, errRoute), errors.Is(err, warrant.ErrNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, errForbidden), errors.Is(err, warrant.ErrSeparation):
		status, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, warrant.ErrSuspicious):
		status, msg = http.StatusConflict, err.Error()+"; read the diff and pass acceptSuspicious to decide anyway (recorded)"
	case errors.Is(err, warrant.ErrConflict):
		status, msg = http.StatusConflict, err.Error()
	case errors.Is(err, warrant.ErrInvalid):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, warrant.ErrUnavailable), errors.Is(err, signer.ErrUnavailable):
		rw.Header().Set("Retry-After", "5")
		status, msg = http.StatusServiceUnavailable, "temporarily unavailable; nothing was recorded; retry: "+err.Error()
	}
	if status >= 500 {
		log.ErrorContext(r.Context(), "approvals request failed", slog.String("path", r.URL.Path), slog.Int("status", status), slog.String("error", err.Error()), slog.String("request_id", reqID))
	}
	writeJSON(rw, status, map[string]string{"error": msg})
}

func (a *approvals) caller(r *http.Request) (string, error) {
	p, _ := principal(r)
	if p == "" {
		return "", fmt.Errorf("%w: no IAM principal in the request context: the route must use AWS_IAM authorization", errForbidden)
	}
	return p, nil
}

// tools answers the tool rows (only the pending ones for /v1/proposals) under key, with
// the audit head read before them: a decision over that head is refused if anything was
// recorded since.
func (a *approvals) tools(rw http.ResponseWriter, r *http.Request, key string, pending bool) {
	head, ok := a.readHead(rw, r)
	if !ok {
		return
	}
	rows, err := a.w.Service.List(r.Context(), pending)
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	if rows == nil {
		rows = []warrant.ToolRow{}
	}
	writeJSON(rw, http.StatusOK, map[string]any{"auditHead": head, key: rows})
}

// readHead refuses a caller without an IAM principal and reads the audit head a read
// route answers with (the head a decision is then made over). On failure it has answered.
func (a *approvals) readHead(rw http.ResponseWriter, r *http.Request) (warrant.AuditHead, bool) {
	if _, err := a.caller(r); err != nil {
		writeErr(rw, r, a.log, err)
		return warrant.AuditHead{}, false
	}
	head, err := a.w.Catalog.AuditHead(r.Context())
	if err != nil {
		writeErr(rw, r, a.log, err)
		return warrant.AuditHead{}, false
	}
	return head, true
}

// Audit export pages: at most MaxAuditPage entries and about auditPageBytes of export
// lines per response (API Gateway answers at most 6 MB from a Lambda function), the
// first entry always included.
const (
	MaxAuditPage   = 1000
	auditPageBytes = 4 << 20
	// AuditMoreHeader is "true" on an audit page cut short by the limits: ask again
	// with after = the last entry's seq.
	AuditMoreHeader = "Toolwarrant-Audit-More"
)

// audit answers the entries with seq > after as export lines (audit.WriteExport, what
// `toolwarrant audit export` writes), for offline `audit verify --export`.
func (a *approvals) audit(rw http.ResponseWriter, r *http.Request) {
	if _, err := a.caller(r); err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	q := r.URL.Query()
	after, limit := int64(0), MaxAuditPage
	var err error
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			writeErr(rw, r, a.log, fmt.Errorf("%w: after=%q: give the seq of the last entry you have (0 for the start)", warrant.ErrInvalid, v))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxAuditPage {
			writeErr(rw, r, a.log, fmt.Errorf("%w: limit=%q: give 1..%d", warrant.ErrInvalid, v, MaxAuditPage))
			return
		}
	}
	recs, err := a.w.Catalog.AuditRecords(r.Context(), after, limit)
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	var buf bytes.Buffer
	more := len(recs) == limit
	for i := range recs {
		n := buf.Len()
		if err := audit.WriteExport(&buf, recs[i:i+1]); err != nil {
			writeErr(rw, r, a.log, err)
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

func (a *approvals) diff(rw http.ResponseWriter, r *http.Request) {
	head, ok := a.readHead(rw, r)
	if !ok {
		return
	}
	ctx := r.Context()
	dv, err := a.w.Service.Diff(ctx, r.PathValue("server"), r.PathValue("tool"), r.URL.Query().Get("from"), r.URL.Query().Get("to"))
	if err != nil {
		writeErr(rw, r, a.log, err)
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

// VersionAnswer is GET …/versions/{v}: one version (its canonical definition, the exact
// bytes its digest covers; a client escapes suspicious characters before printing), what
// textguard found in it, its decisions, and the audit head read before it.
type VersionAnswer struct {
	AuditHead warrant.AuditHead `json:"auditHead"`
	warrant.VersionDoc
}

func (a *approvals) version(rw http.ResponseWriter, r *http.Request) {
	head, ok := a.readHead(rw, r)
	if !ok {
		return
	}
	ctx := r.Context()
	want := r.PathValue("version")
	if want == "current" {
		want = ""
	}
	v, err := a.w.Service.Show(ctx, r.PathValue("server"), r.PathValue("tool"), want)
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	out := VersionAnswer{AuditHead: head, VersionDoc: v.Doc()}
	writeJSON(rw, http.StatusOK, out)
}

// DecisionRequest is the body of POST …/decisions.
type DecisionRequest struct {
	// Decision is approved, rejected or rolled_back.
	Decision warrant.DecisionKind `json:"decision"`
	// Digest is the exact digest (sha256: and 64 hex digits).
	Digest warrant.Digest `json:"digest"`
	// AuditHead is the head the caller read (from /v1/proposals or the diff): the
	// decision is recorded only if it is still the head.
	AuditHead *warrant.AuditHead `json:"auditHead"`
	// AcceptSuspicious decides although the version has suspicious text (recorded).
	AcceptSuspicious bool   `json:"acceptSuspicious"`
	Note             string `json:"note"`
}

func (a *approvals) decide(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	who, err := a.caller(r)
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	_, reqID := principal(r)
	server, tool := r.PathValue("server"), r.PathValue("tool")
	var req DecisionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(rw, r, a.log, fmt.Errorf("%w: the body is not a decision: %v", warrant.ErrInvalid, err))
		return
	}
	switch {
	case req.Decision != warrant.DecisionApproved && req.Decision != warrant.DecisionRejected && req.Decision != warrant.DecisionRolledBack:
		err = fmt.Errorf("%w: decision %q: use approved, rejected or rolled_back", warrant.ErrInvalid, req.Decision)
	case !req.Digest.Valid():
		err = fmt.Errorf("%w: digest %q: give the exact digest (sha256: and all 64 hex digits)", warrant.ErrInvalid, req.Digest)
	case req.AuditHead == nil:
		err = fmt.Errorf("%w: auditHead is required: the head you read, from /v1/proposals or the diff", warrant.ErrInvalid)
	case iamattest.Same(who, a.crawlRole):
		err = fmt.Errorf("%w: %s is the crawl role, which can never decide", errForbidden, who)
	}
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	svc := a.w.Service
	chk, err := svc.CheckDecision(ctx, server, tool, req.Digest, req.Decision, req.AcceptSuspicious, who, iamattest.Same)
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	if chk.Unchanged {
		writeJSON(rw, http.StatusOK, map[string]any{"server": server, "tool": tool, "digest": req.Digest, "decision": req.Decision, "unchanged": true})
		return
	}
	now := a.w.Now().UTC()
	stmt, err := trust.NewDecision(req.Decision, server, tool, req.Digest, chk.AcceptedSuspicious, who, *req.AuditHead, now).Bytes()
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	err = svc.Decide(ctx, warrant.Decision{Server: server, Tool: tool, Digest: req.Digest, Kind: req.Decision, Actor: who, At: now, Expect: chk.Approved,
		AcceptedSuspicious: chk.AcceptedSuspicious, Note: req.Note, Statement: stmt, Signature: []byte(iamattest.SignaturePrefix + reqID), ReadHead: req.AuditHead})
	if err != nil {
		writeErr(rw, r, a.log, err)
		return
	}
	head, _ := a.w.Catalog.AuditHead(ctx)
	a.log.InfoContext(ctx, "decision recorded", slog.String("server", server), slog.String("tool", tool), slog.String("digest", string(req.Digest)),
		slog.String("decision", string(req.Decision)), slog.String("by", who), slog.Int64("audit_seq", head.Seq))
	writeJSON(rw, http.StatusCreated, map[string]any{"server": server, "tool": tool, "digest": req.Digest, "decision": req.Decision, "by": who,
		"auditHead": head, "auditEntry": strconv.FormatInt(head.Seq, 10)})
}
