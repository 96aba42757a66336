package toolwarrant

import (
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The crawl benchmarks list local fixture servers (internal/crawler/fixture over loopback
// HTTP, through the real netguard client and the go-sdk MCP client) and digest every tool.
// They report tools/s and canon-%: the share of the wall time spent in RFC 8785
// canonicalization (canon.Transform), measured around each call.
//
//	go test -run '^$' -bench 'Crawl' -benchtime 20x ./test/toolwarrant/

func fixtureServers(b *testing.B, servers, tools int) []crawler.Target {
	b.Helper()
	var targets []crawler.Target
	for i := range servers {
		srv := httptest.NewServer(fixture.New(fixture.Tools(fmt.Sprintf("s%d_t", i), tools)...))
		b.Cleanup(srv.Close)
		targets = append(targets, crawler.Target{Server: warrant.Server{Name: fmt.Sprintf("s%02d", i), URL: srv.URL + "/mcp", AllowPrivate: true}})
	}
	return targets
}

// digestAll digests every tool of every outcome and returns the time spent in canon.
func digestAll(b *testing.B, outs []crawler.Outcome) (tools int, canonTime time.Duration) {
	for _, o := range outs {
		if o.Err != nil {
			b.Fatal(o.Err)
		}
		for _, t := range o.Listing.Tools {
			t0 := time.Now()
			c, err := canon.Transform(t.Raw)
			canonTime += time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(c)
			tools++
		}
	}
	return tools, canonTime
}

func benchCrawl(b *testing.B, servers, tools, concurrency int) {
	targets := fixtureServers(b, servers, tools)
	cfg := crawler.Config{Concurrency: concurrency, Timeout: 30 * time.Second}
	var total, canonTime time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		outs := crawler.Crawl(b.Context(), cfg, targets)
		k, c := digestAll(b, outs)
		total += time.Since(t0)
		canonTime += c
		n += k
	}
	b.ReportMetric(float64(n)/total.Seconds(), "tools/s")
	b.ReportMetric(100*canonTime.Seconds()/total.Seconds(), "canon-%")
}

// BenchmarkCrawlDigest500 is one server with a 500-tool listing.
func BenchmarkCrawlDigest500(b *testing.B) { benchCrawl(b, 1, 500, 1) }

// BenchmarkCrawlDigest50x100 is 50 servers of 100 tools each, 8 at a time.
func BenchmarkCrawlDigest50x100(b *testing.B) { benchCrawl(b, 50, 100, 8) }

// BenchmarkCrawlIngest50x100 adds recording every crawl in the SQLite catalog (one
// transaction per server: crawl, 100 observations; versions only on the first round).
func BenchmarkCrawlIngest50x100(b *testing.B) {
	targets := fixtureServers(b, 50, 100)
	cat, err := sqlitestore.OpenCatalog(b.Context(), sqlitestore.CatalogConfig{Path: filepath.Join(b.TempDir(), "c.db"), Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	svc, _ := warrant.New(warrant.Config{Catalog: cat, Identity: "bench"})
	for _, t := range targets {
		if _, err := svc.AddServer(b.Context(), t.Server); err != nil {
			b.Fatal(err)
		}
	}
	cfg := crawler.Config{Concurrency: 8, Timeout: 30 * time.Second}
	n := 0
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		for _, o := range crawler.Crawl(b.Context(), cfg, targets) {
			if o.Err != nil {
				b.Fatal(o.Err)
			}
			res, err := svc.Ingest(b.Context(), *o.Listing)
			if err != nil {
				b.Fatal(err)
			}
			n += res.Accepted
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(n)/total.Seconds(), "tools/s")
}

// BenchmarkDigestOnly500 is the floor of the crawl benchmarks: canonicalize and hash the
// 500 raw tool objects, with no network at all.
func BenchmarkDigestOnly500(b *testing.B) {
	tools := fixture.Tools("t", 500)
	var canonTime, total time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for _, raw := range tools {
			t1 := time.Now()
			c, err := canon.Transform([]byte(raw))
			canonTime += time.Since(t1)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(c)
			n++
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(n)/total.Seconds(), "tools/s")
	b.ReportMetric(100*canonTime.Seconds()/total.Seconds(), "canon-%")
}
