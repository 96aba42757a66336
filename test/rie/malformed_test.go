package rie_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestMalformedEventsUnderRIE: through the real runtime loop (aws-lambda-rie, the bootstrap
// as SAM builds it), events the function cannot read as HTTP API requests — a member of the
// wrong JSON type, a body marked isBase64Encoded that is not base64, no method — are
// answered 400 with the Padlock error body, not as function errors (errorMessage), which API
// Gateway would turn into 500s; the function keeps serving, and nothing was stored.
func TestMalformedEventsUnderRIE(t *testing.T) {
	rie := rietest.Find(t)
	cfg := awstest.Config(t)
	table := awstest.PadsTable(t, cfg)
	bootstrap := rietest.Build(t, "pads")
	role := awstest.Role(t, "PadsFunction", awstest.Resources{"PadsTable": table})
	emu := rietest.Start(t, rie, bootstrap, append(role.Env(t), "PADS_TABLE="+table, "LOCKER_LOG_LEVEL=warn"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := emu.FirstInvoke(ctx, testenv.Event(t, "health.json")); err != nil {
		t.Fatalf("no first response from the emulator: %v", err)
	}

	edit := func(name string, fn func(ev map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(testenv.Event(t, name), &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
		b, _ := json.Marshal(m)
		return b
	}
	const pre = "invalid API Gateway event: "
	tests := []struct {
		name   string
		event  []byte
		detail string
	}{
		{"body a number", edit("append.json", func(ev map[string]any) { ev["body"] = 5 }), pre + "a number in 'body' where a string belongs"},
		{"isBase64Encoded a string", edit("append.json", func(ev map[string]any) { ev["isBase64Encoded"] = "yes" }), pre + "a string in 'isBase64Encoded' where a boolean belongs"},
		{"bad base64 body", edit("create.json", func(ev map[string]any) { ev["body"], ev["isBase64Encoded"] = "{}", true }), pre + "the body is marked isBase64Encoded but is not base64"},
		{"no method", edit("health.json", func(ev map[string]any) {
			delete(ev["requestContext"].(map[string]any)["http"].(map[string]any), "method")
		}), pre + "requestContext.http.method is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := emu.Invoke(ctx, tc.event)
			if err != nil {
				t.Fatalf("function error (API Gateway would answer 500): %v", err)
			}
			var resp events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(raw, &resp); err != nil {
				t.Fatalf("result %s: %v", raw, err)
			}
			want := `{"error":"bad_request","detail":"` + tc.detail + `"}`
			if resp.StatusCode != 400 || resp.Body != want {
				t.Errorf("answer %d %s, want 400 %s", resp.StatusCode, resp.Body, want)
			}
		})
	}

	raw, err := emu.Invoke(ctx, testenv.Event(t, "health.json"))
	var resp events.APIGatewayV2HTTPResponse
	if err != nil || json.Unmarshal(raw, &resp) != nil || resp.StatusCode != 200 {
		t.Fatalf("health after the malformed events: %s %v", raw, err)
	}
	if !strings.Contains(resp.Body, `"pads":{"total":1,"unsealed":0,"sealed":1}`) {
		t.Errorf("health = %s: want only the demo pad (the refused create stored nothing)", resp.Body)
	}
}
