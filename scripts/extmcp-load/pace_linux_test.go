package main

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkPacing waits 440 µs (a little under the 500 µs between requests at 2,000 a
// second) with until and with time.Sleep, and reports each one's median and p99 lateness
// in µs: how late the generator would hand a request to gRPC, all else idle.
//
//	go test -run='^$' -bench=Pacing -benchtime=2000x ./scripts/extmcp-load/
func BenchmarkPacing(b *testing.B) {
	const wait = 440 * time.Microsecond
	for _, tc := range []struct {
		name  string
		sleep func(time.Time)
	}{{"nanosleep", until}, {"time.Sleep", func(at time.Time) { time.Sleep(time.Until(at)) }}} {
		b.Run(tc.name, func(b *testing.B) {
			var late []time.Duration
			for b.Loop() {
				at := time.Now().Add(wait)
				tc.sleep(at)
				late = append(late, time.Since(at))
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Nanoseconds())/1e3, "late-p50-µs")
			b.ReportMetric(float64(late[len(late)*99/100].Nanoseconds())/1e3, "late-p99-µs")
		})
	}
}
