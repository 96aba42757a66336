package rie_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestAuditSequencerUnderRIE: an interceptor instance queues a window of decision records
// and dies before integrating it; the built audit sequencer bootstrap, under
// aws-lambda-rie as its template role against moto (IAM enforced) and KMS, integrates it
// on the scheduled event of events/, and the audit log verifies.
func TestAuditSequencerUnderRIE(t *testing.T) {
	rie := rietest.Find(t)
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dies := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, awstest.Unsent("TransactWriteItems", errors.New("the instance died")))
	}
	w, err := awsapp.NewWarrant(ctx, d.Config(t, "InterceptorRole"), config.WarrantAWS{CatalogTable: d.Table, LogKey: d.Key, MaxAttempts: 1}, "interceptor",
		slog.New(slog.DiscardHandler), awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}, DynamoDB: []func(*dynamodb.Options){dies}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	win := warrant.DecisionWindow{Point: "agentcore", Instance: "dying", From: now.Add(-time.Minute), To: now,
		Records: []warrant.DecisionCount{{Server: "weather", Tool: "get_forecast", Method: "tools/call", Outcome: "allowed", Count: 3}}}
	if err := w.Service.RecordDecisions(ctx, win); !errors.Is(err, warrant.ErrQueued) {
		t.Fatalf("the dying instance's decisions: %v, want ErrQueued", err)
	}

	boot := rietest.Build(t, "auditsequencer")
	role := d.Roles["AuditSequencerRole"]
	emu := rietest.Start(t, rie, boot, append(append(role.Env(t), kmstest.Env(t)...), "CATALOG_TABLE="+d.Table, "AUDIT_KMS_KEY="+d.Key))
	raw, err := emu.FirstInvoke(ctx, testenv.Event(t, "audit-sequencer-scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res awsapp.SequenceResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Queued != 1 || res.Written != 1 {
		t.Fatalf("sweep answered %s (%v); want 1 queued, 1 written", raw, err)
	}
	emu.Stop()
	if !strings.Contains(emu.Logs(), "audit queue integrated") {
		t.Errorf("the sweep did not log what it integrated:\n%s", emu.Logs())
	}
	recs, rep := d.AuditLog(t)
	if !rep.OK() || len(recs) != 1 || recs[0].Type != warrant.EventDecisionsRecorded {
		t.Fatalf("audit log: %d entries, %+v", len(recs), rep)
	}
}
