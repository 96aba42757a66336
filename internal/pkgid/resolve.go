package pkgid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// Errors of a resolution. Each is wrapped with the registry's URL and what was asked.
var (
	// ErrUnavailable: the registry could not be reached or answered, within the timeout
	// (a network error, a 5xx, a 429): nothing can be said about the package.
	ErrUnavailable = errors.New("cannot reach it")
	// ErrNotFound: the registry has no such package, version, tag or image, or will not
	// show it without credentials.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the registry's answer is not what its API documents (not JSON, over the
	// size bound, without an integrity or a digest).
	ErrInvalid = errors.New("invalid answer")
)

// Defaults of Config.
const (
	DefaultNPMRegistry = "https://registry.npmjs.org/"
	DefaultPyPIIndex   = "https://pypi.org"
	DefaultTimeout     = 30 * time.Second
	// DefaultMaxBody bounds one registry answer (an npm packument of a package with
	// thousands of versions is a few MiB in its abbreviated form).
	DefaultMaxBody = 32 << 20
)

// Config configures a Resolver. The zero value resolves against the public registries.
type Config struct {
	// NPMRegistry is the npm registry's base URL; "" means DefaultNPMRegistry.
	NPMRegistry string
	// PyPIIndex is the base URL of a PyPI-compatible index serving the JSON API
	// (/pypi/NAME/json); "" means DefaultPyPIIndex.
	PyPIIndex string
	// OCIRegistries maps a registry host as images name it (docker.io, ghcr.io,
	// 127.0.0.1:5000) to the base URL to ask (https://mirror.example.com); a host not in
	// it is asked at https://HOST (http:// for loopback, Docker Hub at registry-1.docker.io).
	OCIRegistries map[string]string
	// Timeout bounds one resolution, every request and body of it; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBody bounds each answer's body in bytes; 0 means DefaultMaxBody (an OCI manifest
	// is bounded at 4 MiB whatever it is).
	MaxBody int64
	// HTTPClient makes the requests; nil means a client of its own (proxy from the
	// environment, HTTP/2, no overall timeout: Timeout bounds each resolution).
	HTTPClient *http.Client
	// TLSRoots verifies a remote server's certificate chain for SPKI; nil means the system
	// roots.
	TLSRoots *x509.CertPool
}

// Resolver resolves package references against their registries. It is safe for
// concurrent use.
type Resolver struct {
	cfg    Config
	client *http.Client
}

// New returns a Resolver for cfg.
func New(cfg Config) *Resolver {
	if cfg.NPMRegistry == "" {
		cfg.NPMRegistry = DefaultNPMRegistry
	}
	if cfg.PyPIIndex == "" {
		cfg.PyPIIndex = DefaultPyPIIndex
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	c := cfg.HTTPClient
	if c == nil {
		c = &http.Client{Transport: http.DefaultTransport}
	}
	return &Resolver{cfg: cfg, client: c}
}

// NPMRegistry and PyPIIndex are the registries r asks, for messages.
func (r *Resolver) NPMRegistry() string { return r.cfg.NPMRegistry }

// PyPIIndex is the index r asks.
func (r *Resolver) PyPIIndex() string { return r.cfg.PyPIIndex }

// Resolve returns the package ref names now, as its registry says: for npm and PyPI the
// version its spec resolves to (the exact version, a dist-tag's, the highest in a range)
// and that version's content hashes; for OCI the digest its tag names (or the digest the
// reference names, without the network); for a remote server its URL (SPKI pins the TLS
// key). Errors wrap ErrUnavailable, ErrNotFound or ErrInvalid and name the registry.
func (r *Resolver) Resolve(ctx context.Context, ref Ref) (lockfile.Package, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var p lockfile.Package
	var err error
	switch ref.Type {
	case lockfile.PackageNPM:
		p, err = r.resolveNPM(ctx, ref)
	case lockfile.PackagePyPI:
		p, err = r.resolvePyPI(ctx, ref)
	case lockfile.PackageOCI:
		if ref.Digest != "" {
			return ref.Package(), nil // the config names the content: nothing to ask
		}
		p, err = r.resolveOCI(ctx, ref)
	case lockfile.PackageRemote:
		return ref.Package(), nil
	default:
		return p, fmt.Errorf("%w: unknown package type %q", ErrInvalid, ref.Type)
	}
	if err != nil {
		return lockfile.Package{}, err
	}
	if err := p.Validate(); err != nil {
		return lockfile.Package{}, fmt.Errorf("%s: %w: %v", ref.Name, ErrInvalid, err)
	}
	return p, nil
}

// WithVersion returns ref asking for exactly version (npm, PyPI): how the locked version is
// checked when the config's spec floats or names it.
func (ref Ref) WithVersion(version string) Ref {
	ref.Exact, ref.Spec, ref.Floating, ref.Why = version, version, false, ""
	if ref.Type == lockfile.PackagePyPI {
		ref.Spec = "==" + version
	}
	return ref
}

// answer is a registry's answer to one request, its body read and closed.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request and reads at most max bytes of the answer's body; a longer body is
// ErrInvalid, a network error or timeout ErrUnavailable. what names the registry.
func (r *Resolver) do(ctx context.Context, method, u string, hdr http.Header, max int64, what string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w: %v", what, ErrInvalid, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "agentgate (package identity; docs/agentgate.md)")
	resp, err := r.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w: %v", what, ErrUnavailable, netReason(ctx, err, r.cfg.Timeout))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w: reading its answer: %v", what, ErrUnavailable, netReason(ctx, err, r.cfg.Timeout))
	}
	if int64(len(body)) > max {
		return answer{}, fmt.Errorf("%s: %w: its answer is larger than %d bytes", what, ErrInvalid, max)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// netReason says why a request failed in a few words.
func netReason(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return "canceled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// statusError is the error of an unexpected HTTP status.
func statusError(what string, code int) error {
	if code >= 500 || code == http.StatusTooManyRequests {
		return fmt.Errorf("%s: %w: it answered HTTP %d", what, ErrUnavailable, code)
	}
	return fmt.Errorf("%s: %w: it answered HTTP %d", what, ErrInvalid, code)
}

// SPKI connects to a remote server's https URL and returns "sha256:" and the hex SHA-256 of
// its TLS leaf certificate's SubjectPublicKeyInfo, after verifying the chain (Config.TLSRoots
// or the system roots) for the URL's host.
func (r *Resolver) SPKI(ctx context.Context, rawURL string) (string, error) {
	return r.SPKIVia(ctx, rawURL, nil)
}

// DialFunc connects to a network address, such as netguard.Guard.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// SPKIVia is SPKI with the TCP connection made by dial (nil: a plain dialer): the crawl
// checks a catalog server's TLS key through the same address policy as its listing.
func (r *Resolver) SPKIVia(ctx context.Context, rawURL string, dial DialFunc) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" {
		return "", fmt.Errorf("%s: %w: a TLS key can be pinned only for an https URL", rawURL, ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %v", u.Scheme+"://"+u.Host, ErrUnavailable, netReason(ctx, err, r.cfg.Timeout))
	}
	conn := tls.Client(raw, &tls.Config{ServerName: u.Hostname(), RootCAs: r.cfg.TLSRoots, MinVersion: tls.VersionTLS12})
	defer conn.Close()
	if err := conn.HandshakeContext(ctx); err != nil {
		return "", fmt.Errorf("%s: %w: %v", u.Scheme+"://"+u.Host, ErrUnavailable, netReason(ctx, err, r.cfg.Timeout))
	}
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", fmt.Errorf("%s: %w: no certificate", u.Host, ErrInvalid)
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// joinURL appends escaped path elements to a base URL.
func joinURL(base string, elems ...string) string {
	var b bytes.Buffer
	b.WriteString(strings.TrimSuffix(base, "/"))
	for _, e := range elems {
		b.WriteByte('/')
		b.WriteString(e)
	}
	return b.String()
}
