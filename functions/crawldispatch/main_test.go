package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// drain receives every message on the queue (as the administrator) and returns the
// servers they name, each message's list in order.
func drain(t *testing.T, cfg aws.Config, url string) [][]string {
	t.Helper()
	c := sqs.NewFromConfig(cfg)
	var out [][]string
	for range 50 {
		r, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			break
		}
		for _, m := range r.Messages {
			var cm awsapp.CrawlMessage
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &cm); err != nil {
				t.Fatalf("message %q: %v", aws.ToString(m.Body), err)
			}
			out = append(out, cm.Servers)
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// TestColdStartAndEvents: the dispatcher's cold start on the template's environment, as
// its template role (which may read the SERVERS partition and send to the crawl queue),
// then the scheduled event (every server of the catalog and of TOOLWARRANT_SERVERS: more
// than one SendMessageBatch's 10 entries, which the harness enforces), the manual one,
// and an event naming an invalid server, which queues nothing.
func TestColdStartAndEvents(t *testing.T) {
	d := awsapptest.Deploy(t)
	crawl := d.Warrant(t, "CrawlRole", d.CrawlRoleARN())
	for i := range 23 {
		name := fmt.Sprintf("srv-%02d", i)
		if _, err := crawl.Service.AddServer(t.Context(), warrant.Server{Name: name, URL: "https://" + name + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	e := d.FunctionEnv(t) // TOOLWARRANT_SERVERS names "weather", not yet in the catalog
	e["CRAWL_SERVERS_PER_MESSAGE"] = "2"
	cfg := d.Config(t, "CrawlDispatchRole")
	var metrics bytes.Buffer
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, &metrics, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	admin := awstest.Config(t)
	res, err := h(t.Context(), testenv.Event(t, "crawl-scheduled.json"))
	if err != nil || res.Servers != 24 || res.Messages != 12 {
		t.Fatalf("scheduled: %+v, %v; want 24 servers in 12 messages", res, err)
	}
	got := drain(t, admin, d.CrawlQueue)
	var all []string
	for _, m := range got {
		if len(m) != 2 {
			t.Errorf("message %v: want 2 servers", m)
		}
		all = append(all, m...)
	}
	slices.Sort(all)
	if len(all) != 24 || all[0] != "srv-00" || all[22] != "srv-22" || all[23] != "weather" {
		t.Errorf("queued %v; want srv-00 … srv-22 and weather", all)
	}
	res, err = h(t.Context(), testenv.Event(t, "crawl-manual.json"))
	if err != nil || res.Servers != 1 || res.Messages != 1 {
		t.Errorf("manual: %+v, %v", res, err)
	}
	if got := drain(t, admin, d.CrawlQueue); len(got) != 1 || !slices.Equal(got[0], []string{"weather"}) {
		t.Errorf("manual queued %v; want [[weather]]", got)
	}
	if _, err := h(t.Context(), json.RawMessage(`{"servers":["ok","../etc"]}`)); err == nil || !strings.Contains(err.Error(), "nothing was queued") {
		t.Errorf("an invalid server name: %v", err)
	}
	if got := drain(t, admin, d.CrawlQueue); len(got) != 0 {
		t.Errorf("an invalid event queued %v", got)
	}
	if ms, err := emftest.Lines(metrics.Bytes()); err != nil || len(ms) != 2 || ms[0].Values[awsapp.MetricServersDispatched] != 24 {
		t.Errorf("EMF records %+v, %v; want two, the first 24 servers dispatched", ms, err)
	}
	// The crawl role may not send to the crawl queue, nor the dispatcher's read a server's
	// own records: each role holds only its template statements.
	crawlCfg := d.Config(t, "CrawlRole")
	if _, err := sqs.NewFromConfig(crawlCfg).SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(d.CrawlQueue), MessageBody: aws.String(`{"servers":["x"]}`)}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("the crawl role sent to the crawl queue: %v", err)
	}
	if _, err := newHandler(t.Context(), func(string) string { return "" }, &cfg, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without configuration succeeded")
	}
}
