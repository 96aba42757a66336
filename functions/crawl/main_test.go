package main

import (
	"bytes"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/crawler"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestColdStartAndEvents: main's cold start on the template's environment, then the
// scheduled and manual events.
func TestColdStartAndEvents(t *testing.T) {
	d := awsapptest.Deploy(t)
	e := d.FunctionEnv(t)
	cfg := d.Config(t, "CrawlRole") // the function runs as its template role
	var metrics bytes.Buffer
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}, Metrics: &metrics}, crawler.Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"crawl-scheduled.json", "crawl-manual.json"} {
		res, err := h(t.Context(), testenv.Event(t, ev))
		if err != nil || res.Recorded != 1 || res.Failed != 0 {
			t.Errorf("%s: %+v, %v", ev, res, err)
		}
	}
	// main sends the EMF records to stdout, the function's log: one per invocation.
	if ms, err := emftest.Lines(metrics.Bytes()); err != nil || len(ms) != 2 || ms[1].Values[awsapp.MetricServersFailed] != 0 || ms[1].Values[awsapp.MetricServersCrawled] != 1 {
		t.Errorf("EMF records %+v, %v; want two, no failed server", ms, err)
	}
	if _, err := newHandler(t.Context(), func(string) string { return "" }, &cfg, awsapp.WarrantOptions{}, crawler.Config{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without configuration succeeded")
	}
}
