package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
)

const (
	pinIntegrity1 = "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ=="
	pinIntegrity2 = "sha512-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=="
)

// npmAt is an npm registry on loopback serving @acme/weather, whose integrity per version
// the test changes.
type npmAt struct {
	mu       sync.Mutex
	versions map[string]string
	down     atomic.Bool
	srv      *httptest.Server
}

func newNPMAt(t *testing.T) *npmAt {
	f := &npmAt{versions: map[string]string{"1.0.0": pinIntegrity1}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		name, version, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		if name != "@acme%2Fweather" {
			http.NotFound(w, r)
			return
		}
		if version == "" {
			vs := map[string]any{}
			for v, i := range f.versions {
				vs[v] = map[string]any{"dist": map[string]string{"integrity": i}}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"dist-tags": map[string]string{"latest": "1.0.0"}, "versions": vs})
			return
		}
		i, ok := f.versions[version]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "@acme/weather", "version": version, "dist": map[string]string{"integrity": i}})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *npmAt) set(version, integrity string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[version] = integrity
}

// listedServer is a server of `server list --json`.
type listedServer struct {
	Name      string
	LastCrawl int64
	Package   *struct {
		Seq      int64
		Spec     string
		Identity struct{ Type, Name, Version, Integrity, SPKI string }
	}
}

func listServers(t *testing.T, run func(args ...string) result) map[string]listedServer {
	t.Helper()
	r := run("server", "list", "--json")
	var out struct{ Servers []listedServer }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("server list --json (%v): %s", err, r)
	}
	m := map[string]listedServer{}
	for _, s := range out.Servers {
		m[s.Name] = s
	}
	return m
}

// An npm pin (issue 31 item 5): `server pin` resolves a floating spec to its exact
// version and integrity and records it (audited; list shows it); the crawl lists the
// server while the registry serves the same content, and refuses it — CRITICAL
// package-integrity-changed, nothing recorded for it, the other server crawled — once the
// same version is re-published with other content, or when the registry cannot say.
func TestServerPinNPM(t *testing.T) {
	dir := t.TempDir()
	reg := newNPMAt(t)
	env := map[string]string{"TOOLWARRANT_NPM_REGISTRY": reg.srv.URL}
	run := func(args ...string) result { return runCLI(t, dir, env, args...) }
	wx, other := httptest.NewServer(fixture.New(forecast)), httptest.NewServer(fixture.New(alerts))
	defer wx.Close()
	defer other.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", wx.URL + "/mcp", "--allow-private"}, {"server", "add", "other", other.URL + "/mcp", "--allow-private"}} {
		if r := run(args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	for _, bad := range [][]string{{"server", "pin", "wx", "cargo:serde@1"}, {"server", "pin", "wx", "npm:"}, {"server", "pin", "nosuch", "tls"}, {"server", "pin", "wx"}} {
		if r := run(bad...); r.code != cli.ExitUsage || r.stderr == "" {
			t.Errorf("%v: want a usage error, got %s", bad, r)
		}
	}
	r := run("server", "pin", "wx", "npm:@acme/weather@latest")
	if r.code != 0 || !strings.Contains(r.stdout, "pinned server wx to npm:@acme/weather@1.0.0 sha512-") || !strings.Contains(r.stderr, "floats") {
		t.Fatalf("server pin @latest: %s", r)
	}
	if r := run("server", "pin", "wx", "npm:@acme/weather@1.0.0"); r.code != 0 || !strings.Contains(r.stdout, "already pinned") {
		t.Errorf("pinning the same again: %s", r)
	}
	if r := run("server", "pin", "wx", "npm:@acme/weather@9.9.9"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "nothing was recorded") {
		t.Errorf("pinning a version the registry does not have: %s", r)
	}
	s := listServers(t, run)
	if p := s["wx"].Package; p == nil || p.Seq != 1 || p.Spec != "npm:@acme/weather@1.0.0" || p.Identity.Integrity != pinIntegrity1 || p.Identity.Version != "1.0.0" {
		t.Fatalf("server list --json: wx's pin %+v", p)
	}
	if s["other"].Package != nil {
		t.Errorf("other has a pin: %+v", s["other"].Package)
	}
	if r := run("server", "list"); !strings.Contains(r.stdout, "PACKAGE") || !strings.Contains(r.stdout, "npm:@acme/weather@1.0.0 sha512-") {
		t.Errorf("server list: %s", r)
	}

	if r := run("crawl"); r.code == cli.ExitUsage {
		t.Fatalf("crawl with the package as pinned: %s", r)
	}
	if s := listServers(t, run); s["wx"].LastCrawl != 1 || s["other"].LastCrawl != 1 {
		t.Fatalf("after the first crawl: %+v", s)
	}

	// The same version re-published with other content.
	reg.set("1.0.0", pinIntegrity2)
	r = run("crawl", "--json")
	if r.code != cli.ExitUsage || !strings.Contains(r.stdout, "CRITICAL package-integrity-changed") || !strings.Contains(r.stdout, "toolwarrant server pin wx") {
		t.Fatalf("crawl after a re-publish: %s", r)
	}
	if s := listServers(t, run); s["wx"].LastCrawl != 1 || s["other"].LastCrawl != 2 {
		t.Errorf("after the refused crawl: wx crawled %d times (want 1), other %d (want 2)", s["wx"].LastCrawl, s["other"].LastCrawl)
	}
	// The registry down: it cannot be decided, so it is refused too.
	reg.set("1.0.0", pinIntegrity1)
	reg.down.Store(true)
	if r := run("crawl", "wx"); r.code != cli.ExitUsage || !strings.Contains(r.stdout+r.stderr, "cannot be checked") {
		t.Errorf("crawl with the registry down: %s", r)
	}
	reg.down.Store(false)
	// Re-pinned to what the registry now serves: crawled again.
	reg.set("1.0.0", pinIntegrity2)
	if r := run("server", "pin", "wx", "npm:@acme/weather@1.0.0"); r.code != 0 || !strings.Contains(r.stdout, "(pin 2)") {
		t.Fatalf("pinning again: %s", r)
	}
	if r := run("crawl", "wx"); r.code == cli.ExitUsage {
		t.Errorf("crawl after pinning again: %s", r)
	}
	if r := run("audit", "verify"); r.code != 0 {
		t.Errorf("audit verify with the pins in the log: %s", r)
	}
	if r := run("audit", "export"); !strings.Contains(r.stdout, `"package_pinned"`) || !strings.Contains(r.stdout, pinIntegrity1) || !strings.Contains(r.stdout, pinIntegrity2) {
		t.Errorf("audit export does not show both pins: %.2000s", r)
	}
}

// A TLS pin: the server's key is pinned, the crawl lists it while it answers with that
// key and refuses it once it answers with another (trusted) certificate.
func TestServerPinTLS(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewUnstartedServer(fixture.New(forecast))
	srv.StartTLS()
	defer srv.Close()
	first := srv.TLS.Certificates[0]
	second, roots := selfSigned(t, srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	var useSecond atomic.Bool
	srv.TLS.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := first
		if useSecond.Load() {
			c = second
		}
		return &tls.Config{Certificates: []tls.Certificate{c}, NextProtos: srv.TLS.NextProtos}, nil
	}
	d := deps{now: time.Now, getwd: func() (string, error) { return dir, nil }, identity: func() string { return "tester@example" }, version: "test"}
	d.crawl.TLSConfig = &tls.Config{RootCAs: roots}
	run := func(args ...string) result {
		var out, errb bytes.Buffer
		e := cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		return result{cli.Run(ctx, newRoot(e, d), args, e), out.String(), errb.String()}
	}
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}} {
		if r := run(args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	r := run("server", "pin", "wx", "tls", "--json")
	var pinned struct {
		Changed bool
		Pin     struct {
			Identity struct{ Type, URL, SPKI string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &pinned); err != nil || r.code != 0 || !pinned.Changed || pinned.Pin.Identity.Type != "remote" ||
		!strings.HasPrefix(pinned.Pin.Identity.SPKI, "sha256:") || pinned.Pin.Identity.URL != srv.URL+"/mcp" {
		t.Fatalf("server pin tls (%v): %s", err, r)
	}
	if r := run("crawl"); r.code == cli.ExitUsage {
		t.Fatalf("crawl with the pinned key: %s", r)
	}
	useSecond.Store(true)
	if r := run("crawl"); r.code != cli.ExitUsage || !strings.Contains(r.stdout, "CRITICAL package-integrity-changed") || !strings.Contains(r.stdout, "/spki") {
		t.Fatalf("crawl with another key: %s", r)
	}
	if s := listServers(t, run); s["wx"].LastCrawl != 1 {
		t.Errorf("the refused crawl was recorded: LastCrawl %d", s["wx"].LastCrawl)
	}
}

// selfSigned makes a certificate for 127.0.0.1 and returns it with a pool trusting it
// and everything in base.
func selfSigned(t *testing.T, base *x509.CertPool) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "second"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := base.Clone()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
