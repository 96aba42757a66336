package emf_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate-dev/agentgate/internal/emf"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
)

var t0 = time.Date(2026, 10, 12, 9, 30, 0, 0, time.UTC)

func record() emf.Record {
	return emf.Record{
		Namespace:  "agentgate/toolwarrant",
		Dimensions: []emf.Dimension{{Name: "FunctionName", Value: "dev-toolwarrant-crawl"}},
		Metrics:    []emf.Metric{{Name: "ServersCrawled", Unit: emf.Count, Value: 3}, {Name: "ServersFailed", Unit: emf.Count, Value: 1}},
		Properties: map[string]any{"failedServers": []string{"weather"}},
		Time:       t0,
	}
}

// TestMarshal pins the wire form (what CloudWatch Logs parses) byte for byte and checks it
// with the independent checker.
func TestMarshal(t *testing.T) {
	b, err := record().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"FunctionName":"dev-toolwarrant-crawl","ServersCrawled":3,"ServersFailed":1,` +
		`"_aws":{"Timestamp":1791797400000,"CloudWatchMetrics":[{"Namespace":"agentgate/toolwarrant","Dimensions":[["FunctionName"]],` +
		`"Metrics":[{"Name":"ServersCrawled","Unit":"Count"},{"Name":"ServersFailed","Unit":"Count"}]}]},"failedServers":["weather"]}` + "\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("Marshal (-want +got):\n%s", diff)
	}
	m, err := emftest.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Namespace != "agentgate/toolwarrant" || m.Dimensions["FunctionName"] != "dev-toolwarrant-crawl" ||
		m.Values["ServersCrawled"] != 3 || m.Values["ServersFailed"] != 1 || m.Units["ServersFailed"] != "Count" || m.Timestamp != t0.UnixMilli() {
		t.Errorf("checked = %+v", m)
	}
}

func TestWriteOneLine(t *testing.T) {
	var buf bytes.Buffer
	w := &countingWriter{w: &buf}
	r := record()
	r.Properties = nil
	r.Dimensions = nil
	r.Time = time.Time{}
	if err := emf.Write(w, r); err != nil {
		t.Fatal(err)
	}
	if w.calls != 1 || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("%d writes, %q", w.calls, buf.String())
	}
	m, err := emftest.Check(buf.Bytes())
	if err != nil || len(m.Dimensions) != 0 || m.Timestamp < time.Now().Add(-time.Minute).UnixMilli() {
		t.Errorf("no dimensions, default time: %+v, %v", m, err)
	}
	if err := emf.Write(failingWriter{}, record()); err == nil {
		t.Error("a failed write was not reported")
	}
}

// TestRefused: records CloudWatch would drop (or misread) are errors here.
func TestRefused(t *testing.T) {
	tests := []struct {
		name   string
		change func(*emf.Record)
	}{
		{"no namespace", func(r *emf.Record) { r.Namespace = "" }},
		{"long namespace", func(r *emf.Record) { r.Namespace = strings.Repeat("n", 256) }},
		{"no metrics", func(r *emf.Record) { r.Metrics = nil }},
		{"unnamed metric", func(r *emf.Record) { r.Metrics[0].Name = "" }},
		{"NaN", func(r *emf.Record) { r.Metrics[0].Value = math.NaN() }},
		{"infinity", func(r *emf.Record) { r.Metrics[1].Value = math.Inf(1) }},
		{"metric twice", func(r *emf.Record) { r.Metrics[1].Name = r.Metrics[0].Name }},
		{"empty dimension value", func(r *emf.Record) { r.Dimensions[0].Value = "" }},
		{"dimension named like a metric", func(r *emf.Record) { r.Dimensions[0].Name = "ServersFailed" }},
		{"property named like a dimension", func(r *emf.Record) { r.Properties["FunctionName"] = "x" }},
		{"property _aws", func(r *emf.Record) { r.Properties["_aws"] = 1 }},
		{"31 dimensions", func(r *emf.Record) {
			for i := range 30 {
				r.Dimensions = append(r.Dimensions, emf.Dimension{Name: "d" + string(rune('a'+i)), Value: "v"})
			}
		}},
		{"101 metrics", func(r *emf.Record) {
			for i := range 99 {
				r.Metrics = append(r.Metrics, emf.Metric{Name: "m" + strings.Repeat("x", i), Value: 1})
			}
		}},
		{"invalid UTF-8", func(r *emf.Record) { r.Dimensions[0].Value = "\xff" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := record()
			tc.change(&r)
			if b, err := r.Marshal(); err == nil {
				t.Errorf("accepted: %s", b)
			}
		})
	}
}

// TestCheckerRefuses: the checker is an oracle only if it says no to broken lines.
func TestCheckerRefuses(t *testing.T) {
	good, _ := record().Marshal()
	tests := map[string]string{
		"not JSON":                 `{"_aws":`,
		"no _aws":                  `{"ServersFailed":1}`,
		"timestamp not integer":    strings.Replace(string(good), `"Timestamp":1791797400000`, `"Timestamp":"now"`, 1),
		"no directives":            `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]}}`,
		"no namespace":             strings.Replace(string(good), `"Namespace":"agentgate/toolwarrant",`, ``, 1),
		"dimension without member": strings.Replace(string(good), `"FunctionName":"dev-toolwarrant-crawl",`, ``, 1),
		"metric without value":     strings.Replace(string(good), `"ServersFailed":1,`, ``, 1),
		"value is a string":        strings.Replace(string(good), `"ServersFailed":1,`, `"ServersFailed":"1",`, 1),
		"two lines":                strings.TrimSuffix(string(good), "\n") + "\n" + string(good),
	}
	for name, line := range tests {
		if _, err := emftest.Check([]byte(line)); err == nil {
			t.Errorf("%s: accepted %s", name, line)
		}
	}
	// Lines skips ordinary log lines and checks the EMF ones.
	log := `{"time":"2026-10-12T09:30:00Z","level":"INFO","msg":"crawl recorded"}` + "\n" + string(good)
	ms, err := emftest.Lines([]byte(log))
	if err != nil || len(ms) != 1 || ms[0].Values["ServersCrawled"] != 3 {
		t.Errorf("Lines = %+v, %v", ms, err)
	}
	if _, err := emftest.Lines([]byte(`{"_aws":{}}` + "\n")); err == nil {
		t.Error("Lines accepted a broken EMF line")
	}
}

type countingWriter struct {
	w     *bytes.Buffer
	calls int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.calls++; return c.w.Write(p) }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
