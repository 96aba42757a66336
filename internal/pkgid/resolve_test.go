package pkgid

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

const (
	integrityA = "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ=="
	integrityB = "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
)

// npmRegistry serves the two npm registry endpoints the resolver uses, for @scope/pkg:
// versions 1.0.0 (integrity A), 1.1.0 (B), 2.0.0-beta.1; latest is 1.1.0.
func npmRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	doc := `{"dist-tags":{"latest":"1.1.0","next":"2.0.0-beta.1"},"versions":{
		"1.0.0":{"dist":{"integrity":"` + integrityA + `"}},
		"1.1.0":{"dist":{"integrity":"` + integrityB + `"}},
		"2.0.0-beta.1":{"dist":{"shasum":"0123456789abcdef0123456789abcdef01234567"}}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/@scope%2Fpkg":
			if !strings.Contains(r.Header.Get("Accept"), "application/vnd.npm.install-v1+json") {
				t.Errorf("packument asked without the abbreviated media type: %q", r.Header.Get("Accept"))
			}
			fmt.Fprint(w, doc)
		case "/@scope%2Fpkg/1.0.0":
			fmt.Fprint(w, `{"name":"@scope/pkg","version":"1.0.0","dist":{"integrity":"`+integrityA+`"}}`)
		case "/@scope%2Fpkg/9.9.9":
			fmt.Fprint(w, `{"name":"@scope/pkg","version":"1.0.0","dist":{"integrity":"`+integrityA+`"}}`) // lies
		case "/slow/1.0.0":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/down/1.0.0":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/huge/1.0.0":
			fmt.Fprint(w, `{"version":"1.0.0","x":"`+strings.Repeat("x", 4096)+`"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func npmRef(t *testing.T, spec string) Ref {
	t.Helper()
	ref, ok, err := Parse("npx", []string{"-y", spec})
	if !ok || err != nil {
		t.Fatalf("Parse(npx -y %s) = %v, %v", spec, ok, err)
	}
	return ref
}

func TestResolveNPM(t *testing.T) {
	srv := npmRegistry(t)
	r := New(Config{NPMRegistry: srv.URL + "/", Timeout: 2 * time.Second})
	tests := []struct {
		spec, version, integrity string
	}{
		{"@scope/pkg@1.0.0", "1.0.0", integrityA},
		{"@scope/pkg", "1.1.0", integrityB},
		{"@scope/pkg@latest", "1.1.0", integrityB},
		{"@scope/pkg@^1.0.0", "1.1.0", integrityB},                               // latest satisfies the range
		{"@scope/pkg@~1.0.0", "1.0.0", integrityA},                               // the highest that does
		{"@scope/pkg@next", "2.0.0-beta.1", "sha1-ASNFZ4mrze8BI0VniavN7wEjRWc="}, // shasum as SRI, as npm's lockfile does
	}
	for _, tc := range tests {
		p, err := r.Resolve(context.Background(), npmRef(t, tc.spec))
		if err != nil || p.Version != tc.version || p.Integrity != tc.integrity || p.Name != "@scope/pkg" || p.Type != lockfile.PackageNPM {
			t.Errorf("Resolve(%s) = %+v, %v; want %s %s", tc.spec, p, err, tc.version, tc.integrity)
		}
	}
	failing := []struct {
		spec string
		want error
		says string
	}{
		{"@scope/pkg@3.0.0", ErrNotFound, "no version 3.0.0 of @scope/pkg"},
		{"@scope/pkg@^5", ErrNotFound, "no version of @scope/pkg satisfies ^5"},
		{"@scope/pkg@beta", ErrNotFound, `no dist-tag "beta"`},
		{"@scope/pkg@9.9.9", ErrInvalid, `it answered version "1.0.0"`},
		{"other", ErrNotFound, "no package other"},
		{"down@1.0.0", ErrUnavailable, "HTTP 503"},
		{"slow@1.0.0", ErrUnavailable, "no answer within 200ms"},
		{"huge@1.0.0", ErrInvalid, "larger than 1024 bytes"},
	}
	r = New(Config{NPMRegistry: srv.URL, Timeout: 200 * time.Millisecond, MaxBody: 1024})
	for _, tc := range failing {
		_, err := r.Resolve(context.Background(), npmRef(t, tc.spec))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("Resolve(%s) = %v; want %v saying %q and naming the registry", tc.spec, err, tc.want, tc.says)
		}
	}
	// A registry that is not there is unavailable, quickly.
	srv.Close()
	start := time.Now()
	if _, err := r.Resolve(context.Background(), npmRef(t, "@scope/pkg@1.0.0")); !errors.Is(err, ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Errorf("closed registry: %v after %s", err, time.Since(start))
	}
}

func TestResolvePyPI(t *testing.T) {
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	file := func(name string, yanked bool) string {
		return fmt.Sprintf(`{"filename":%q,"digests":{"sha256":%q},"yanked":%v}`, name, hash(name), yanked)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pypi/mcp-server-fetch/json":
			fmt.Fprintf(w, `{"info":{"version":"2025.4.7"},"urls":[%s,%s],"releases":{"2025.4.7":[%s],"2024.1.0":[%s],"2024.2.0":[%s]}}`,
				file("f-2025.4.7.tar.gz", false), file("f-2025.4.7-py3-none-any.whl", false), file("x", false),
				file("f-2024.1.0.tar.gz", false), file("f-2024.2.0.tar.gz", true))
		case "/pypi/mcp-server-fetch/2025.4.7/json":
			fmt.Fprintf(w, `{"info":{"version":"2025.4.7"},"urls":[%s]}`, file("f-2025.4.7.tar.gz", false))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r := New(Config{PyPIIndex: srv.URL, Timeout: 2 * time.Second})
	ref := func(args ...string) Ref {
		ref, ok, err := Parse("uvx", args)
		if !ok || err != nil {
			t.Fatalf("Parse(uvx %v) = %v, %v", args, ok, err)
		}
		return ref
	}
	p, err := r.Resolve(context.Background(), ref("mcp-server-fetch@2025.4.7"))
	if err != nil || p.Version != "2025.4.7" || len(p.Files) != 1 || p.Files[0].SHA256 != hash("f-2025.4.7.tar.gz") {
		t.Errorf("exact: %+v, %v", p, err)
	}
	p, err = r.Resolve(context.Background(), ref("mcp-server-fetch"))
	if err != nil || p.Version != "2025.4.7" || len(p.Files) != 2 || p.Files[0].Filename != "f-2025.4.7-py3-none-any.whl" {
		t.Errorf("latest: %+v, %v (files sorted by name)", p, err)
	}
	// The newest release a specifier allows, a release whose files are all yanked left out.
	p, err = r.Resolve(context.Background(), ref("--from", "mcp-server-fetch<2025", "mcp-server-fetch"))
	if err != nil || p.Version != "2024.1.0" {
		t.Errorf("specifier: %+v, %v", p, err)
	}
	if _, err := r.Resolve(context.Background(), ref("mcp-server-fetch@1.0")); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
}

// ociRegistry serves one image, library/fetch:1.0, behind a bearer token flow as Docker
// Hub does; withDigest false leaves out Docker-Content-Digest, so the manifest is hashed.
func ociRegistry(t *testing.T, withDigest bool) (*httptest.Server, string, *atomic.Int32) {
	t.Helper()
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`
	sum := sha256.Sum256([]byte(manifest))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var tokens atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token":
			if r.URL.Query().Get("scope") != "repository:library/fetch:pull" || r.URL.Query().Get("service") != "registry.test" {
				t.Errorf("token asked for %s", r.URL.RawQuery)
			}
			tokens.Add(1)
			fmt.Fprint(w, `{"token":"tok"}`)
		case r.Header.Get("Authorization") != "Bearer tok":
			w.Header().Set("Www-Authenticate", `Bearer realm="`+srv.URL+`/token",service="registry.test",scope="repository:library/fetch:pull"`)
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v2/library/fetch/manifests/1.0":
			if !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			if withDigest {
				w.Header().Set("Docker-Content-Digest", digest)
			}
			if r.Method == http.MethodGet {
				fmt.Fprint(w, manifest)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, digest, &tokens
}

func TestResolveOCI(t *testing.T) {
	for _, withDigest := range []bool{true, false} {
		srv, digest, tokens := ociRegistry(t, withDigest)
		host := strings.TrimPrefix(srv.URL, "http://")
		ref, ok, err := Parse("docker", []string{"run", "-i", "--rm", "-e", "TOKEN", host + "/library/fetch:1.0"})
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		p, err := New(Config{Timeout: 2 * time.Second}).Resolve(context.Background(), ref)
		if err != nil || p.Digest != digest || p.Tag != "1.0" || p.Name != host+"/library/fetch" || tokens.Load() != 1 {
			t.Errorf("withDigest %v: %+v, %v (tokens %d)", withDigest, p, err, tokens.Load())
		}
		if got := ref.PinnedCommand(p); got != "docker run -i --rm -e TOKEN "+host+"/library/fetch:1.0@"+digest {
			t.Errorf("pinned: %s", got)
		}
		missing, _, _ := Parse("docker", []string{"run", host + "/library/fetch:2.0"})
		if _, err := New(Config{Timeout: 2 * time.Second}).Resolve(context.Background(), missing); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing tag: %v", err)
		}
	}
	// A reference by digest needs no registry.
	ref, _, _ := Parse("podman", []string{"run", "ghcr.io/x/y@sha256:" + strings.Repeat("ab", 32)})
	p, err := New(Config{Timeout: time.Millisecond}).Resolve(context.Background(), ref)
	if err != nil || p.Digest != "sha256:"+strings.Repeat("ab", 32) || !ref.ContentPinned() {
		t.Errorf("by digest: %+v, %v", p, err)
	}
}

func TestSPKI(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	sum := sha256.Sum256(srv.Certificate().RawSubjectPublicKeyInfo)
	want := "sha256:" + hex.EncodeToString(sum[:])
	r := New(Config{TLSRoots: roots, Timeout: 2 * time.Second})
	// httptest's certificate names 127.0.0.1 and example.com.
	got, err := r.SPKI(context.Background(), srv.URL+"/mcp")
	if err != nil || got != want {
		t.Errorf("SPKI = %s, %v; want %s", got, err, want)
	}
	// An untrusted chain is refused, not pinned.
	if _, err := New(Config{Timeout: 2 * time.Second}).SPKI(context.Background(), srv.URL); !errors.Is(err, ErrUnavailable) {
		t.Errorf("untrusted chain: %v", err)
	}
	if _, err := r.SPKI(context.Background(), "http://127.0.0.1/mcp"); !errors.Is(err, ErrInvalid) {
		t.Errorf("http URL: %v", err)
	}
}
