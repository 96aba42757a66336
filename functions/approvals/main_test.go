package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// TestColdStartAndEvents: main's cold start, then the committed API events: proposals
// and tools (none yet), the audit export, a diff of an unknown tool (404), the sample decision (404: placeholder
// digest), and the same request without an IAM principal (403).
func TestColdStartAndEvents(t *testing.T) {
	d := awsapptest.Deploy(t)
	e := d.FunctionEnv(t)
	cfg := d.Config(t, "ApprovalsRole") // the function runs as its template role
	h, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awsapp.WarrantOptions{KMS: []func(*kms.Options){kmstest.Options(t)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		noIAM  bool
		status int
	}{{"approvals-proposals.json", false, 200}, {"approvals-tools.json", false, 200}, {"approvals-audit.json", false, 200}, {"approvals-audit.json", true, 403}, {"approvals-diff.json", false, 404}, {"approvals-version.json", false, 404}, {"approvals-decide.json", false, 404}, {"approvals-decide.json", true, 403}} {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(testenv.Event(t, tc.file), &ev); err != nil {
			t.Fatal(err)
		}
		if tc.noIAM {
			ev.RequestContext.Authorizer = nil
		}
		resp, err := h(t.Context(), ev)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s (no IAM %v): %d %s, %v; want %d", tc.file, tc.noIAM, resp.StatusCode, resp.Body, err, tc.status)
		}
	}
}
