package review

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Config configures New.
type Config struct {
	// Source reads the catalog and records decisions. Required.
	Source Source
	// Addr is the address the page is served on (host:port of the listener from
	// [Listen]): requests must name it in their Host header. Required.
	Addr string
	// Decider says who decides from this page, shown in its header ("alice@example.com,
	// SSH key SHA256:…"). "": the page is read-only (no forms).
	Decider string
	// Where says what the page reads, shown in its header. Default "the catalog".
	Where string
	// Token is the per-run token; default: 32 random bytes, hex. Tests may fix it.
	Token string
	// Logger receives one line per decision and every internal error. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Handler serves the review page (routes in the package documentation).
type Handler struct {
	src     Source
	decider string
	where   string
	token   string
	csrf    string
	cookie  string
	hosts   map[string]bool
	origin  string
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux

	mu      sync.Mutex
	results map[string]*Banner
	order   []string
}

// maxResults bounds the decision results kept for the redirect after a POST.
const maxResults = 64

// maxForm bounds a decision form's body.
const maxForm = 16 << 10

// maxMoved bounds the audit entries a stale refusal lists.
const maxMoved = 50

// New returns the page's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Source == nil {
		return nil, errors.New("review: Config.Source is required")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("review: Config.Addr %q: %v", cfg.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("review: Config.Addr %q is not a loopback address", cfg.Addr)
	}
	h := &Handler{src: cfg.Source, decider: cfg.Decider, where: cfg.Where, token: cfg.Token, log: cfg.Logger, now: cfg.Now,
		mux: http.NewServeMux(), results: map[string]*Banner{}}
	if h.where == "" {
		h.where = "the catalog"
	}
	if h.token == "" {
		h.token = randomHex(32)
	}
	h.csrf = randomHex(32)
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	// Cookies are not scoped by port: the name keeps two pages on two ports apart.
	h.cookie = "toolwarrant_review_" + port
	hostport := net.JoinHostPort(host, port)
	h.hosts = map[string]bool{hostport: true, net.JoinHostPort("localhost", port): true}
	h.origin = "http://" + hostport
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.HandleFunc("GET /static/review.css", h.static("text/css; charset=utf-8", cssFile))
	h.mux.HandleFunc("GET /static/review.js", h.static("text/javascript; charset=utf-8", jsFile))
	h.mux.HandleFunc("POST /decide", h.decide)
	h.mux.HandleFunc("POST /approve-all", h.approveAll)
	h.mux.HandleFunc("/decide", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		refuse(w, http.StatusMethodNotAllowed, "a decision is a POST from the page's form")
	})
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, http.StatusNotFound, "no such page")
	})
	return h, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// URL is the address to open: the page with this run's token.
func (h *Handler) URL() string { return h.origin + "/?token=" + h.token }

// Listen listens on addr, which must be a loopback address (127.0.0.1:0 for any free
// port, [::1]:PORT, localhost:PORT).
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %v", addr, err)
	}
	if host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", addr[strings.LastIndexByte(addr, ':')+1:])
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--addr %q: the review page listens on a loopback address only (127.0.0.1, ::1)", addr)
	}
	return net.Listen("tcp", addr)
}

// contentSecurityPolicy is the live page's policy: its own script and stylesheet, forms
// to itself, nothing else.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'none'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP checks the Host and the token, then serves the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on
	// a form POST, and the Origin check needs the real one.
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	if !h.hosts[r.Host] {
		refuse(w, http.StatusMisdirectedRequest, "this page answers only to "+h.origin)
		return
	}
	if t, ok := r.URL.Query()["token"]; ok && r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if len(t) != 1 || !equal(t[0], h.token) {
			refuse(w, http.StatusForbidden, "wrong token: open the URL 'toolwarrant review' printed for this run")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: h.cookie, Value: h.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		// A page that moves on by itself (no script): the token leaves the address bar and
		// the history, and the next request is made by the page, same-site, with the cookie.
		hd.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(enterPage))
		return
	}
	c, err := r.Cookie(h.cookie)
	if err != nil || !equal(c.Value, h.token) {
		refuse(w, http.StatusForbidden, "this page needs its per-run token: open the URL 'toolwarrant review' printed")
		return
	}
	h.mux.ServeHTTP(w, r)
}

const enterPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">` +
	`<title>toolwarrant review</title></head><body><p><a href="/">Open the review page</a></p></body></html>`

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// refuse answers a refusal as plain text: nothing of the request is echoed.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "%d %s: %s\nNothing was changed.\n", status, http.StatusText(status), msg)
}

func (h *Handler) static(ctype string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}
}

// index renders the page, with the banner of a decision just made (?r=ID).
func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	var banner *Banner
	if id := r.URL.Query().Get("r"); id != "" {
		h.mu.Lock()
		banner = h.results[id]
		h.mu.Unlock()
	}
	f, err := parseFilter(r.URL.Query().Get("grade"), r.URL.Query().Get("server"))
	if err != nil {
		refuse(w, http.StatusBadRequest, "the filter: "+err.Error())
		return
	}
	h.render(w, r, http.StatusOK, banner, func(p *Page, _ snapshot) { p.apply(f) })
}

// render reads a snapshot and writes the page with status and banner; fill, when set,
// completes the page from the snapshot.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, banner *Banner, fill func(*Page, snapshot)) {
	s, err := read(r.Context(), h.src)
	if err != nil {
		h.log.ErrorContext(r.Context(), "review: read the catalog", slog.String("error", err.Error()))
		st, _ := errorKind(err)
		refuse(w, st, "could not read the catalog: "+textOf(err.Error()).String())
		return
	}
	p := build(s)
	p.At, p.Where, p.Decider, p.CSRF, p.Banner = h.now().UTC(), h.where, h.decider, h.csrf, banner
	if _, ok := h.src.(BulkApprover); ok && h.decider != "" {
		p.Bulk = bulkViews(p.Cards)
	}
	if fill != nil {
		fill(p, s)
	}
	var buf bytes.Buffer
	if err := pageTemplate.ExecuteTemplate(&buf, "page", p); err != nil {
		h.log.ErrorContext(r.Context(), "review: render", slog.String("error", err.Error()))
		refuse(w, http.StatusInternalServerError, "could not render the page (the terminal has the details)")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// decision is a parsed decision form.
type decision struct {
	kind         warrant.DecisionKind
	server, tool string
	digest       warrant.Digest
	// current and approved are the tool's digests as the page showed them ("" for none).
	current, approved warrant.Digest
	head              warrant.AuditHead
	accept            bool
	note              string
}

// sameOrigin checks the Origin header (and Sec-Fetch-Site, when the browser sends it).
func (h *Handler) sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o == "" || o != "http://"+r.Host {
		return false
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return false
	}
	return true
}

func parseDecision(r *http.Request) (decision, error) {
	f := r.PostForm
	var d decision
	var err error
	switch k := warrant.DecisionKind(f.Get("kind")); k {
	case warrant.DecisionApproved, warrant.DecisionRejected, warrant.DecisionRolledBack:
		d.kind = k
	default:
		return d, fmt.Errorf("%w: unknown decision %q", warrant.ErrInvalid, textOf(f.Get("kind")).String())
	}
	if d.server, err = unarg(f.Get("server")); err != nil || d.server == "" {
		return d, fmt.Errorf("%w: the form names no server", warrant.ErrInvalid)
	}
	if d.tool, err = unarg(f.Get("tool")); err != nil || d.tool == "" {
		return d, fmt.Errorf("%w: the form names no tool", warrant.ErrInvalid)
	}
	if d.digest, err = warrant.ParseDigest(f.Get("digest")); err != nil {
		return d, err
	}
	for _, x := range []struct {
		field string
		to    *warrant.Digest
	}{{"current", &d.current}, {"approved", &d.approved}} {
		if v := f.Get(x.field); v != "" {
			if *x.to, err = warrant.ParseDigest(v); err != nil {
				return d, err
			}
		}
	}
	seq, hash, ok := strings.Cut(f.Get("head"), ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 0 || len(hash) != 64 {
		return d, fmt.Errorf("%w: the form names no audit head", warrant.ErrInvalid)
	}
	d.head = warrant.AuditHead{Seq: n, Hash: hash}
	d.accept = f.Get("accept") == "yes"
	d.note = strings.TrimSpace(f.Get("note"))
	if len(d.note) > 1000 {
		return d, fmt.Errorf("%w: the note is longer than 1000 bytes", warrant.ErrInvalid)
	}
	return d, nil
}

// pageForm checks that a state-changing request is a form POST from the page itself:
// its Origin, a bounded urlencoded body, the page's CSRF token. It answers the refusal
// and returns false otherwise; r.PostForm is parsed when it returns true.
func (h *Handler) pageForm(w http.ResponseWriter, r *http.Request) bool {
	if !h.sameOrigin(r) {
		refuse(w, http.StatusForbidden, "a decision must come from the review page itself (Origin "+h.origin+")")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		refuse(w, http.StatusUnsupportedMediaType, "a decision is a form POST")
		return false
	}
	if err := r.ParseForm(); err != nil {
		refuse(w, http.StatusBadRequest, "unreadable form")
		return false
	}
	if !equal(r.PostForm.Get("csrf"), h.csrf) {
		refuse(w, http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page")
		return false
	}
	return true
}

// decide records one decision: a POST from the page itself (Origin), with its CSRF token,
// over the head the page was rendered from.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !h.pageForm(w, r) {
		return
	}
	if h.decider == "" {
		h.refused(w, r, ErrReadOnly, decision{})
		return
	}
	d, err := parseDecision(r)
	if err != nil {
		h.refused(w, r, err, d)
		return
	}
	// The head the page was rendered from must still be the head: checked before anything
	// is signed (a signing prompt for a decision that cannot be recorded helps nobody),
	// and again by the use case at the write.
	head, _, err := h.src.Tools(ctx)
	if err != nil {
		h.refused(w, r, err, d)
		return
	}
	if head != d.head {
		h.stale(w, r, d, fmt.Errorf("%w: the audit log moved on since the page was rendered (it was at %d, it is now at %d)", warrant.ErrStale, d.head.Seq, head.Seq))
		return
	}
	req := warrant.DecisionRequest{Server: d.server, Tool: d.tool, Digest: d.digest, Kind: d.kind, AcceptSuspicious: d.accept, Note: d.note, ReadHead: &d.head}
	out, err := h.src.Decide(ctx, req)
	if errors.Is(err, warrant.ErrConflict) || errors.Is(err, warrant.ErrStale) {
		h.stale(w, r, d, err)
		return
	}
	if err != nil {
		h.refused(w, r, err, d)
		return
	}
	h.log.InfoContext(ctx, "review: decision recorded", slog.String("decision", string(d.kind)), slog.String("server", d.server),
		slog.String("tool", d.tool), slog.String("digest", string(d.digest)), slog.String("by", out.Decider), slog.Int64("entry", out.Head.Seq))
	b := &Banner{Kind: "ok", CardID: cardID(d.server, d.tool)}
	name := join(textOf(d.server+" "), nameOf(d.tool))
	if out.Unchanged {
		b.Title = "Nothing recorded"
		b.Message = join(name, textOf(fmt.Sprintf(": %s is already the approved digest.", d.digest)))
	} else {
		b.Title = "Recorded: " + string(d.kind)
		b.Message = join(textOf(string(d.kind)+" "), name, textOf(fmt.Sprintf(" %s as %s, audit entry %d.", d.digest, out.Decider, out.Head.Seq)))
		b.Detail = append(b.Detail, fmt.Sprintf("The signed statement names %s and the audit head %d:%s this page was rendered from.", d.digest, d.head.Seq, d.head.Hash))
		if d.accept {
			b.Detail = append(b.Detail, "You accepted its suspicious text; the statement records acceptedSuspicious: true.")
		}
		b.Detail = append(b.Detail, fmt.Sprintf("Check it without toolwarrant: toolwarrant audit statement %d --out DIR, then the ssh-keygen -Y verify command it prints.", out.Head.Seq))
		b.Detail = append(b.Detail, fmt.Sprintf("Audit head now: %d:%s", out.Head.Seq, out.Head.Hash))
	}
	id := h.keep(b)
	http.Redirect(w, r, "/?r="+id+"#"+b.CardID, http.StatusSeeOther)
}

// keep stores a result for the redirect and returns its ID.
func (h *Handler) keep(b *Banner) string {
	id := randomHex(8)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.results[id] = b
	h.order = append(h.order, id)
	if len(h.order) > maxResults {
		delete(h.results, h.order[0])
		h.order = h.order[1:]
	}
	return id
}

// refused re-renders the page with why the decision was refused.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request, err error, d decision) {
	status, title := errorKind(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		h.log.ErrorContext(r.Context(), "review: decision failed", slog.String("error", msg))
		msg = "the decision could not be recorded (the terminal that runs 'toolwarrant review' has the details)"
	}
	b := &Banner{Kind: "error", Title: title, Message: textOf(msg + ". Nothing was recorded.")}
	if d.server != "" {
		b.CardID = cardID(d.server, d.tool)
	}
	h.render(w, r, status, b, nil)
}

// stale answers 409: the page again, from the new head, with the entries recorded since
// the head the refused decision's page was rendered from and what they changed on the
// tool.
func (h *Handler) stale(w http.ResponseWriter, r *http.Request, d decision, cause error) {
	ctx := r.Context()
	b := &Banner{Kind: "stale", Title: "Refused: the catalog moved on since this page was rendered", CardID: cardID(d.server, d.tool),
		Message: textOf(fmt.Sprintf("%v. Nothing was signed or recorded. The page below is read again from the new head: read it and decide again.", cause))}
	if d.tool == "" { // a bulk approval: no one tool to link to
		b.CardID = ""
	}
	recs, err := h.src.Since(ctx, d.head.Seq, maxMoved)
	if err != nil {
		h.log.ErrorContext(ctx, "review: read the audit log", slog.String("error", err.Error()))
	}
	b.Moved = movedSince(recs)
	h.render(w, r, http.StatusConflict, b, func(p *Page, s snapshot) {
		if n := p.Head.Seq - d.head.Seq - int64(len(recs)); n > 0 {
			b.MovedMore = int(n)
		}
		shown := warrant.ToolRow{Server: d.server, Tool: d.tool, Current: d.current, Approved: d.approved}
		b.Changed = changedFor(shown, s.rows)
	})
}

// Serve serves h on ln until ctx is done, then shuts down (in-flight requests get
// a few seconds).
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute,
		IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
