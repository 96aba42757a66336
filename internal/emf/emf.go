package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units agentgate's metrics use (CloudWatch accepts more; see the specification).
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Bytes        Unit = "Bytes"
	None         Unit = "None"
)

// Limits of one record, from the specification.
const (
	// MaxDimensions is the most dimensions in one dimension set.
	MaxDimensions = 30
	// MaxMetrics is the most metrics in one directive.
	MaxMetrics = 100
	// MaxNameLen bounds namespaces, metric names and dimension names (characters).
	MaxNameLen = 255
	// MaxDimensionValueLen bounds a dimension's value (characters).
	MaxDimensionValueLen = 1024
)

// Metric is one metric value.
type Metric struct {
	// Name is the metric's name in its namespace. Required.
	Name string
	// Unit is its unit. Default None.
	Unit Unit
	// Value is the value; it must be finite.
	Value float64
}

// Dimension is one dimension of the record's metrics.
type Dimension struct {
	// Name and Value are required; Value is what an alarm's dimension must equal.
	Name, Value string
}

// Record is one EMF log event.
type Record struct {
	// Namespace is the CloudWatch namespace of every metric. Required.
	Namespace string
	// Dimensions is the one dimension set all Metrics are published under (none: the
	// metrics have no dimensions).
	Dimensions []Dimension
	// Metrics are the values. At least one.
	Metrics []Metric
	// Properties are further top-level members, not metrics: context for whoever reads the
	// log line. Their names may not repeat a dimension, a metric or "_aws".
	Properties map[string]any
	// Time is the metrics' timestamp. Default: the time Marshal is called.
	Time time.Time
}

// Marshal returns the record as one line of JSON, ending in a newline.
func (r Record) Marshal() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	at := r.Time
	if at.IsZero() {
		at = time.Now()
	}
	dims := make([]string, 0, len(r.Dimensions))
	metrics := make([]metricDirective, 0, len(r.Metrics))
	members := map[string]any{}
	for k, v := range r.Properties {
		members[k] = v
	}
	for _, d := range r.Dimensions {
		dims = append(dims, d.Name)
		members[d.Name] = d.Value
	}
	for _, m := range r.Metrics {
		u := m.Unit
		if u == "" {
			u = None
		}
		metrics = append(metrics, metricDirective{Name: m.Name, Unit: u})
		members[m.Name] = m.Value
	}
	members["_aws"] = metadata{
		Timestamp:         at.UnixMilli(),
		CloudWatchMetrics: []directive{{Namespace: r.Namespace, Dimensions: [][]string{dims}, Metrics: metrics}},
	}
	b, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("emf: %w", err)
	}
	return append(b, '\n'), nil
}

// Write writes r to w as one line, in one Write call, so that lines written by concurrent
// loggers to the same stream are not interleaved with it.
func Write(w io.Writer, r Record) error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("emf: write: %w", err)
	}
	return nil
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type directive struct {
	Namespace  string            `json:"Namespace"`
	Dimensions [][]string        `json:"Dimensions"`
	Metrics    []metricDirective `json:"Metrics"`
}

type metricDirective struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

func (r Record) validate() error {
	var errs []error
	name := func(what, s string, max int) {
		if s == "" || utf8.RuneCountInString(s) > max || !utf8.ValidString(s) {
			errs = append(errs, fmt.Errorf("%s %q must be 1 to %d characters of UTF-8", what, s, max))
		}
	}
	name("namespace", r.Namespace, MaxNameLen)
	if len(r.Dimensions) > MaxDimensions {
		errs = append(errs, fmt.Errorf("%d dimensions, at most %d", len(r.Dimensions), MaxDimensions))
	}
	if len(r.Metrics) == 0 || len(r.Metrics) > MaxMetrics {
		errs = append(errs, fmt.Errorf("%d metrics, want 1 to %d", len(r.Metrics), MaxMetrics))
	}
	seen := map[string]bool{"_aws": true}
	member := func(what, n string) {
		if seen[n] {
			errs = append(errs, fmt.Errorf("%s %q names a member twice", what, n))
		}
		seen[n] = true
	}
	for _, d := range r.Dimensions {
		name("dimension", d.Name, MaxNameLen)
		name("value of dimension "+d.Name, d.Value, MaxDimensionValueLen)
		member("dimension", d.Name)
	}
	for _, m := range r.Metrics {
		name("metric", m.Name, MaxNameLen)
		member("metric", m.Name)
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			errs = append(errs, fmt.Errorf("metric %s: %v is not a finite number", m.Name, m.Value))
		}
	}
	for k := range r.Properties {
		member("property", k)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("emf: %w", err)
	}
	return nil
}
