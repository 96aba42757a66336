package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestColdStartAndEvent: main's cold start, then the scheduled event on an empty log
// (nothing to checkpoint).
func TestColdStartAndEvent(t *testing.T) {
	d := awsapptest.Deploy(t)
	e := d.FunctionEnv(t)
	cfg := d.Config(t, "CheckpointRole") // the function runs as its template role
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var ev any
	_ = json.Unmarshal(testenv.Event(t, "checkpoint-scheduled.json"), &ev)
	if res, err := h(t.Context(), ev); err != nil || res.Written || res.Head.Seq != 0 {
		t.Errorf("checkpoint of an empty log: %+v, %v", res, err)
	}
	delete(e, "CHECKPOINT_BUCKET")
	if _, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("cold start without CHECKPOINT_BUCKET succeeded")
	}
}
