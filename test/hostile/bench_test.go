package hostile_test

import (
	"net/http/httptest"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/mcpclient/hostile"
)

// BenchmarkHostilePeakRSS reports the peak RSS of `agentgate lock` refusing the two
// servers that used to cost gigabytes — a 1 GiB body and a server-sent event that never
// ends — as peak-mb (the larger of the two) against base-mb, the same command locking a
// well-behaved two-tool server in the same run. scripts/bench quotes it as
// hostile-peak-rss-mb.
func BenchmarkHostilePeakRSS(b *testing.B) {
	good := httptest.NewServer(fixture.New(fixture.Tools("t", 2)...))
	defer good.Close()
	servers := []*hostile.Server{{Mode: hostile.Body, Size: 1 << 30}, {Mode: hostile.EndlessEvent}}
	var peak, base int64
	for range b.N {
		for _, s := range servers {
			hs := httptest.NewServer(s)
			r := run(b, project(b, hs.URL+"/mcp"), agentgateBin, "lock")
			hs.Close()
			if r.code != 2 {
				b.Fatalf("lock against a hostile server: exit %d: %s", r.code, r.stderr)
			}
			peak = max(peak, r.rss)
		}
		r := run(b, project(b, good.URL+"/mcp"), agentgateBin, "lock")
		if r.code != 0 {
			b.Fatalf("lock of the good server: exit %d: %s", r.code, r.stderr)
		}
		base = max(base, r.rss)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-mb")
	b.ReportMetric(float64(base)/(1<<20), "base-mb")
	b.ReportMetric(float64(peak)/float64(base), "x_base")
}
