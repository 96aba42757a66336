package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
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
		out, err := h(t.Context(), testenv.Event(t, ev))
		if res, ok := out.(awsapp.CrawlResult); err != nil || !ok || res.Recorded != 1 || res.Failed != 0 {
			t.Errorf("%s: %+v, %v", ev, out, err)
		}
	}
	// The queue's event source: the message's server is crawled, no message failed.
	out, err := h(t.Context(), testenv.Event(t, "crawl-queue.json"))
	if res, ok := out.(events.SQSEventResponse); err != nil || !ok || len(res.BatchItemFailures) != 0 {
		t.Errorf("crawl-queue.json: %#v, %v; want no batch item failures", out, err)
	}
	// A message naming a server the catalog does not have fails alone.
	bad := strings.Replace(string(testenv.Event(t, "crawl-queue.json")), `[\"weather\"]`, `[\"no-such-server\"]`, 1)
	out, err = h(t.Context(), json.RawMessage(bad))
	if res, ok := out.(events.SQSEventResponse); err != nil || !ok || len(res.BatchItemFailures) != 1 || res.BatchItemFailures[0].ItemIdentifier != "3f1c2a9e-2b7d-4c1e-9a55-0d5c8e6f7a10" {
		t.Errorf("a message for an unknown server: %#v, %v; want that message failed", out, err)
	}
	// main sends the EMF records to stdout, the function's log: one per invocation.
	if ms, err := emftest.Lines(metrics.Bytes()); err != nil || len(ms) != 4 || ms[1].Values[awsapp.MetricServersFailed] != 0 || ms[1].Values[awsapp.MetricServersCrawled] != 1 || ms[3].Values[awsapp.MetricServersFailed] != 1 {
		t.Errorf("EMF records %+v, %v; want four, the last with one failed server", ms, err)
	}
	if _, err := newHandler(t.Context(), func(string) string { return "" }, &cfg, awsapp.WarrantOptions{}, crawler.Config{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without configuration succeeded")
	}
}
