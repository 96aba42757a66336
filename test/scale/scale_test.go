// Package scale_test measures what toolwarrant's AWS deployment costs as the fleet grows
// (issue 32, "Measure first"): the real crawl function (its cold start and handler, as
// functions/crawl builds them from template.yaml's environment) over a loopback fleet of
// fake MCP servers (internal/crawler/fixture, one httptest server, each server under its
// own path), an ExtMcp replica's approvals refresh (enforce.Processor over
// enforce.CatalogSource, as the ECS task role), and the audit log's append rate through
// the single HEAD item (warrant.Service.RecordDecisions from concurrent writers), all
// against moto behind internal/awstest's serializing proxy, IAM and limits, with KMS
// in-process (kmstest). A DynamoDB middleware (meter) counts every call, the items read
// and written, their sizes and the capacity units DynamoDB would charge for them.
//
// BenchmarkScale is the measurement (`make bench-scale`, docs/aws.md "Scale: measured and
// modelled"); it is not a test and never runs under `go test` without -bench.
// TestScaleSetup runs the same steps at 3 servers × 5 tools so that the code cannot rot.
package scale_test

import (
	"os"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) } // awstest.Main, with the in-process KMS

// TestScaleSetup runs every step of BenchmarkScale at 3 servers × 5 tools and checks what
// each did (never how long it took): the first crawl through the function records every
// tool, an unchanged crawl none, a drifted one one per drifted server; a replica's refresh
// with nothing changed reads the audit head alone; concurrent appends all land in the log, which verifies.
func TestScaleSetup(t *testing.T) {
	const servers, tools = 3, 5
	d := newDeployment(t, servers, tools)
	h, reg := d.crawlFunction(t)
	if reg.T.Calls["TransactWriteItems"] < servers || reg.KMS < servers {
		t.Errorf("registering %d servers: %s", servers, reg)
	}
	first := d.crawl(t, h, "first crawl")
	if first.Units != servers || first.newVersions() != servers*tools || first.T.ItemsWritten < servers*tools || first.T.WCU <= 0 || first.T.RCU <= 0 {
		t.Errorf("first crawl: %s; %d new versions", first, first.newVersions())
	}
	if first.List <= 0 || first.Record <= 0 {
		t.Errorf("first crawl: listing %s, recording %s: the fleet's last answer does not split the crawl", first.List, first.Record)
	}
	same := d.crawl(t, h, "unchanged crawl")
	if same.Units != servers || same.newVersions() != 0 || same.T.HeadUpdates != servers {
		t.Errorf("unchanged crawl: %s; %d new versions", same, same.newVersions())
	}
	d.fleet.drift(1, 1)
	drift := d.crawl(t, h, "drift crawl")
	if drift.newVersions() != 1 {
		t.Errorf("drift crawl: %s; %d new versions, want 1", drift, drift.newVersions())
	}
	d.approveDirect(t, 2)
	// Nothing changed since the replica's first read: its refresh reads the audit head
	// alone (the change feed), however many servers it serves.
	r := d.refresh(t, servers)
	if r.readCalls() != 1 || r.T.ItemsRead != 1 {
		t.Errorf("refresh with nothing changed: %s; want one read (the audit head)", r)
	}
	// The fan-out crawl, on a deployment of its own: every server recorded (fanout checks).
	fo := newDeployment(t, 4, 2).fanout(t)
	if fo.Units != 4 || fo.Invocations < 1 || fo.Failed != 0 || fo.Parked != 0 || fo.T.HeadUpdates < 4 {
		t.Errorf("fan-out crawl: %s; %d invocations, %d failed messages, %d parked", fo, fo.Invocations, fo.Failed, fo.Parked)
	}
	a, gaveUp := d.appends(t, 2, 2, false)
	if a.Units+gaveUp != 4 || a.T.HeadUpdates < a.Units {
		t.Errorf("appends: %s; %d gave up", a, gaveUp)
	}
	// Sequenced, as the interceptor role (its DeleteItem on the queue, the lease's update).
	sq, notYet := d.appends(t, 3, 2, true)
	if sq.Units != 6 || notYet != 0 || sq.T.HeadUpdates < 1 {
		t.Errorf("sequenced appends: %s; %d not sequenced", sq, notYet)
	}
	for _, st := range []step{reg, first.step, same.step, drift.step, r, a, sq} {
		t.Log(st)
	}
	if _, rep := d.dep.AuditLog(t); !rep.OK() {
		t.Errorf("audit log does not verify: %+v", rep)
	}
}
