package approvalsapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestSignedClient(t *testing.T) {
	var auth, date, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, date = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date")
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	resp, err := SignedClient(cfg).Post(srv.URL+"/v1/servers/weather/tools/t/decisions", "application/json", strings.NewReader(`{"decision":"approved"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/us-east-1/execute-api/aws4_request") || date == "" || body != `{"decision":"approved"}` {
		t.Errorf("Authorization %q, X-Amz-Date %q, body %q", auth, date, body)
	}
}

func TestNewRemoteURLs(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	for _, ok := range []string{"https://abc123.execute-api.eu-west-1.amazonaws.com", "https://approvals.example.com/prod/", "http://127.0.0.1:8080", "http://localhost:3000"} {
		if _, err := NewRemote(cfg, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "abc123.execute-api.eu-west-1.amazonaws.com", "http://approvals.example.com", "ftp://x", "https://x/?a=1", "https://u:p@x/"} {
		if _, err := NewRemote(cfg, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewRemote(aws.Config{Credentials: cfg.Credentials}, "https://approvals.example.com"); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Errorf("no region: %v", err)
	}
	// The region of an execute-api host wins over the configured one.
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { auth = r.Header.Get("Authorization") }))
	defer srv.Close()
	r, _ := NewRemote(cfg, "https://abc123.execute-api.eu-west-1.amazonaws.com")
	r.base = srv.URL
	_, _, _ = r.Tools(t.Context(), true)
	if !strings.Contains(auth, "/eu-west-1/execute-api/") {
		t.Errorf("signed for %q, want eu-west-1", auth)
	}
}

func TestRemoteErrors(t *testing.T) {
	for status, want := range map[int]error{400: warrant.ErrInvalid, 403: ErrForbidden, 404: warrant.ErrNotFound, 409: warrant.ErrConflict, 503: warrant.ErrUnavailable, 429: warrant.ErrUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":"because"}`)
		}))
		r, err := NewRemote(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "s", "")}, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Diff(t.Context(), "weather", "get/forecast", "", "")
		var re *RemoteError
		if !errors.Is(err, want) || !errors.As(err, &re) || re.Status != status || !strings.Contains(err.Error(), "because") || !re.ByFunction || re.Path != "/v1/servers/weather/tools/get%2Fforecast/diff" {
			t.Errorf("status %d: %v (%+v), want %v", status, err, re, want)
		}
		srv.Close()
	}
	// API Gateway's own refusal ({"message"}) is not the function's.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"Forbidden"}`)
	}))
	defer gw.Close()
	r, _ := NewRemote(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "s", "")}, gw.URL)
	var re *RemoteError
	if _, _, err := r.Tools(t.Context(), false); !errors.As(err, &re) || re.ByFunction || re.Message != "Forbidden" || !errors.Is(err, ErrForbidden) {
		t.Errorf("gateway refusal: %v (%+v)", err, re)
	}
	// No credentials to sign with is not "unavailable": retrying does not help.
	r, _ = NewRemote(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}, "http://127.0.0.1:1")
	r.hc = SignedClient(aws.Config{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no profile")
	})})
	if _, _, err := r.Tools(t.Context(), false); !errors.Is(err, ErrCredentials) || errors.Is(err, warrant.ErrUnavailable) {
		t.Errorf("no credentials: %v", err)
	}
}

// auditPages serves entries 1..n as export lines, size per page, with the More header.
func auditPages(t *testing.T, n, size int, gapAt int64) (*httptest.Server, *int) {
	t.Helper()
	var recs []warrant.AuditRecord
	for i := 1; i <= n; i++ {
		seq := int64(i)
		if seq == gapAt {
			seq++
		}
		recs = append(recs, warrant.AuditRecord{Seq: seq, Type: "test", Actor: "a", At: time.Unix(1796230800, 0).UTC(), PrevHash: strings.Repeat("0", 64),
			Hash: strings.Repeat("1", 64), KeyID: "k", Signature: []byte("sig"), Body: []byte(`{"n":1}`)})
	}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		var page []warrant.AuditRecord
		for _, rec := range recs {
			if rec.Seq > after && len(page) < size {
				page = append(page, rec)
			}
		}
		more := len(page) == size
		w.Header().Set(AuditMoreHeader, strconv.FormatBool(more))
		_ = audit.WriteExport(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestExportAuditPages(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "s", "")}
	srv, calls := auditPages(t, 7, 3, 0)
	r, _ := NewRemote(cfg, srv.URL)
	var buf bytes.Buffer
	var seen []int
	n, last, err := r.ExportAudit(t.Context(), &buf, 0, func(k int) { seen = append(seen, k) })
	if err != nil || n != 7 || last != 7 || *calls != 3 || fmt.Sprint(seen) != "[3 6 7]" {
		t.Fatalf("ExportAudit = %d, %d, %v after %d calls, progress %v", n, last, err, *calls, seen)
	}
	recs, err := audit.ParseExport(&buf)
	if err != nil || len(recs) != 7 || recs[6].Seq != 7 {
		t.Errorf("export: %d records, %v", len(recs), err)
	}
	// A page that skips an entry is refused, and nothing of it is written.
	srv, _ = auditPages(t, 7, 3, 5)
	r, _ = NewRemote(cfg, srv.URL)
	buf.Reset()
	n, last, err = r.ExportAudit(t.Context(), &buf, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "out of sequence") || n != 3 || last != 4 || strings.Count(buf.String(), "\n") != 3 {
		t.Errorf("gap: %d, %d, %v, %d lines written", n, last, err, strings.Count(buf.String(), "\n"))
	}
}

// An answer whose definition does not hash to the digest it names is refused: the CLI
// never shows, or decides over, bytes the API cannot vouch for.
func TestRemoteDigestMismatch(t *testing.T) {
	def := `{"name":"t"}`
	good := warrant.DigestOf([]byte(def))
	for _, tc := range []struct{ path, body string }{
		{"/versions/current", fmt.Sprintf(`{"digest":%q,"definition":{"name":"u"}}`, good)},
		{"/diff", fmt.Sprintf(`{"to":%q,"toDefinition":{"name":"u"}}`, good)},
		{"/diff", fmt.Sprintf(`{"to":%q,"toDefinition":%s,"from":%q,"fromDefinition":{"name":"u"}}`, good, def, good)},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tc.body) }))
		r, _ := NewRemote(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "s", "")}, srv.URL)
		var err error
		if strings.HasSuffix(tc.path, "current") {
			_, err = r.Version(t.Context(), "s", "t", "")
		} else {
			_, err = r.Diff(t.Context(), "s", "t", "", "")
		}
		if !errors.Is(err, errMismatch) {
			t.Errorf("%s %s: %v, want a mismatch", tc.path, tc.body, err)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"digest":%q,"definition":%s}`, good, def)
	}))
	defer srv.Close()
	r, _ := NewRemote(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("A", "s", "")}, srv.URL)
	if v, err := r.Version(t.Context(), "s", "t", ""); err != nil || string(v.Definition) != def {
		t.Errorf("matching answer: %+v, %v", v, err)
	}
}
