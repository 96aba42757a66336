package warrantaws_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// oneRecord checks that the handler wrote exactly one EMF line since the last call, in the
// namespace and dimension template.yaml's alarms name, and returns it.
func oneRecord(t *testing.T, buf *bytes.Buffer, function string) emftest.Metrics {
	t.Helper()
	ms, err := emftest.Lines(buf.Bytes())
	buf.Reset()
	if err != nil {
		t.Fatalf("not EMF: %v", err)
	}
	if len(ms) != 1 {
		t.Fatalf("%d EMF records, want one per invocation", len(ms))
	}
	m := ms[0]
	if m.Namespace != awsapp.MetricsNamespace || len(m.Dimensions) != 1 || m.Dimensions[awsapp.MetricDimension] != function {
		t.Errorf("namespace %q, dimensions %v; want %s, %s=%s", m.Namespace, m.Dimensions, awsapp.MetricsNamespace, awsapp.MetricDimension, function)
	}
	return m
}

// TestCrawlMetrics: each crawl invocation ends with one EMF record counting the servers it
// tried and those that failed — the invocation itself succeeds, so this is what the
// crawl-failure alarm sees — and naming the failed ones.
func TestCrawlMetrics(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	// A second server on a loopback port where nothing listens: refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	s.c.Servers = append(s.c.Servers, warrant.Server{Name: "down", URL: down, AllowPrivate: true})
	var buf bytes.Buffer
	bounds, _ := config.LoadToolwarrant(func(string) string { return "" })
	bounds.CrawlTimeout = 5 * time.Second
	d := awsapp.CrawlDeps{Warrant: s.warrant(t, crawlRole, awsapp.WarrantOptions{}), Config: s.c, Bounds: bounds, Getenv: func(string) string { return "" },
		Logger: slog.New(slog.DiscardHandler), Metrics: awsapp.Metrics{W: &buf, Function: "dev-toolwarrant-crawl"}}
	if err := awsapp.RegisterServers(ctx, d); err != nil {
		t.Fatal(err)
	}
	crawl := awsapp.CrawlHandler(d)

	tests := []struct {
		name          string
		event         string
		crawled, fail float64
		failed        []string
	}{
		{"scheduled, one server down", string(testenv.Event(t, "crawl-scheduled.json")), 2, 1, []string{"down"}},
		{"manual, the good one", `{"servers":["weather"]}`, 1, 0, nil},
		{"manual, one unknown", `{"servers":["weather","nope"]}`, 2, 1, []string{"nope"}},
	}
	for _, tc := range tests {
		res, err := crawl(ctx, json.RawMessage(tc.event))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := oneRecord(t, &buf, "dev-toolwarrant-crawl")
		if got := m.Values[awsapp.MetricServersCrawled]; got != tc.crawled || got != float64(len(res.Servers)) {
			t.Errorf("%s: %s = %v, want %v (%d outcomes)", tc.name, awsapp.MetricServersCrawled, got, tc.crawled, len(res.Servers))
		}
		if got := m.Values[awsapp.MetricServersFailed]; got != tc.fail || got != float64(res.Failed) {
			t.Errorf("%s: %s = %v, want %v (result says %d)", tc.name, awsapp.MetricServersFailed, got, tc.fail, res.Failed)
		}
		if m.Units[awsapp.MetricServersFailed] != "Count" {
			t.Errorf("%s: unit %q", tc.name, m.Units[awsapp.MetricServersFailed])
		}
		var failed []string
		for _, f := range m.Members["failedServers"].([]any) {
			failed = append(failed, f.(string))
		}
		if !slices.Equal(failed, tc.failed) {
			t.Errorf("%s: failedServers = %v, want %v", tc.name, failed, tc.failed)
		}
	}
}

// TestCheckpointMetrics: every checkpoint run ends with one EMF record that tells a log
// that no longer verifies (CheckpointMismatch: the tampering alarm) from a run that could
// not finish (CheckpointUnavailable: KMS down), and says 0/0 when all is well.
func TestCheckpointMetrics(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	if _, err := s.crawl(t, awsapp.WarrantOptions{})(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil {
		t.Fatal(err)
	}
	var kmsDown atomic.Bool
	w := s.warrant(t, "checkpoint", awsapp.WarrantOptions{KMS: []func(*kms.Options){outage(&kmsDown)}})
	var buf bytes.Buffer
	run, err := awsapp.CheckpointHandler(w, slog.New(slog.DiscardHandler), awsapp.Metrics{W: &buf, Function: "dev-toolwarrant-checkpoint"})
	if err != nil {
		t.Fatal(err)
	}
	event := json.RawMessage(testenv.Event(t, "checkpoint-scheduled.json"))
	// wantErr: nil for success, errAny for any error, else a sentinel the error wraps.
	check := func(name string, wantErr error, mismatch, unavailable float64) {
		t.Helper()
		_, err := run(ctx, event)
		switch {
		case wantErr == nil && err != nil, wantErr != nil && err == nil:
			t.Errorf("%s: %v, want %v", name, err, wantErr)
		case errors.Is(wantErr, errAny):
		case wantErr != nil && !errors.Is(err, wantErr):
			t.Errorf("%s: %v, want %v", name, err, wantErr)
		}
		m := oneRecord(t, &buf, "dev-toolwarrant-checkpoint")
		if m.Values[awsapp.MetricCheckpointMismatch] != mismatch || m.Values[awsapp.MetricCheckpointUnavailable] != unavailable {
			t.Errorf("%s: %s=%v %s=%v, want %v and %v", name, awsapp.MetricCheckpointMismatch, m.Values[awsapp.MetricCheckpointMismatch],
				awsapp.MetricCheckpointUnavailable, m.Values[awsapp.MetricCheckpointUnavailable], mismatch, unavailable)
		}
	}
	check("first checkpoint", nil, 0, 0)
	check("nothing new", nil, 0, 0)

	// More entries while KMS is down: the run cannot sign; an outage, not a mismatch.
	s.mcp.SetTools(tool("get_forecast", "changed"))
	if _, err := s.crawl(t, awsapp.WarrantOptions{})(ctx, json.RawMessage(testenv.Event(t, "crawl-manual.json"))); err != nil {
		t.Fatal(err)
	}
	kmsDown.Store(true)
	check("KMS down", errAny, 0, 1)
	kmsDown.Store(false)

	// A genuine checkpoint (signed by the log key) of an entry the log does not have: the
	// log no longer agrees with it, as after a truncation of the table.
	head, _ := w.Catalog.AuditHead(ctx)
	ahead, err := checkpoint.Sign(ctx, w.Signer, warrant.AuditHead{Seq: head.Seq + 5, Hash: strings.Repeat("ab", 32)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ahead.Marshal()
	if err := w.Blobs.PutIfAbsent(ctx, checkpoint.Key(ahead.Seq), b); err != nil {
		t.Fatal(err)
	}
	check("log behind its checkpoint", checkpoint.ErrRewritten, 1, 0)

	// A forged newest checkpoint (not signed by the log key): the bucket was written by
	// someone else; also evidence, not an outage.
	forged := strings.Replace(string(b), `"seq":`+itoa(ahead.Seq), `"seq":`+itoa(ahead.Seq+1), 1)
	if err := w.Blobs.PutIfAbsent(ctx, checkpoint.Key(ahead.Seq+1), []byte(forged)); err != nil {
		t.Fatal(err)
	}
	check("forged checkpoint", checkpoint.ErrUntrusted, 1, 0)
}

// errAny: any error will do.
var errAny = errors.New("any error")

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
