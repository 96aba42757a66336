package extmcp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// method indexes the per-method metrics.
type method uint8

const (
	methodToolsList method = iota
	methodToolsCall
	methodOther
	numMethods
)

var methodNames = [numMethods]string{"tools/list", "tools/call", "other"}

// latencyBuckets are the histogram's upper bounds, in seconds: dense around the
// in-process decision costs (microseconds), sparse up to the gateway's 10 s deadline.
var latencyBuckets = []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 0.5, 1, 2.5, 10}

type histogram struct {
	counts [17]atomic.Uint64 // len(latencyBuckets); the last bucket (+Inf) is count
	count  atomic.Uint64
	sumNs  atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	for i, ub := range latencyBuckets {
		if s <= ub {
			h.counts[i].Add(1)
			break
		}
	}
	h.count.Add(1)
	h.sumNs.Add(int64(d))
}

var observationKinds = []ObservationKind{ObservedNew, ObservedDrift, ObservedUnapproved, ObservedRefused}

// Metrics are the processor's counters, in Prometheus' text exposition format from
// [Metrics.WriteTo]. Every update is one atomic add: nothing on the request path locks.
type Metrics struct {
	decisions      [numMethods][numOutcomes]atomic.Uint64
	denials        [numMethods][numCauses]atomic.Uint64
	latency        [numMethods]histogram
	toolsDropped   [4]atomic.Uint64 // by observationKinds
	obsRecorded    atomic.Uint64
	obsDropped     atomic.Uint64
	recordFailures atomic.Uint64
	cache          *cache
}

func (m *Metrics) decided(meth method, d Decision, took time.Duration) {
	m.decisions[meth][d.Outcome].Add(1)
	if d.Outcome == OutcomeDeny {
		m.denials[meth][d.Cause].Add(1)
	}
	m.latency[meth].observe(took)
}

func (m *Metrics) dropped(k ObservationKind) {
	if i := slices.Index(observationKinds, k); i >= 0 {
		m.toolsDropped[i].Add(1)
	}
}

// WriteTo writes every metric in the Prometheus text format (version 0.0.4).
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: bufio.NewWriter(w)}
	p := func(format string, a ...any) { fmt.Fprintf(cw, format, a...) }

	p("# HELP toolwarrant_extmcp_decisions_total Decisions by MCP method and outcome.\n# TYPE toolwarrant_extmcp_decisions_total counter\n")
	for mi := range numMethods {
		for o := range numOutcomes {
			p("toolwarrant_extmcp_decisions_total{method=%q,outcome=%q} %d\n", methodNames[mi], o.String(), m.decisions[mi][o].Load())
		}
	}
	p("# HELP toolwarrant_extmcp_denials_total Denials by MCP method and cause.\n# TYPE toolwarrant_extmcp_denials_total counter\n")
	for mi := range numMethods {
		for c := CauseUnknown; c < numCauses; c++ {
			p("toolwarrant_extmcp_denials_total{method=%q,cause=%q} %d\n", methodNames[mi], c.String(), m.denials[mi][c].Load())
		}
	}
	p("# HELP toolwarrant_extmcp_decision_seconds Time to decide one gateway message.\n# TYPE toolwarrant_extmcp_decision_seconds histogram\n")
	for mi := range numMethods {
		h := &m.latency[mi]
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += h.counts[i].Load()
			p("toolwarrant_extmcp_decision_seconds_bucket{method=%q,le=%q} %d\n", methodNames[mi], strconv.FormatFloat(ub, 'g', -1, 64), cum)
		}
		n := h.count.Load()
		p("toolwarrant_extmcp_decision_seconds_bucket{method=%q,le=\"+Inf\"} %d\n", methodNames[mi], n)
		p("toolwarrant_extmcp_decision_seconds_sum{method=%q} %s\n", methodNames[mi], strconv.FormatFloat(time.Duration(h.sumNs.Load()).Seconds(), 'g', -1, 64))
		p("toolwarrant_extmcp_decision_seconds_count{method=%q} %d\n", methodNames[mi], n)
	}
	p("# HELP toolwarrant_extmcp_tools_dropped_total Listed tools removed from tools/list results, by why.\n# TYPE toolwarrant_extmcp_tools_dropped_total counter\n")
	for i, k := range observationKinds {
		p("toolwarrant_extmcp_tools_dropped_total{kind=%q} %d\n", string(k), m.toolsDropped[i].Load())
	}
	p("# HELP toolwarrant_extmcp_observations_recorded_total Observations written to the recorder.\n# TYPE toolwarrant_extmcp_observations_recorded_total counter\n")
	p("toolwarrant_extmcp_observations_recorded_total %d\n", m.obsRecorded.Load())
	p("# HELP toolwarrant_extmcp_observations_dropped_total Observations lost: queue full, or recording failed twice.\n# TYPE toolwarrant_extmcp_observations_dropped_total counter\n")
	p("toolwarrant_extmcp_observations_dropped_total %d\n", m.obsDropped.Load())
	p("# HELP toolwarrant_extmcp_record_failures_total Failed recorder writes.\n# TYPE toolwarrant_extmcp_record_failures_total counter\n")
	p("toolwarrant_extmcp_record_failures_total %d\n", m.recordFailures.Load())
	if c := m.cache; c != nil {
		names := make([]string, 0, len(c.entries))
		for n := range c.entries {
			names = append(names, n)
		}
		slices.Sort(names)
		p("# HELP toolwarrant_extmcp_snapshot_age_seconds Age of the approvals in memory per server (-1: never read).\n# TYPE toolwarrant_extmcp_snapshot_age_seconds gauge\n")
		for _, n := range names {
			age := c.age(n)
			v := -1.0
			if age >= 0 {
				v = age.Seconds()
			}
			p("toolwarrant_extmcp_snapshot_age_seconds{server=%q} %s\n", n, strconv.FormatFloat(v, 'g', -1, 64))
		}
		p("# HELP toolwarrant_extmcp_snapshot_refresh_failures_total Failed reads of the approvals per server.\n# TYPE toolwarrant_extmcp_snapshot_refresh_failures_total counter\n")
		for _, n := range names {
			p("toolwarrant_extmcp_snapshot_refresh_failures_total{server=%q} %d\n", n, c.entries[n].failures.Load())
		}
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil && cw.err == nil {
		cw.err = err
	}
	return cw.n, cw.err
}

// Handler serves the metrics at any path, for a scraper.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = m.WriteTo(w)
	})
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}
