package scale_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
)

// params are the sizes of one scale run, from the environment (make bench-scale sets
// none: the defaults are the fraction docs/aws.md states).
type params struct {
	// Servers × Tools is the fleet (SCALE_SERVERS, SCALE_TOOLS).
	Servers, Tools int
	// Small is the smaller catalog the growth with catalog size is read against
	// (SCALE_SMALL): the first crawl's reads per server and a replica's refresh.
	Small int
	// Drift is how many servers change one tool before the drift crawl (SCALE_DRIFT).
	Drift int
	// Approved is how many tools of each server are approved before the refreshes
	// (SCALE_APPROVED).
	Approved int
	// Writers and Appends shape the append-rate step: that many concurrent writers, each
	// appending that many entries (SCALE_WRITERS, SCALE_APPENDS); the step runs again with
	// WritersMany (SCALE_WRITERS_MANY) writers.
	Writers, WritersMany, Appends int
	// FanOut × FanOutTools is the fleet of the fan-out crawl (SCALE_FANOUT_SERVERS,
	// SCALE_FANOUT_TOOLS): few tools, so that moto's table copies let it finish here.
	FanOut, FanOutTools int
}

func scaleParams(b *testing.B) params {
	p := params{Servers: 50, Tools: 40, Small: 10, Drift: 5, Approved: 1, Writers: 8, WritersMany: 32, Appends: 25, FanOut: 500, FanOutTools: 2}
	num := func(k string, v *int) {
		if s := os.Getenv(k); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 100000 {
				b.Fatalf("%s=%q: want a whole number from 1 to 100000", k, s)
			}
			*v = n
		}
	}
	num("SCALE_SERVERS", &p.Servers)
	num("SCALE_TOOLS", &p.Tools)
	num("SCALE_SMALL", &p.Small)
	num("SCALE_DRIFT", &p.Drift)
	num("SCALE_APPROVED", &p.Approved)
	num("SCALE_WRITERS", &p.Writers)
	num("SCALE_WRITERS_MANY", &p.WritersMany)
	num("SCALE_APPENDS", &p.Appends)
	num("SCALE_FANOUT_SERVERS", &p.FanOut)
	num("SCALE_FANOUT_TOOLS", &p.FanOutTools)
	p.Drift, p.Small = min(p.Drift, p.Servers), min(p.Small, p.Servers)
	return p
}

// report reports a step's costs as metrics named prefix-*, per unit of work (a server,
// an append, a served server) where it says /unit, and logs the whole step.
func report(b *testing.B, prefix string, s step) {
	b.Helper()
	b.Log(s)
	per := float64(max(1, s.Units))
	m := func(v float64, unit string) { b.ReportMetric(v, prefix+"-"+unit) }
	m(s.Wall.Seconds(), "wall-s")
	m(s.T.Time.Seconds(), "ddb-s")
	m(s.KMSTime.Seconds(), "kms-s")
	m(s.ownTime().Seconds()/per, "own-s/unit")
	m(float64(s.calls())/per, "ddb-calls/unit")
	m(float64(s.readCalls())/per, "ddb-reads/unit")
	m(float64(s.T.ItemsRead)/per, "items-read/unit")
	m(float64(s.T.ItemsWritten)/per, "items-written/unit")
	m(s.T.RCU/per, "rcu/unit")
	m(s.T.WCU/per, "wcu/unit")
	m(float64(s.KMS)/per, "kms/unit")
	m(float64(s.readCalls()), "ddb-reads")
	m(s.T.RCU, "rcu")
	m(s.T.WCU, "wcu")
	m(s.T.Reported, "moto-cu")
	_, hw := hottest(s.T.PartWCU)
	m(hw, "hot-partition-wcu")
	m(float64(s.T.HeadUpdates), "head-updates")
	m(float64(s.T.MaxItem), "max-item-bytes")
	_, hr := hottest(s.T.PartRCU)
	m(hr, "hot-partition-rcu")
}

func reportCrawl(b *testing.B, prefix string, c crawlStep) {
	b.Helper()
	report(b, prefix, c.step)
	b.Logf("%s: listing %s, recording %s, %d new versions", c.Name, c.List.Round(time.Millisecond), c.Record.Round(time.Millisecond), c.newVersions())
	b.ReportMetric(c.List.Seconds(), prefix+"-list-s")
	b.ReportMetric(c.Record.Seconds(), prefix+"-record-s")
	b.ReportMetric(float64(c.Units)/c.Wall.Minutes(), prefix+"-servers/min")
	if c.List > 0 {
		b.ReportMetric(float64(c.Units)/c.List.Minutes(), prefix+"-list-servers/min")
	}
	b.ReportMetric(c.Wall.Seconds()*lambdaMemoryGB, prefix+"-gb-s")
	b.ReportMetric(float64(c.newVersions()), prefix+"-new-versions")
}

// BenchmarkScale measures the AWS deployment's costs per step at a fraction of the
// 5,000 servers × 40 tools target (docs/aws.md, "Scale: measured and modelled"). Run it
// with -benchtime 1x: each sub-benchmark is one run of its steps, on a fresh deployment.
//
//   - Catalog/servers=SMALL: a new deployment of SCALE_SMALL servers: the crawl
//     function's cold start (registering them), its first crawl (every tool a new
//     version), an unchanged crawl, and a replica's refresh of every server: the
//     baselines of the growth with catalog size.
//   - Catalog/servers=N: the same at SCALE_SERVERS × SCALE_TOOLS, then a second cold start
//     (servers already there), a crawl in which SCALE_DRIFT servers changed one tool, a
//     replica's refresh of every server and of SCALE_SMALL of them.
//   - FanOut/servers=F: one scheduled crawl of SCALE_FANOUT_SERVERS × SCALE_FANOUT_TOOLS
//     through the crawl fan-out (the dispatcher, then the crawl queue's event source with
//     the template's CrawlWorkers and CrawlBatchSize), on a deployment of its own: its wall
//     time, its longest invocation against the function's 120 s timeout, and every server
//     recorded.
//   - Appends/writers=W: the audit log's append rate, on a deployment of its own: through
//     its HEAD item with one writer and with W at once (the baseline), then through the
//     sequencer with W at once (as the interceptor records), each SCALE_APPENDS entries;
//     W is SCALE_WRITERS, then SCALE_WRITERS_MANY.
func BenchmarkScale(b *testing.B) {
	p := scaleParams(b)
	b.Logf("fleet %d servers × %d tools (%.1f%% of 5,000 × 40), small catalog %d; %d drifted; %d approved per server; %d writers × %d appends",
		p.Servers, p.Tools, 100*float64(p.Servers*p.Tools)/(5000*40), p.Small, p.Drift, p.Approved, p.Writers, p.Appends)
	// catalog runs the steps every size has: it returns the deployment and the handler.
	catalog := func(b *testing.B, n int) (*deployment, func(context.Context, json.RawMessage) (awsapp.CrawlResult, error)) {
		d := newDeployment(b, n, p.Tools)
		b.ReportMetric(float64(len(d.env["TOOLWARRANT_SERVERS"])), "servers-env-bytes")
		h, reg := d.crawlFunction(b)
		report(b, "register", reg)
		reportCrawl(b, "first", d.crawl(b, h, "first crawl"))
		reportCrawl(b, "unchanged", d.crawl(b, h, "unchanged crawl"))
		return d, h
	}
	if p.Small < p.Servers {
		b.Run(fmt.Sprintf("Catalog/servers=%d", p.Small), func(b *testing.B) {
			for range b.N {
				d, _ := catalog(b, p.Small)
				d.approveDirect(b, p.Approved)
				report(b, "refresh", d.refresh(b, p.Small))
			}
		})
	}
	b.Run(fmt.Sprintf("Catalog/servers=%d", p.Servers), func(b *testing.B) {
		for range b.N {
			d, h := catalog(b, p.Servers)
			_, again := d.crawlFunction(b)
			report(b, "coldstart", again)
			d.fleet.drift(p.Drift, 1)
			reportCrawl(b, "drift", d.crawl(b, h, fmt.Sprintf("crawl, %d servers drifted", p.Drift)))
			start := time.Now()
			d.approveDirect(b, p.Approved)
			b.Logf("approved %d tools of each server in %s (not measured)", p.Approved, time.Since(start).Round(time.Millisecond))
			report(b, "refresh", d.refresh(b, p.Servers))
			if p.Small < p.Servers {
				report(b, "refresh-part", d.refresh(b, p.Small))
			}
		}
	})
	b.Run(fmt.Sprintf("FanOut/servers=%d", p.FanOut), func(b *testing.B) {
		for range b.N {
			d := newDeployment(b, p.FanOut, p.FanOutTools)
			s := d.fanout(b)
			report(b, "fanout", s.step)
			b.Logf("fan-out: %d servers in %s (dispatch %s), %d invocations, longest %s (timeout %s), %d failed messages, %d parked",
				s.Units, s.Wall.Round(time.Millisecond), s.Dispatch.Round(time.Millisecond), s.Invocations, s.Longest.Round(time.Millisecond), workerTimeout, s.Failed, s.Parked)
			b.ReportMetric(float64(s.Units)/s.Wall.Minutes(), "fanout-servers/min")
			b.ReportMetric(s.Longest.Seconds(), "fanout-longest-invocation-s")
			b.ReportMetric(s.Dispatch.Seconds(), "fanout-dispatch-s")
			b.ReportMetric(float64(s.Invocations), "fanout-invocations")
			b.ReportMetric(float64(s.Failed), "fanout-failed-messages")
			b.ReportMetric(float64(s.Parked), "fanout-parked")
			if s.Longest >= workerTimeout {
				b.Errorf("an invocation took %s, over the crawl function's %s timeout", s.Longest, workerTimeout)
			}
		}
	})
	// The append rate on a table of its own: DynamoDB's cost of an append does not depend on
	// the table's size, moto's does (its TransactWriteItems copies the whole table for
	// each item it writes), so the catalog's size must not slow this step here.
	for _, writers := range []int{p.Writers, p.WritersMany} {
		b.Run(fmt.Sprintf("Appends/writers=%d", writers), func(b *testing.B) {
			for range b.N {
				d := newDeployment(b, 0, p.Tools)
				one, _ := d.appends(b, 1, p.Appends, false)
				report(b, "append1", one)
				b.ReportMetric(float64(one.Units)/one.Wall.Seconds(), "append1-appends/s")
				many, gaveUp := d.appends(b, writers, p.Appends, false)
				report(b, "appendN", many)
				b.ReportMetric(float64(many.Units)/many.Wall.Seconds(), "appendN-appends/s")
				b.ReportMetric(float64(gaveUp), "appendN-gave-up")
				b.ReportMetric(float64(writers), "appendN-writers")
				b.Logf("%d writers through the HEAD: %d appended, %d gave up after the service's attempts", writers, many.Units, gaveUp)
				seq, lost := d.appends(b, writers, p.Appends, true)
				report(b, "appendSeq", seq)
				b.ReportMetric(float64(seq.Units)/seq.Wall.Seconds(), "appendSeq-appends/s")
				b.ReportMetric(float64(lost), "appendSeq-gave-up")
				b.Logf("%d writers sequenced: %d appended, %d not sequenced in time", writers, seq.Units, lost)
			}
		})
	}
}
