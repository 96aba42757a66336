package enforce

import (
	"bytes"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// metricsGolden guards the whole exposition a scraper and the dashboards read: every metric
// name, help text, type, label set and bucket bound, after a fixed set of observations.
// `go test -run TestMetricsExposition -update` rewrites it; review the diff as a change to
// what every dashboard reads.
const metricsGolden = "testdata/metrics.golden"

func TestMetricsExposition(t *testing.T) {
	src := newMemSource()
	src.set("a", "x", ToolEvidence{}) // "b" is unknown to the source: its reads fail
	tp := newTestProcessor(t, src, []string{"a", "b"}, nil)
	tp.clock.advance(2500 * time.Millisecond)
	m := tp.Metrics()
	m.decided(methodToolsList, Decision{Outcome: OutcomeMutated}, 7*time.Microsecond)
	m.decided(methodToolsCall, Decision{Outcome: OutcomePass}, 30*time.Microsecond)
	m.decided(methodToolsCall, Decision{Outcome: OutcomeDeny, Cause: CauseDrifted}, 300*time.Millisecond)
	m.decided(methodOther, Decision{Outcome: OutcomeDeny, Cause: CauseMethod}, 20*time.Second)
	m.dropped(ObservedUnapproved)
	m.dropped(ObservedUnapproved)
	m.dropped(ObservedDrift)
	m.obsRecorded.Add(5)
	m.obsDropped.Add(2)
	m.recordFailures.Add(1)
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(metricsGolden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(metricsGolden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("exposition differs from %s (-want +got):\n%s", metricsGolden, diff)
	}
}

// TestMetricsHandler: a scraper that states no preference gets the same text format as
// WriteTo (the golden above), uncompressed.
func TestMetricsHandler(t *testing.T) {
	tp := newTestProcessor(t, newMemSource(), []string{"a"}, nil)
	m := tp.Metrics()
	m.decided(methodToolsCall, Decision{Outcome: OutcomeDeny, Cause: CauseDrifted}, time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
		t.Errorf("Content-Type %q", ct)
	}
	var want bytes.Buffer
	if _, err := m.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), rec.Body.String()); diff != "" {
		t.Errorf("Handler and WriteTo differ (-WriteTo +Handler):\n%s", diff)
	}
}

// BenchmarkMetricsDecided is what every gRPC decision adds to the request path: one
// decision counted (and its denial cause) and its latency observed. parallel runs it from
// every core at once, as concurrent gateway streams do.
func BenchmarkMetricsDecided(b *testing.B) {
	p, err := New(Config{Servers: []string{"s"}, Source: newMemSource()})
	if err != nil {
		b.Fatal(err)
	}
	m := p.Metrics()
	pass := Decision{Outcome: OutcomePass}
	deny := Decision{Outcome: OutcomeDeny, Cause: CauseDrifted}
	b.Run("pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.decided(methodToolsCall, pass, 12*time.Microsecond)
		}
	})
	b.Run("deny", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.decided(methodToolsCall, deny, 12*time.Microsecond)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.decided(methodToolsCall, pass, 12*time.Microsecond)
			}
		})
	})
}
