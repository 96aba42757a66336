package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/review"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// crawled returns a catalog in a new directory with forecast and the rug-pulled version
// of it crawled (by tester@example), and a trusted approver's key.
func crawled(t *testing.T) (dir, approver string) {
	t.Helper()
	dir = t.TempDir()
	f := fixture.New(forecast, alerts)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}} {
		if r := runCLI(t, dir, nil, args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	if r := runCLI(t, dir, nil, "crawl"); r.code != 1 {
		t.Fatalf("crawl: %s", r)
	}
	f.SetTools(rugged, alerts)
	if r := runCLI(t, dir, nil, "crawl"); r.code != 1 {
		t.Fatalf("crawl: %s", r)
	}
	approver = sshKey(t, dir, "approver")
	if r := runCLI(t, dir, nil, "trust", "init", "--ssh-key", approver+".pub", "--principal", "approver@example"); r.code != 0 {
		t.Fatalf("trust init: %s", r)
	}
	return dir, approver
}

// TestDecideWithDigestPrefix: approve, reject and show --version take the 12 hex digits
// list prints (any unique prefix of at least 8); the decision names the full digest.
func TestDecideWithDigestPrefix(t *testing.T) {
	dir, approver := crawled(t)
	r := runCLI(t, dir, nil, "list")
	short := digestOf(t, alerts).Short()
	if r.code != 0 || !strings.Contains(r.stdout, short) || !strings.Contains(r.stderr, "'toolwarrant list --json'") {
		t.Fatalf("list: %s", r)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"too short", []string{"approve", "wx", "get_alerts", "--hash", digestOf(t, alerts).Hex()[:7], "--sign-key", approver}, 2, "at least 8 of its hex digits"},
		{"not hex", []string{"approve", "wx", "get_alerts", "--hash", "sha256:zzzzzzzzzz", "--sign-key", approver}, 2, "is not a digest or a prefix"},
		{"no such version", []string{"approve", "wx", "get_alerts", "--hash", "00000000", "--sign-key", approver}, 2, "version 00000000: not found"},
		{"show --version", []string{"show", "wx", "get_alerts", "--version", short}, 0, `"name":"get_alerts"`},
		{"approve with list's prefix", []string{"approve", "wx", "get_alerts", "--hash", short, "--sign-key", approver}, 0, "approved wx get_alerts " + string(digestOf(t, alerts)) + " as approver@example"},
		{"8 digits without sha256:", []string{"reject", "wx", "get_forecast", "--hash", digestOf(t, rugged).Hex()[:8], "--sign-key", approver}, 0, "rejected wx get_forecast " + string(digestOf(t, rugged))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, dir, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("%s\nwant exit %d with %q", r, tc.code, tc.want)
			}
		})
	}
}

func TestReviewCommand(t *testing.T) {
	dir, approver := crawled(t)
	if r := runCLI(t, dir, nil, "review", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "Exit codes:") ||
		!strings.Contains(r.stdout, "toolwarrant review --out report.html") {
		t.Errorf("review --help: %s", r)
	}
	out := filepath.Join(dir, "report.html")
	r := runCLI(t, dir, nil, "review", "--out", out)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "wrote "+out+": 2 tools to review, rendered from audit head ") {
		t.Fatalf("review --out: %s", r)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.HasPrefix(doc, "<!doctype html>") || strings.Contains(doc, "<script") || strings.Contains(doc, "<form") ||
		!strings.Contains(doc, string(digestOf(t, rugged))) || strings.Contains(doc, "\u200b") || !strings.Contains(doc, "U&#43;200B") {
		t.Errorf("report:\n%.2000s", doc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"review", "--addr", "0.0.0.0:0", "--sign-key", approver}, "loopback address only"},
		{[]string{"review", "--addr", "192.0.2.7:8080"}, "loopback address only"},
		{[]string{"review", "--remote", "http://127.0.0.1:9", "--sign-key", approver}, "drop --sign-key"},
		{[]string{"review", "--sign-key", filepath.Join(dir, "nope")}, "nope"},
	} {
		if r := runCLI(t, dir, nil, tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %s", tc.args, r)
		}
	}
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)
	headField = regexp.MustCompile(`name="head" value="([0-9]+:[0-9a-f]{64})"`)
)

const alice = "arn:aws:iam::123456789012:user/alice"

// approvalsAPI serves the approvals API over the catalog in dir on loopback, every signed
// request attributed to alice's IAM principal (API Gateway's job in a deployment).
func approvalsAPI(t *testing.T, dir string) (*localapp.Toolwarrant, *httptest.Server) {
	t.Helper()
	w, err := localapp.OpenToolwarrant(t.Context(), localapp.ToolwarrantConfig{Catalog: filepath.Join(dir, "toolwarrant.db"), LogKey: filepath.Join(dir, "toolwarrant.db.logkey"), Identity: "api"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	api, err := approvalsapi.New(approvalsapi.Config{Service: w.Service, CrawlRole: "arn:aws:iam::123456789012:role/crawl",
		Caller: func(r *http.Request) approvalsapi.Caller {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
				return approvalsapi.Caller{}
			}
			return approvalsapi.Caller{Principal: alice, RequestID: "req-1"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return w, srv
}

// TestDecidePrefixRemote: with --remote the approvals API resolves the prefix, and the
// full digest is what is decided.
func TestDecidePrefixRemote(t *testing.T) {
	dir, _ := crawled(t)
	_, srv := approvalsAPI(t, dir)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDALICE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	short := digestOf(t, alerts).Short()
	r := runCLI(t, dir, nil, "approve", "wx", "get_alerts", "--hash", short, "--remote", srv.URL)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "approved wx get_alerts "+string(digestOf(t, alerts))+" as "+alice) {
		t.Errorf("approve --remote with a prefix: %s", r)
	}
	if r := runCLI(t, dir, nil, "approve", "wx", "get_alerts", "--hash", "00000000", "--remote", srv.URL); r.code != 2 || !strings.Contains(r.stderr, "404") {
		t.Errorf("approve --remote with an unknown prefix: %s", r)
	}
}

// TestReviewRemote: the page over the approvals API (in process here, over loopback HTTP
// with SigV4 signing): its decision is recorded by the API's DecideAs with the caller's
// IAM principal, and a stale page is refused by the API's own head check.
func TestReviewRemote(t *testing.T) {
	dir, _ := crawled(t)
	ctx := t.Context()
	w, srv := approvalsAPI(t, dir)
	remote, err := approvalsapi.NewRemote(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDALICE", "secret", "")}, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:8423"
	h, err := review.New(review.Config{Source: remoteSource{remote}, Addr: addr, Decider: "your AWS principal", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, target string, form url.Values) *httptest.ResponseRecorder {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req := httptest.NewRequest(method, target, body)
		req.Host = addr
		req.AddCookie(&http.Cookie{Name: "toolwarrant_review_8423", Value: "tok"})
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "http://"+addr)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := do("GET", "/", nil)
	page := rec.Body.String()
	csrf, head := csrfField.FindStringSubmatch(page), headField.FindStringSubmatch(page)
	if rec.Code != 200 || csrf == nil || head == nil || !strings.Contains(page, string(digestOf(t, alerts))) {
		t.Fatalf("page over the approvals API: %d\n%.3000s", rec.Code, page)
	}
	arg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	form := func(tool string, d warrant.Digest) url.Values {
		return url.Values{"csrf": {csrf[1]}, "head": {head[1]}, "server": {arg("wx")}, "tool": {arg(tool)}, "digest": {string(d)}, "current": {string(d)}, "kind": {"approved"}}
	}
	rec = do("POST", "/decide", form("get_alerts", digestOf(t, alerts)))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("decision over the approvals API: %d %s", rec.Code, rec.Body)
	}
	recs, _ := w.Catalog.AuditRecords(ctx, 0, 1000)
	last := recs[len(recs)-1]
	var body struct {
		Event struct{ Statement json.RawMessage }
	}
	_ = json.Unmarshal(last.Body, &body)
	var st struct {
		Digest    warrant.Digest
		AuditHead warrant.AuditHead
	}
	_ = json.Unmarshal(body.Event.Statement, &st)
	if last.Type != "approved" || last.Actor != alice || st.Digest != digestOf(t, alerts) || last.Seq != st.AuditHead.Seq+1 {
		t.Errorf("entry %d %s by %s, statement %s", last.Seq, last.Type, last.Actor, body.Event.Statement)
	}
	// The page's head is gone now: refused before the API is asked, and refused by the
	// API's own check when asked.
	if rec := do("POST", "/decide", form("get_forecast", digestOf(t, rugged))); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "<code>approved</code>") {
		t.Errorf("stale page over the approvals API: %d", rec.Code)
	}
	seq, hash, _ := strings.Cut(head[1], ":")
	n, _ := strconv.ParseInt(seq, 10, 64)
	h0 := warrant.AuditHead{Seq: n, Hash: hash}
	if _, err := (remoteSource{remote}).Decide(ctx, warrant.DecisionRequest{Server: "wx", Tool: "get_forecast", Digest: digestOf(t, forecast), Kind: warrant.DecisionApproved, ReadHead: &h0}); !errors.Is(err, warrant.ErrConflict) {
		t.Errorf("the approvals API accepted a decision over an old head: %v", err)
	}
	if again, _ := w.Catalog.AuditRecords(ctx, last.Seq, 10); len(again) != 0 {
		t.Errorf("stale decisions were recorded: %d entries", len(again))
	}
}
