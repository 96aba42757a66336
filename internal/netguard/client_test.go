package netguard

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostPort returns the loopback host:port of a test server.
func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

// TestClientRefusesURLs sends each refused URL through the client: nothing may be
// dialled, and the sink (where the test hook would send a wrongly allowed connection)
// stays empty.
func TestClientRefusesURLs(t *testing.T) {
	s := newSink(t)
	log := &dialLog{}
	g := New(Config{
		Resolver: newResolver(map[string][]string{"meta.test": {"169.254.169.254"}, "intra.test": {"10.0.0.5"}}),
		Dial:     loopbackDial(t, log, toSink(s)),
	})
	c := g.HTTPClient(ClientConfig{})
	for _, u := range []string{
		"http://2130706433/",
		"http://0177.0.0.1/",
		"http://0x7f.1/",
		"http://127.1/",
		"http://0xa9fea9fe/latest/meta-data/",
		"http://169.254.169.254/latest/meta-data/",
		"http://169.254.170.2/v2/credentials",
		"http://[fd00:ec2::254]/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::ffff:169.254.169.254]/",
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://127.0.0.1/",
		"http://localhost/",
		"http://10.0.0.1/",
		"http://192.168.1.1/",
		"http://172.16.0.1/",
		"http://100.64.0.1/",
		"http://[fe80::1]/",
		"http://[fd00::1]/",
		"http://0.0.0.0/",
		"http://meta.test/",
		"http://intra.test/",
		"http://user:pw@example.test/",
		"ftp://example.test/",
	} {
		t.Run(u, func(t *testing.T) {
			resp, err := get(t, c, u)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded", u)
			}
			if !errors.Is(err, ErrForbiddenAddress) && !errors.Is(err, ErrInvalidURL) {
				t.Errorf("GET %s = %v, want a netguard refusal", u, err)
			}
		})
	}
	if got := log.list(); len(got) != 0 {
		t.Errorf("dialled %v", got)
	}
	if n := s.count(t); n != 0 {
		t.Errorf("sink accepted %d connections, want 0", n)
	}
}

// TestRedirectToMetadata: an allowed server (loopback, with AllowPrivate) redirects to
// the metadata service, literally and through a name. AllowPrivate does not allow it.
func TestRedirectToMetadata(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/literal":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
		case "/name":
			http.Redirect(w, r, "http://metadata.test/computeMetadata/v1/", http.StatusTemporaryRedirect)
		case "/mapped":
			http.Redirect(w, r, "http://[::ffff:a9fe:a9fe]/", http.StatusMovedPermanently)
		case "/ecs":
			http.Redirect(w, r, "http://169.254.170.2/v2/credentials/x", http.StatusSeeOther)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s := newSink(t)
	log := &dialLog{}
	g := New(Config{
		AllowPrivate: true,
		Resolver:     newResolver(map[string][]string{"metadata.test": {"169.254.169.254"}}),
		Dial:         loopbackDial(t, log, loopbackOr(s.addr())),
	})
	c := g.HTTPClient(ClientConfig{})
	for _, path := range []string{"/literal", "/name", "/mapped", "/ecs"} {
		t.Run(path, func(t *testing.T) {
			resp, err := get(t, c, srv.URL+path)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s followed the redirect (status %d)", path, resp.StatusCode)
			}
			if !errors.Is(err, ErrMetadataAddress) || !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("GET %s = %v, want ErrMetadataAddress", path, err)
			}
		})
	}
	if got := hits.Load(); got != 4 {
		t.Errorf("server saw %d requests, want 4", got)
	}
	for _, ap := range log.list() {
		if !ap.Addr().IsLoopback() {
			t.Errorf("dialled %v", ap)
		}
	}
	if n := s.count(t); n != 0 {
		t.Errorf("sink accepted %d connections, want 0", n)
	}
}

// TestRedirectToPrivate: without AllowPrivate a public server cannot bounce the client
// into the intranet. The public hop is a documentation address the test allows and
// maps to a loopback server.
func TestRedirectToPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-name":
			http.Redirect(w, r, "http://printer.test/", http.StatusFound)
		case "/to-literal":
			http.Redirect(w, r, "http://192.168.0.1/admin", http.StatusFound)
		case "/to-odd":
			http.Redirect(w, r, "http://0300.0250.0.1/admin", http.StatusFound)
		}
	}))
	defer srv.Close()
	s := newSink(t)
	log := &dialLog{}
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	g := New(Config{
		Allow:    []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		Resolver: newResolver(map[string][]string{"public.test": {"203.0.113.7"}, "printer.test": {"192.168.0.9"}}),
		Dial:     loopbackDial(t, log, func(ap netip.AddrPort) string { return hostPort(t, srv) }),
	})
	c := g.HTTPClient(ClientConfig{})
	for _, path := range []string{"/to-name", "/to-literal", "/to-odd"} {
		resp, err := get(t, c, "http://public.test:"+port+path)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s followed the redirect", path)
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("GET %s = %v, want ErrForbiddenAddress", path, err)
		}
	}
	for _, ap := range log.list() {
		if ap.Addr() != netip.MustParseAddr("203.0.113.7") {
			t.Errorf("dialled %v; only the public hop may be dialled", ap)
		}
	}
	if n := s.count(t); n != 0 {
		t.Errorf("sink accepted %d connections, want 0", n)
	}
}

// TestPublicRedirectFollowed shows the seam: names that resolve to allowed addresses are
// served by a loopback server, redirects between them work, and what was dialled is the
// checked address.
func TestPublicRedirectFollowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			_, port, _ := net.SplitHostPort(r.Host)
			http.Redirect(w, r, "http://other.test:"+port+"/final", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "host=%s", r.Host)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	log := &dialLog{}
	g := New(Config{
		Allow:    []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		Resolver: newResolver(map[string][]string{"public.test": {"198.51.100.1"}, "other.test": {"198.51.100.2"}}),
		Dial:     loopbackDial(t, log, func(netip.AddrPort) string { return hostPort(t, srv) }),
	})
	resp, err := get(t, g.HTTPClient(ClientConfig{}), "http://public.test:"+port+"/start")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(body), "host=other.test:"+port; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	got := log.list()
	if len(got) != 2 || got[0].Addr().String() != "198.51.100.1" || got[1].Addr().String() != "198.51.100.2" {
		t.Errorf("dialled %v, want the two checked addresses", got)
	}
}

func TestRedirectLimit(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()
	g := New(Config{AllowPrivate: true})
	resp, err := get(t, g.HTTPClient(ClientConfig{}), srv.URL+"/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("endless redirects succeeded")
	}
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("err = %v, want ErrTooManyRedirects", err)
	}
	if got := hits.Load(); got != 6 {
		t.Errorf("server saw %d requests, want 6 (the first and 5 redirects)", got)
	}

	hits.Store(0)
	resp, err = get(t, g.HTTPClient(ClientConfig{MaxRedirects: -1}), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits.Load() != 1 {
		t.Errorf("MaxRedirects -1: status %d after %d requests, want 302 after 1", resp.StatusCode, hits.Load())
	}
}

func TestRedirectDowngradeRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the plain-HTTP server was reached")
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/", http.StatusFound)
	}))
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	g := New(Config{AllowPrivate: true})
	c := g.HTTPClient(ClientConfig{TLSConfig: &tls.Config{RootCAs: roots}})
	resp, err := get(t, c, secure.URL+"/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("https-to-http redirect was followed")
	}
	if !errors.Is(err, ErrInvalidURL) {
		t.Errorf("err = %v, want ErrInvalidURL", err)
	}
}

// TestProxyEnvironmentIgnored: a proxy would connect to targets the guard never sees.
func TestProxyEnvironmentIgnored(t *testing.T) {
	s := newSink(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "direct")
	}))
	defer srv.Close()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(k, "http://"+s.addr())
	}
	t.Setenv("NO_PROXY", "")
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	g := New(Config{
		Allow:    []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Resolver: newResolver(map[string][]string{"public.test": {"192.0.2.80"}}),
		Dial:     loopbackDial(t, &dialLog{}, func(netip.AddrPort) string { return hostPort(t, srv) }),
	})
	resp, err := get(t, g.HTTPClient(ClientConfig{}), "http://public.test:"+port+"/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "direct" {
		t.Errorf("body = %q, want direct", body)
	}
	if n := s.count(t); n != 0 {
		t.Errorf("the proxy from the environment got %d connections", n)
	}
}

func TestResponseSizeLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/declared":
			w.Header().Set("Content-Length", "2048")
			w.Write(bytes.Repeat([]byte("a"), 2048))
		case "/streamed":
			for i := 0; i < 4; i++ {
				w.Write(bytes.Repeat([]byte("b"), 512))
				w.(http.Flusher).Flush()
			}
		case "/exact":
			w.Write(bytes.Repeat([]byte("c"), 1024))
		}
	}))
	defer srv.Close()
	c := New(Config{AllowPrivate: true}).HTTPClient(ClientConfig{MaxResponseBytes: 1024})

	if resp, err := get(t, c, srv.URL+"/declared"); !errors.Is(err, ErrResponseTooLarge) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("declared: err = %v, want ErrResponseTooLarge", err)
	}

	resp, err := get(t, c, srv.URL+"/streamed")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, ErrResponseTooLarge) || len(body) != 1024 {
		t.Errorf("streamed: read %d bytes, err %v; want 1024 and ErrResponseTooLarge", len(body), err)
	}

	resp, err = get(t, c, srv.URL+"/exact")
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(body) != 1024 {
		t.Errorf("exact: read %d bytes, err %v; want 1024 and no error", len(body), err)
	}
}

func TestLimitBody(t *testing.T) {
	tests := []struct {
		size, limit int
		wantErr     bool
	}{
		{0, 0, false}, {10, 10, false}, {11, 10, true}, {1 << 16, 100, true}, {99, 100, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-of-%d", tc.size, tc.limit), func(t *testing.T) {
			rc := LimitBody(io.NopCloser(bytes.NewReader(make([]byte, tc.size))), int64(tc.limit))
			got, err := io.ReadAll(rc)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrResponseTooLarge)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if want := min(tc.size, tc.limit); len(got) != want {
				t.Errorf("read %d bytes, want %d", len(got), want)
			}
			if err != nil {
				if _, again := rc.Read(make([]byte, 1)); !errors.Is(again, ErrResponseTooLarge) {
					t.Errorf("read after the limit = %v", again)
				}
			}
		})
	}
}

func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New(Config{AllowPrivate: true}).HTTPClient(ClientConfig{Timeout: 200 * time.Millisecond})
	start := time.Now()
	resp, err := get(t, c, srv.URL+"/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("request to a stalled server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
}
