package enforce

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
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

var observationKinds = [...]ObservationKind{ObservedNew, ObservedDrift, ObservedUnapproved, ObservedRefused}

// Metrics are the processor's Prometheus metrics, in a registry of their own (never the
// global default), served by [Metrics.Handler] and written by [Metrics.WriteTo].
//
// Cardinality is bounded: every label value is fixed when the processor is built — the
// three methods, the outcomes, the denial causes, the observation kinds and the configured
// servers — and every series exists from the start, at zero. The request path only adds to
// series resolved then: no label lookup, no lock.
type Metrics struct {
	reg          *prometheus.Registry
	decisions    [numMethods][numOutcomes]prometheus.Counter
	denials      [numMethods][numCauses]prometheus.Counter // nil for causeNone, which no denial has
	latency      [numMethods]prometheus.Observer
	toolsDropped [len(observationKinds)]prometheus.Counter
	// The recorder's goroutine counts here; the values are read at scrape time.
	obsRecorded    atomic.Uint64
	obsDropped     atomic.Uint64
	recordFailures atomic.Uint64
	// The decision records' writer counts here.
	decisionRecords        atomic.Uint64
	decisionRecordFailures atomic.Uint64
	shadow                 prometheus.Gauge
}

// newMetrics registers every metric; c, when not nil, adds each server's snapshot age and
// refresh failures.
func newMetrics(c *cache) (*Metrics, error) {
	m := &Metrics{reg: prometheus.NewRegistry()}
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolwarrant_extmcp_decisions_total",
		Help: "Decisions by MCP method and outcome."}, []string{"method", "outcome"})
	denials := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolwarrant_extmcp_denials_total",
		Help: "Denials by MCP method and cause."}, []string{"method", "cause"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolwarrant_extmcp_decision_seconds",
		Help: "Time to decide one gateway message.", Buckets: latencyBuckets}, []string{"method"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolwarrant_extmcp_tools_dropped_total",
		Help: "Listed tools removed from tools/list results, by why."}, []string{"kind"})
	for mi, name := range methodNames {
		for o := range numOutcomes {
			m.decisions[mi][o] = decisions.WithLabelValues(name, o.String())
		}
		for c := CauseUnknown; c < numCauses; c++ {
			m.denials[mi][c] = denials.WithLabelValues(name, c.String())
		}
		m.latency[mi] = latency.WithLabelValues(name)
	}
	for i, k := range observationKinds {
		m.toolsDropped[i] = dropped.WithLabelValues(string(k))
	}
	count := func(name, help string, v *atomic.Uint64, labels prometheus.Labels) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(v.Load()) })
	}
	cs := []prometheus.Collector{decisions, denials, latency, dropped,
		count("toolwarrant_extmcp_observations_recorded_total", "Observations written to the recorder.", &m.obsRecorded, nil),
		count("toolwarrant_extmcp_observations_dropped_total", "Observations lost: queue full, or recording failed twice.", &m.obsDropped, nil),
		count("toolwarrant_extmcp_record_failures_total", "Failed recorder writes.", &m.recordFailures, nil),
		count("toolwarrant_extmcp_decision_records_total", "Decision records written to the audit log.", &m.decisionRecords, nil),
		count("toolwarrant_extmcp_decision_record_failures_total", "Failed writes of decision records (kept for the next window).", &m.decisionRecordFailures, nil),
	}
	m.shadow = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolwarrant_extmcp_shadow",
		Help: "1 in shadow mode: decisions are counted with the outcome the rules reached, and nothing is filtered or denied."})
	cs = append(cs, m.shadow)
	if c != nil {
		for name, e := range c.entries {
			server := prometheus.Labels{"server": name}
			cs = append(cs,
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolwarrant_extmcp_snapshot_age_seconds",
					Help: "Age of the approvals in memory per server (-1: never read).", ConstLabels: server},
					func() float64 {
						if age := c.age(name); age >= 0 {
							return age.Seconds()
						}
						return -1
					}),
				count("toolwarrant_extmcp_snapshot_refresh_failures_total", "Failed reads of the approvals per server.", &e.failures, server))
		}
	}
	var errs []error
	for _, col := range cs {
		errs = append(errs, m.reg.Register(col))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// decided counts a decision by the outcome the rules reached (in shadow mode, what would
// have been done).
func (m *Metrics) decided(meth method, d Decision, took time.Duration) {
	o := d.Outcome
	if d.Shadow {
		o = d.Would
	}
	m.decisions[meth][o].Inc()
	if o == OutcomeDeny {
		if c := m.denials[meth][d.Cause]; c != nil {
			c.Inc()
		}
	}
	m.latency[meth].Observe(took.Seconds())
}

func (m *Metrics) dropped(k ObservationKind) {
	if i := slices.Index(observationKinds[:], k); i >= 0 {
		m.toolsDropped[i].Inc()
	}
}

// WriteTo writes every metric in the Prometheus text format (version 0.0.4), families
// sorted by name.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	mfs, err := m.reg.Gather()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, mf := range mfs {
		k, err := expfmt.MetricFamilyToText(w, mf)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Handler serves the metrics at any path, for a scraper (promhttp: the text format unless
// the scraper asks for another by its Accept header, gzip if it accepts that).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
