package benchratio

import (
	"slices"
	"testing"
	"time"
)

// Result is one comparison: the median time per operation of each side.
type Result struct {
	BaseNs, SubjectNs float64
}

// Ratio is subject time over baseline time.
func (r Result) Ratio() float64 { return r.SubjectNs / r.BaseNs }

// Speed is baseline time over subject time: the subject's throughput as a fraction of the
// baseline's (for read paths quoted as "× raw SHA-256").
func (r Result) Speed() float64 { return r.BaseNs / r.SubjectNs }

// Rounds is how many alternating rounds Compare runs when given none.
const Rounds = 11

// Compare runs rounds rounds; each times inner calls of base and inner calls of subject,
// in an order that alternates between rounds so that drift hits both alike. It returns
// the medians per call. inner <= 0 picks a count that makes each side's round take about
// 20 ms.
func Compare(rounds, inner int, base, subject func()) Result {
	if rounds <= 0 {
		rounds = Rounds
	}
	if inner <= 0 {
		inner = calibrate(subject)
	}
	bs := make([]float64, 0, rounds)
	ss := make([]float64, 0, rounds)
	timeIt := func(f func()) float64 {
		start := time.Now()
		for range inner {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(inner)
	}
	for r := range rounds {
		if r%2 == 0 {
			bs = append(bs, timeIt(base))
			ss = append(ss, timeIt(subject))
		} else {
			ss = append(ss, timeIt(subject))
			bs = append(bs, timeIt(base))
		}
	}
	return Result{BaseNs: median(bs), SubjectNs: median(ss)}
}

func calibrate(f func()) int {
	f()
	start := time.Now()
	n := 0
	for time.Since(start) < 2*time.Millisecond {
		f()
		n++
	}
	per := time.Since(start) / time.Duration(n)
	return max(1, int(20*time.Millisecond/max(per, 1)))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// Report adds the comparison to b's output: unit (e.g. "x_sha256") as the ratio (the
// subject's time over the baseline's, or with speed the baseline's over the subject's),
// both medians as base-ns and subject-ns, and the baseline's throughput in MB/s when
// bytes > 0.
func Report(b *testing.B, r Result, unit string, speed bool, bytes int64) {
	b.Helper()
	b.ReportMetric(r.BaseNs, "base-ns")
	b.ReportMetric(r.SubjectNs, "subject-ns")
	if speed {
		b.ReportMetric(r.Speed(), unit)
	} else {
		b.ReportMetric(r.Ratio(), unit)
	}
	if bytes > 0 {
		b.ReportMetric(float64(bytes)/r.BaseNs*1e3, "base_MB/s")
	}
}
