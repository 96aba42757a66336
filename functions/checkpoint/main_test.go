package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/emf/emftest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestColdStartAndEvent: main's cold start, then the scheduled event on an empty log
// (nothing to checkpoint), on a catalog table nothing has written yet: the function only
// reads it (its role may only GetItem and Query; the format marker is the writers' to put).
func TestColdStartAndEvent(t *testing.T) {
	d := awsapptest.Deploy(t)
	e := d.FunctionEnv(t)
	cfg := d.Config(t, "CheckpointRole") // the function runs as its template role
	var metrics bytes.Buffer
	calls := awstest.NewCalls()
	o := awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}, Metrics: &metrics,
		DynamoDB: []func(*dynamodb.Options){func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) }}}
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var ev any
	_ = json.Unmarshal(testenv.Event(t, "checkpoint-scheduled.json"), &ev)
	if res, err := h(t.Context(), ev); err != nil || res.Written || res.Head.Seq != 0 {
		t.Errorf("checkpoint of an empty log: %+v, %v", res, err)
	}
	// main sends the EMF record to stdout, the function's log.
	if ms, err := emftest.Lines(metrics.Bytes()); err != nil || len(ms) != 1 || ms[0].Values[awsapp.MetricCheckpointMismatch] != 0 {
		t.Errorf("EMF records %+v, %v; want one, no mismatch", ms, err)
	}
	got := calls.Take()
	for op := range got {
		if op != "GetItem" && op != "Query" {
			t.Errorf("the checkpoint function called DynamoDB %s (calls %v); its role allows GetItem and Query only", op, got)
		}
	}
	delete(e, "CHECKPOINT_BUCKET")
	if _, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without CHECKPOINT_BUCKET succeeded")
	}
}
