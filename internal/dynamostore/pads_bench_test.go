package dynamostore_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

const benchEnvelope = `{"schema": "locker.handoff.v1", "task_id": "bench", "from_agent": "a", "to_agent": "b", "constraints": [], "artifacts": [], "budget_usd": null}`

// BenchmarkAppendLatency appends the same blocks through the locker service to SQLite and to
// DynamoDB (moto, or AWS_ENDPOINT_URL) in one run, interleaved, and reports each store's
// p50/p99 append latency and their ratio. Documented in README.md, never asserted: moto is a
// Python emulator behind a serializing proxy, so the ratio measures the driver's two round
// trips (GetItem + TransactWriteItems) through moto more than DynamoDB itself. Run with
// -benchtime=300x: moto deep-copies the table on every transaction, so its latency grows
// with the table.
func BenchmarkAppendLatency(b *testing.B) {
	sq, err := sqlitestore.Open(b.Context(), sqlitestore.Config{Path: filepath.Join(b.TempDir(), "locker.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sq.Close() })
	type target struct {
		name  string
		svc   *locker.Service
		pad   locker.Created
		n     int
		times []time.Duration
	}
	var targets []*target
	for _, st := range []struct {
		name  string
		store locker.Store
	}{{"sqlite", sq}, {"dynamodb", newStore(b)}} {
		svc, err := locker.New(locker.Config{Store: st.store})
		if err != nil {
			b.Fatal(err)
		}
		targets = append(targets, &target{name: st.name, svc: svc})
	}
	payload := []byte("an artifact line of a typical size for a handoff block, about one hundred bytes long....")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tg := range targets {
			if tg.n%200 == 0 { // a fresh pad every 200 blocks, well inside the quotas
				b.StopTimer()
				tg.pad, err = tg.svc.Create(b.Context(), locker.CreateRequest{TTLSeconds: 3600, MaxBlocks: 4096}, nil)
				if err == nil {
					_, err = tg.svc.Append(b.Context(), tg.pad.PadID, tg.pad.WriteKey, true, "application/json", []byte(benchEnvelope))
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			start := time.Now()
			if _, err := tg.svc.Append(b.Context(), tg.pad.PadID, tg.pad.WriteKey, true, "text/plain", payload); err != nil {
				b.Fatalf("%s append: %v", tg.name, err)
			}
			tg.times = append(tg.times, time.Since(start))
			tg.n++
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds())
	}
	sqP50, sqP99 := pct(targets[0].times, 0.50), pct(targets[0].times, 0.99)
	dyP50, dyP99 := pct(targets[1].times, 0.50), pct(targets[1].times, 0.99)
	b.ReportMetric(sqP50, "sqlite-p50-µs")
	b.ReportMetric(sqP99, "sqlite-p99-µs")
	b.ReportMetric(dyP50, "dynamodb-p50-µs")
	b.ReportMetric(dyP99, "dynamodb-p99-µs")
	b.ReportMetric(dyP50/max(sqP50, 1), "p50-ratio")
	b.ReportMetric(dyP99/max(sqP99, 1), "p99-ratio")
	b.Logf("%d appends each: sqlite p50 %.0fµs p99 %.0fµs; dynamodb p50 %.0fµs p99 %.0fµs; ratio p50 %.1fx p99 %.1fx",
		len(targets[0].times), sqP50, sqP99, dyP50, dyP99, dyP50/max(sqP50, 1), dyP99/max(sqP99, 1))
}
