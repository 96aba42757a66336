package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/readbound"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Defaults of the toolwarrant configuration.
const (
	DefaultToolwarrantCatalog     = "toolwarrant.db"
	DefaultCrawlConcurrency       = 4
	MaxCrawlConcurrency           = 64
	DefaultCrawlTimeout           = 30 * time.Second
	DefaultCrawlMaxResponseBytes  = 10 << 20
	maxCrawlMaxResponseBytesLimit = 1 << 30
	// DefaultCrawlMaxListingBytes and DefaultCrawlMaxServerBytes are crawler's defaults.
	DefaultCrawlMaxListingBytes = 24 << 20
	DefaultCrawlMaxServerBytes  = 32 << 20
)

// Toolwarrant is the configuration of the toolwarrant CLI read from the environment.
// Command-line flags override it (flag > environment > default).
type Toolwarrant struct {
	// Catalog is TOOLWARRANT_CATALOG, the catalog file. Default "toolwarrant.db" in the
	// working directory.
	Catalog string
	// LogKey is TOOLWARRANT_LOG_KEY, the private key file that signs every audit entry
	// (created 0600 by toolwarrant init). Default "" (the CLI uses the catalog path with
	// ".logkey" appended).
	LogKey string
	// SSHAuthSock is SSH_AUTH_SOCK, the ssh-agent socket used by --agent to sign approvals
	// and trust changes. Default "" (no agent).
	SSHAuthSock string
	// Identity is TOOLWARRANT_IDENTITY, who this process acts as: recorded as the crawler
	// of every observation and the adder of every server. Default "" (the CLI uses
	// user@host).
	Identity string
	// CrawlConcurrency is TOOLWARRANT_CRAWL_CONCURRENCY, how many servers one crawl lists
	// at once: 1 to 64. Default 4.
	CrawlConcurrency int
	// CrawlTimeout is TOOLWARRANT_CRAWL_TIMEOUT, the bound on one server's listing
	// (connect, handshake, every page), a Go duration. Default 30s.
	CrawlTimeout time.Duration
	// CrawlMaxResponseBytes is TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES, the bound on each HTTP
	// response body from an upstream, in bytes (1 KiB to 1 GiB). Default 10 MiB.
	CrawlMaxResponseBytes int64
	// CrawlMaxListingBytes is TOOLWARRANT_CRAWL_MAX_LISTING_BYTES, the bound on all pages of
	// one server's tools/list together (a size: 24MiB, or bytes; 1 KiB to 1 GiB). Default
	// 24 MiB.
	CrawlMaxListingBytes int64
	// CrawlMaxServerBytes is TOOLWARRANT_CRAWL_MAX_SERVER_BYTES, the bound on everything one
	// server sends in one crawl, across bodies, event streams and pages (1 KiB to 1 GiB).
	// Default 32 MiB. A crawl holds at most about CrawlConcurrency times this.
	CrawlMaxServerBytes int64
	// CatalogBlobBucket is CATALOG_BLOB_BUCKET, the S3 bucket of the DynamoDB catalog's
	// large objects (template.yaml's CatalogBlobBucket), read by serve with --store
	// dynamodb:TABLE (--blob-bucket overrides it). Default "": none.
	CatalogBlobBucket string
	// S3PathStyle is TOOLWARRANT_S3_PATH_STYLE=1: address that bucket path-style
	// (emulators). Default false.
	S3PathStyle bool
	// Remote is TOOLWARRANT_REMOTE, the approvals API (the stack's ApprovalsApiUrl) that
	// list, show, diff, approve, reject, rollback and audit export use instead of the catalog
	// file. Default "" (the local catalog).
	Remote string
	// TilesDir is TOOLWARRANT_TILES_DIR, the directory `audit checkpoint` publishes the
	// audit tree to as static c2sp.org/tlog-tiles after each checkpoint (and the default
	// --out of `tlog tiles`). Default "": no tiles.
	TilesDir string
	// NPMRegistry is TOOLWARRANT_NPM_REGISTRY, the npm registry that `server pin` and the
	// crawl resolve npm package pins against. Default "": https://registry.npmjs.org/.
	NPMRegistry string
	// PyPIIndex is TOOLWARRANT_PYPI_INDEX, the PyPI-compatible index (its JSON API) of
	// PyPI package pins. Default "": https://pypi.org.
	PyPIIndex string
}

// LogValue logs the effective configuration (it holds no secret).
func (c Toolwarrant) LogValue() slog.Value {
	return slog.GroupValue(slog.String("catalog", c.Catalog), slog.String("log_key", c.LogKey), slog.String("identity", c.Identity),
		slog.Int("crawl_concurrency", c.CrawlConcurrency), slog.Duration("crawl_timeout", c.CrawlTimeout),
		slog.Int64("crawl_max_response_bytes", c.CrawlMaxResponseBytes), slog.Int64("crawl_max_listing_bytes", c.CrawlMaxListingBytes),
		slog.Int64("crawl_max_server_bytes", c.CrawlMaxServerBytes), slog.String("catalog_blob_bucket", c.CatalogBlobBucket), slog.String("remote", c.Remote),
		slog.String("tiles_dir", c.TilesDir), slog.String("npm_registry", c.NPMRegistry), slog.String("pypi_index", c.PyPIIndex))
}

// LoadToolwarrant reads the toolwarrant configuration through getenv and reports every
// problem together.
func LoadToolwarrant(getenv func(string) string) (Toolwarrant, error) {
	c := Toolwarrant{Catalog: DefaultToolwarrantCatalog, CrawlConcurrency: DefaultCrawlConcurrency,
		CrawlTimeout: DefaultCrawlTimeout, CrawlMaxResponseBytes: DefaultCrawlMaxResponseBytes,
		CrawlMaxListingBytes: DefaultCrawlMaxListingBytes, CrawlMaxServerBytes: DefaultCrawlMaxServerBytes}
	var errs []error
	if v := strings.TrimSpace(getenv("TOOLWARRANT_CATALOG")); v != "" {
		c.Catalog = v
	}
	c.LogKey = strings.TrimSpace(getenv("TOOLWARRANT_LOG_KEY"))
	c.Remote = strings.TrimSpace(getenv("TOOLWARRANT_REMOTE"))
	c.TilesDir = strings.TrimSpace(getenv("TOOLWARRANT_TILES_DIR"))
	for _, r := range []struct {
		name string
		dst  *string
	}{{"TOOLWARRANT_NPM_REGISTRY", &c.NPMRegistry}, {"TOOLWARRANT_PYPI_INDEX", &c.PyPIIndex}} {
		v := strings.TrimSpace(getenv(r.name))
		if v != "" && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			errs = append(errs, fmt.Errorf("%s=%q must be an http:// or https:// URL", r.name, v))
		}
		*r.dst = v
	}
	if strings.Contains(c.TilesDir, "://") {
		errs = append(errs, fmt.Errorf("TOOLWARRANT_TILES_DIR=%q must be a directory (publish to S3 with 'toolwarrant tlog tiles --out s3://BUCKET/PREFIX', or TOOLWARRANT_TILES_BUCKET on the checkpoint function)", c.TilesDir))
	}
	c.SSHAuthSock = strings.TrimSpace(getenv("SSH_AUTH_SOCK"))
	c.Identity = strings.TrimSpace(getenv("TOOLWARRANT_IDENTITY"))
	if strings.ContainsAny(c.Identity, "\r\n\t") {
		errs = append(errs, errors.New("TOOLWARRANT_IDENTITY must be one line"))
	}
	if v := strings.TrimSpace(getenv("TOOLWARRANT_CRAWL_CONCURRENCY")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxCrawlConcurrency {
			errs = append(errs, fmt.Errorf("TOOLWARRANT_CRAWL_CONCURRENCY=%q must be a whole number from 1 to %d", v, MaxCrawlConcurrency))
		} else {
			c.CrawlConcurrency = n
		}
	}
	if v := strings.TrimSpace(getenv("TOOLWARRANT_CRAWL_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("TOOLWARRANT_CRAWL_TIMEOUT=%q must be a positive duration such as 30s", v))
		} else {
			c.CrawlTimeout = d
		}
	}
	crawlSize(getenv, "TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES", &c.CrawlMaxResponseBytes, &errs)
	crawlSize(getenv, "TOOLWARRANT_CRAWL_MAX_LISTING_BYTES", &c.CrawlMaxListingBytes, &errs)
	crawlSize(getenv, "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES", &c.CrawlMaxServerBytes, &errs)
	c.CatalogBlobBucket = catalogBlobBucket(getenv, &errs)
	boolVar(getenv, "TOOLWARRANT_S3_PATH_STYLE", &c.S3PathStyle, &errs)
	return c, errors.Join(errs...)
}

// crawlSize reads one of the crawl's read bounds: a size (16MiB) or a number of bytes,
// from 1 KiB to 1 GiB.
func crawlSize(getenv func(string) string, name string, dst *int64, errs *[]error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return
	}
	n, err := readbound.ParseSize(v)
	if err != nil || n < 1024 || n > maxCrawlMaxResponseBytesLimit {
		*errs = append(*errs, fmt.Errorf("%s=%q must be a size from 1KiB to 1GiB, such as 10MiB, or a number of bytes from 1024 to %d", name, v, maxCrawlMaxResponseBytesLimit))
		return
	}
	*dst = n
}

// ParseHeaderEnv parses a --header-env value, "Header=ENVVAR": the header to send and the
// environment variable holding its value at crawl time.
func ParseHeaderEnv(s string) (warrant.HeaderRef, error) {
	k, v, ok := strings.Cut(s, "=")
	h := warrant.HeaderRef{Header: strings.TrimSpace(k), Env: strings.TrimSpace(v)}
	if !ok || h.Header == "" || h.Env == "" {
		return h, fmt.Errorf("--header-env %q must be HEADER=ENVVAR, such as Authorization=WEATHER_TOKEN (the variable holds the value; the value itself is never stored)", s)
	}
	if err := h.Validate(); err != nil {
		return h, fmt.Errorf("--header-env %q: %w", s, err)
	}
	return h, nil
}

// Headers are header values resolved from the environment. They are secrets: LogValue and
// String show only the header names.
type Headers map[string]string

// LogValue shows the header names only.
func (h Headers) LogValue() slog.Value { return slog.StringValue(h.String()) }

// String lists the header names, values redacted.
func (h Headers) String() string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k+": <redacted>")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// SecretReader reads the value of a header that names a secret (a Secrets Manager secret
// or SSM parameter ARN). Its errors must never hold the value.
type SecretReader func(ctx context.Context, arn string) (string, error)

// HeaderResolver is ResolveHeaders over getenv and secrets as a crawl run's
// warrant.HeaderResolver: environment variables in the CLI (secrets nil), Secrets Manager
// and SSM too in the crawl function.
func HeaderResolver(getenv func(string) string, secrets SecretReader) warrant.HeaderResolver {
	return func(ctx context.Context, s warrant.Server) (map[string]string, error) {
		return ResolveHeaders(ctx, getenv, secrets, s.Name, s.Headers)
	}
}

// ResolveHeaders reads the value of each of server's headers: from its environment variable
// through getenv, or from its secret through secrets (nil where secrets cannot be read:
// the embedded CLI). A value that is missing or empty, or holds a line break, is an error
// naming the server, the header and the variable or secret — never the value. Every
// problem is reported together.
func ResolveHeaders(ctx context.Context, getenv func(string) string, secrets SecretReader, server string, refs []warrant.HeaderRef) (Headers, error) {
	out := Headers{}
	var errs []error
	for _, r := range refs {
		var v, from string
		if r.Secret != "" {
			from = "secret " + r.Secret
			if secrets == nil {
				errs = append(errs, fmt.Errorf("server %q: header %s: %s is read only by the crawl function on AWS; here, name an environment variable (--header-env)", server, r.Header, from))
				continue
			}
			var err error
			if v, err = secrets(ctx, r.Secret); err != nil {
				errs = append(errs, fmt.Errorf("server %q: header %s: %w", server, r.Header, err))
				continue
			}
		} else {
			from = "environment variable " + r.Env
			v = getenv(r.Env)
		}
		switch {
		case v == "":
			errs = append(errs, fmt.Errorf("server %q: header %s: %s is not set or empty", server, r.Header, from))
		case strings.ContainsAny(v, "\r\n\x00"):
			errs = append(errs, fmt.Errorf("server %q: header %s: %s holds a line break or NUL, which cannot be sent in a header", server, r.Header, from))
		default:
			out[r.Header] = v
		}
	}
	return out, errors.Join(errs...)
}

// MatchARN reports whether arn matches an IAM resource pattern (* any run, ? one character).
func MatchARN(pattern, arn string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			pattern = pattern[1:]
			for i := 0; i <= len(arn); i++ {
				if MatchARN(pattern, arn[i:]) {
					return true
				}
			}
			return false
		case '?':
			if arn == "" {
				return false
			}
		default:
			if arn == "" || arn[0] != pattern[0] {
				return false
			}
		}
		pattern, arn = pattern[1:], arn[1:]
	}
	return arn == ""
}
