package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadToolwarrantDefaults(t *testing.T) {
	c, err := LoadToolwarrant(envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Toolwarrant{Catalog: "toolwarrant.db", CrawlConcurrency: 4, CrawlTimeout: 30 * time.Second, CrawlMaxResponseBytes: 10 << 20,
		CrawlMaxListingBytes: 24 << 20, CrawlMaxServerBytes: 32 << 20}
	if c != want {
		t.Errorf("defaults = %+v, want %+v", c, want)
	}
}

func TestLoadToolwarrantValues(t *testing.T) {
	c, err := LoadToolwarrant(envMap(map[string]string{"TOOLWARRANT_CATALOG": "/srv/tw.db", "TOOLWARRANT_IDENTITY": "crawler@ci", "TOOLWARRANT_LOG_KEY": "/srv/tw.key",
		"TOOLWARRANT_CRAWL_CONCURRENCY": "16", "TOOLWARRANT_CRAWL_TIMEOUT": "5s", "TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES": "65536",
		"TOOLWARRANT_CRAWL_MAX_LISTING_BYTES": "2MiB", "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES": "3 MiB",
		"CATALOG_BLOB_BUCKET": "dev-catalog-objects", "TOOLWARRANT_S3_PATH_STYLE": "1", "TOOLWARRANT_TILES_DIR": "/srv/www/tlog"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Catalog != "/srv/tw.db" || c.LogKey != "/srv/tw.key" || c.Identity != "crawler@ci" || c.CrawlConcurrency != 16 || c.CrawlTimeout != 5*time.Second || c.CrawlMaxResponseBytes != 65536 ||
		c.CrawlMaxListingBytes != 2<<20 || c.CrawlMaxServerBytes != 3<<20 || c.CatalogBlobBucket != "dev-catalog-objects" || !c.S3PathStyle || c.TilesDir != "/srv/www/tlog" {
		t.Errorf("got %+v", c)
	}
}

func TestLoadToolwarrantReportsAllProblems(t *testing.T) {
	_, err := LoadToolwarrant(envMap(map[string]string{"TOOLWARRANT_CRAWL_CONCURRENCY": "0", "TOOLWARRANT_CRAWL_TIMEOUT": "soon",
		"TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES": "1", "TOOLWARRANT_CRAWL_MAX_LISTING_BYTES": "2TiB", "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES": "lots", "TOOLWARRANT_IDENTITY": "a\nb", "CATALOG_BLOB_BUCKET": "x", "TOOLWARRANT_S3_PATH_STYLE": "yes",
		"TOOLWARRANT_TILES_DIR": "s3://b/p"}))
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for _, v := range []string{"TOOLWARRANT_CRAWL_CONCURRENCY", "TOOLWARRANT_CRAWL_TIMEOUT", "TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES",
		"TOOLWARRANT_CRAWL_MAX_LISTING_BYTES", "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES", "TOOLWARRANT_IDENTITY",
		"CATALOG_BLOB_BUCKET", "TOOLWARRANT_S3_PATH_STYLE", "TOOLWARRANT_TILES_DIR"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s: %v", v, err)
		}
	}
}

func TestParseHeaderEnv(t *testing.T) {
	tests := []struct {
		in   string
		want warrant.HeaderRef
		err  string
	}{
		{"Authorization=WEATHER_TOKEN", warrant.HeaderRef{Header: "Authorization", Env: "WEATHER_TOKEN"}, ""},
		{"X-Api-Key = KEY", warrant.HeaderRef{Header: "X-Api-Key", Env: "KEY"}, ""},
		{"Authorization", warrant.HeaderRef{}, "HEADER=ENVVAR"},
		{"=TOKEN", warrant.HeaderRef{}, "HEADER=ENVVAR"},
		{"Authorization=Bearer abc", warrant.HeaderRef{}, "environment variable name"},
		{"Bad Header=TOKEN", warrant.HeaderRef{}, "not an HTTP header name"},
		{"Host=TOKEN", warrant.HeaderRef{}, "set by the transport"},
		{"Mcp-Session-Id=TOKEN", warrant.HeaderRef{}, "set by the transport"},
		{"Authorization=1TOKEN", warrant.HeaderRef{}, "environment variable name"},
	}
	for _, tc := range tests {
		got, err := ParseHeaderEnv(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseHeaderEnv(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseHeaderEnv(%q) error = %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

func TestResolveHeadersNeverLeaksValues(t *testing.T) {
	const secret = "Bearer s3cr3t-value"
	refs := []warrant.HeaderRef{{Header: "Authorization", Env: "TOKEN"}, {Header: "X-Key", Env: "MISSING"}, {Header: "X-Bad", Env: "BAD"}}
	h, err := ResolveHeaders(t.Context(), envMap(map[string]string{"TOKEN": secret, "BAD": secret + "\r\nX-Injected: 1"}), nil, "weather", refs)
	if err == nil || !strings.Contains(err.Error(), "MISSING is not set") || !strings.Contains(err.Error(), "BAD holds a line break") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error leaks a header value: %v", err)
	}
	if h["Authorization"] != secret {
		t.Errorf("resolved = %v", h)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("headers", "h", h)
	if strings.Contains(logged.String(), "s3cr3t") || strings.Contains(fmt.Sprint(h), "s3cr3t") || !strings.Contains(logged.String(), "Authorization: <redacted>") {
		t.Errorf("headers logged as %q / printed as %q", logged.String(), fmt.Sprint(h))
	}
}

// TestResolveHeadersFromSecrets: a header naming a secret is read through the
// SecretReader at resolve time; without one (the embedded CLI) it is a clear error; a
// secret's value with a line break is refused like a variable's; nothing leaks.
func TestResolveHeadersFromSecrets(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:weather-token-AbCdEf"
	const param = "arn:aws:ssm:us-east-1:123456789012:parameter/agentgate/weather"
	refs := []warrant.HeaderRef{{Header: "Authorization", Secret: arn}, {Header: "X-Key", Secret: param}}
	read := func(_ context.Context, a string) (string, error) {
		switch a {
		case arn:
			return "Bearer s3cr3t", nil
		case param:
			return "k3y\nX-Injected: 1", nil
		}
		return "", errors.New("no such secret")
	}
	h, err := ResolveHeaders(t.Context(), envMap(nil), read, "weather", refs)
	if h["Authorization"] != "Bearer s3cr3t" || err == nil || !strings.Contains(err.Error(), "secret "+param+" holds a line break") || strings.Contains(err.Error(), "k3y") {
		t.Errorf("ResolveHeaders = %v, %v", h, err)
	}
	if _, err := ResolveHeaders(t.Context(), envMap(nil), nil, "weather", refs[:1]); err == nil || !strings.Contains(err.Error(), "read only by the crawl function on AWS") {
		t.Errorf("without a SecretReader: %v", err)
	}
}

func TestMatchARN(t *testing.T) {
	for _, c := range []struct {
		p, a string
		want bool
	}{
		{"arn:aws:secretsmanager:us-east-1:1:secret:tok-??????", "arn:aws:secretsmanager:us-east-1:1:secret:tok-AbCdEf", true},
		{"arn:aws:secretsmanager:us-east-1:1:secret:tok-??????", "arn:aws:secretsmanager:us-east-1:1:secret:tok-AbCdE", false},
		{"arn:aws:ssm:us-east-1:1:parameter/agentgate/*", "arn:aws:ssm:us-east-1:1:parameter/agentgate/a/b", true},
		{"arn:aws:ssm:us-east-1:1:parameter/agentgate/*", "arn:aws:ssm:us-east-1:1:parameter/other", false},
		{"arn:x", "arn:x", true},
	} {
		if got := MatchARN(c.p, c.a); got != c.want {
			t.Errorf("MatchARN(%q, %q) = %v", c.p, c.a, got)
		}
	}
}
