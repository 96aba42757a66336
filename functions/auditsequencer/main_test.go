package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestSweepAsTheTemplateRole: an interceptor instance queues a decision window and dies
// before integrating it; the sweep's cold start on the template's environment, as its
// template role, integrates it (one queue item, two entries), reports it in its EMF line,
// and finds nothing the next time; the log verifies. Each role holds only its statements:
// the sweep's cannot write a server, the interceptor's cannot delete an audit record.
func TestSweepAsTheTemplateRole(t *testing.T) {
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	ctx := t.Context()
	c := config.WarrantAWS{CatalogTable: d.Table, LogKey: d.Key, MaxAttempts: 1}
	dying, err := awsapp.NewWarrant(ctx, d.Config(t, "InterceptorRole"), c, "interceptor", slog.New(slog.DiscardHandler),
		awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}, DynamoDB: []func(*dynamodb.Options){func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, awstest.Unsent("TransactWriteItems", errors.New("the writer died")))
		}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	recs := make([]warrant.DecisionCount, warrant.MaxDecisionsPerEntry+1) // two entries
	for i := range recs {
		recs[i] = warrant.DecisionCount{Server: "weather", Tool: "get_forecast", Method: "tools/call", Outcome: "allowed", Count: uint64(i + 1)}
	}
	win := warrant.DecisionWindow{Point: "agentcore", Instance: "dying", From: now.Add(-time.Minute), To: now, Records: recs}
	if err := dying.Service.RecordDecisions(ctx, win); err == nil {
		t.Fatal("a writer that could not integrate acknowledged its decisions")
	}

	e := d.FunctionEnv(t)
	cfg := d.Config(t, "AuditSequencerRole")
	var metrics bytes.Buffer
	h, err := newHandler(ctx, func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}}, &metrics, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(ctx, json.RawMessage(testenv.Event(t, "audit-sequencer-scheduled.json")))
	if err != nil || res.Queued != 1 || res.Written != 2 || res.Oldest.IsZero() {
		t.Fatalf("sweep: %+v, %v; want 1 queue item, 2 entries written", res, err)
	}
	if res, err := h(ctx, nil); err != nil || res.Queued != 0 || res.Written != 0 {
		t.Errorf("second sweep: %+v, %v; want nothing", res, err)
	}
	if ms, err := emftest.Lines(metrics.Bytes()); err != nil || len(ms) != 2 || ms[0].Values[awsapp.MetricAuditQueued] != 1 || ms[1].Values[awsapp.MetricAuditQueued] != 0 {
		t.Errorf("EMF records %+v, %v; want two, 1 then 0 queued", ms, err)
	}
	log, rep := d.AuditLog(t)
	if !rep.OK() || len(log) != 2 || log[0].Type != warrant.EventDecisionsRecorded || log[1].Type != warrant.EventDecisionsRecorded {
		t.Fatalf("audit log: %d entries, %+v", len(log), rep)
	}
	seqDB := dynamodb.NewFromConfig(cfg)
	if _, err := seqDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "SERVERS"}, "sk": &types.AttributeValueMemberS{Value: "SRV#x"}}}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("the sweep's role wrote a server: %v", err)
	}
	icfg := d.Config(t, "InterceptorRole")
	if _, err := dynamodb.NewFromConfig(icfg).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(d.Table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "AUDIT"}, "sk": &types.AttributeValueMemberS{Value: "REC#000000000002"}}}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("the interceptor's role deleted an audit record: %v", err)
	}
	if _, err := newHandler(ctx, func(string) string { return "" }, &cfg, awsapp.WarrantOptions{}, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without configuration succeeded")
	}
}
