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
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/agentcore"
	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/app/awswarrant"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

// env is the function's environment as template.yaml sets it, on d, with a short refresh
// and window so that the test sees them pass.
func env(d *awsapptest.Deployment, roleARN string) map[string]string {
	return map[string]string{"CATALOG_TABLE": d.Table, "CATALOG_BLOB_BUCKET": d.BlobBucket, "AUDIT_KMS_KEY": d.Key, "CHECKPOINT_S3_PATH_STYLE": "1",
		"INTERCEPTOR_ROLE_ARN": roleARN, "INTERCEPTOR_RECORD_EVERY": "1h", "INTERCEPTOR_REFRESH": "100ms", "INTERCEPTOR_STALENESS": "30s"}
}

// output is the part of an interceptor output the test reads.
type output struct {
	MCP struct {
		Request *struct {
			Body json.RawMessage `json:"body"`
		} `json:"transformedGatewayRequest"`
		Response *struct {
			StatusCode int `json:"statusCode"`
			Body       struct {
				Result *struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				} `json:"result"`
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"body"`
		} `json:"transformedGatewayResponse"`
	} `json:"mcp"`
}

func invoke(t *testing.T, h agentcore.HandlerFunc, event []byte) output {
	t.Helper()
	raw, err := h.Invoke(t.Context(), event)
	if err != nil {
		t.Fatalf("a Lambda error: %v", err)
	}
	var o output
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("output %s: %v", raw, err)
	}
	return o
}

func callOf(t *testing.T, tool string) []byte {
	return bytes.ReplaceAll(testenv.Event(t, "agentcore-request-tools-call.json"), []byte("weather___get_forecast"), []byte(tool))
}

// scenario runs the sample events against d as the interceptor role p and returns what
// failed: the listing filtered to get_forecast, the approved call passed and the others
// denied, the drift the listing showed recorded and then gating the call, the decision
// records written at shutdown. Each problem is one string; none: the function did its job.
func scenario(t *testing.T, d *awsapptest.Deployment, p *awstest.Principal) []string {
	t.Helper()
	var problems []string
	e := env(d, p.RoleARN)
	cfg := p.Config(t)
	h, final, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awswarrant.Options{KMS: []func(*kms.Options){kmstest.Options(t)}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	list := invoke(t, h, testenv.Event(t, "agentcore-response-tools-list.json"))
	var names []string
	if r := list.MCP.Response; r != nil && r.Body.Result != nil {
		for _, tool := range r.Body.Result.Tools {
			names = append(names, tool.Name)
		}
	}
	if !slices.Equal(names, []string{"weather___get_forecast"}) {
		problems = append(problems, "listing kept "+strings.Join(names, ",")+" (or was denied), want weather___get_forecast only")
	}
	if o := invoke(t, h, testenv.Event(t, "agentcore-request-tools-call.json")); o.MCP.Request == nil {
		problems = append(problems, "the approved call was denied")
	}
	if o := invoke(t, h, testenv.Event(t, "agentcore-request-initialize.json")); o.MCP.Request == nil {
		problems = append(problems, "initialize was denied")
	}
	for tool, why := range map[string]string{"weather___get_alerts": "is unapproved", "x_amz_bedrock_agentcore_search": "carries no prefix"} {
		if o := invoke(t, h, callOf(t, tool)); o.MCP.Response == nil || o.MCP.Response.Body.Error == nil || !strings.Contains(o.MCP.Response.Body.Error.Message, why) {
			problems = append(problems, "the call of "+tool+" was not denied as it "+why)
		}
	}
	// The listing showed get_radar in another definition than the approved one: recorded as a
	// gateway observation before the answer, it is the catalog's current definition at the
	// next refresh, and the call is denied as drifted (the catalog's evidence alone decides).
	time.Sleep(150 * time.Millisecond)
	if o := invoke(t, h, callOf(t, "weather___get_radar")); o.MCP.Response == nil || o.MCP.Response.Body.Error == nil || !strings.Contains(o.MCP.Response.Body.Error.Message, "has drifted") {
		problems = append(problems, "the call of the drifted get_radar was not denied as drifted")
	}
	final(t.Context())

	recs, rep := d.AuditLog(t)
	if !rep.OK() {
		problems = append(problems, fmt.Sprintf("audit verify: %v", rep.Problems))
	}
	var observed, decisions bool
	for _, r := range recs {
		switch {
		case r.Type == warrant.EventCrawlObserved && r.Actor == p.RoleARN:
			observed = observed || bytes.Contains(r.Body, []byte(`"source":"gateway"`)) && bytes.Contains(r.Body, []byte("get_radar"))
		case r.Type == warrant.EventDecisionsRecorded && r.Actor != p.RoleARN:
			problems = append(problems, "decision records by "+r.Actor)
		}
	}
	if !observed {
		problems = append(problems, "no gateway observation of get_radar by the interceptor in the audit log")
	}
	entries, err := warrant.ParseDecisions(recs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tools/list get_forecast": "allowed", "tools/list get_alerts": "filtered", "tools/list get_radar": "filtered",
		"tools/call get_forecast": "allowed", "tools/call get_alerts": "denied", "tools/call get_radar": "denied", "tools/call x_amz_bedrock_agentcore_search": "denied"}
	for _, en := range entries {
		if en.Point != "agentcore" || en.Shadow {
			continue
		}
		decisions = true
		for _, r := range en.Records {
			k := r.Method + " " + r.Tool
			if w, ok := want[k]; ok && w == r.Outcome {
				delete(want, k)
			}
		}
	}
	if !decisions || len(want) > 0 {
		problems = append(problems, "decision records missing from the audit log: "+strings.Join(slices.Sorted(mapKeys(want)), ", "))
	}
	return problems
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestEventsAsTheTemplateRole: the function's cold start on the template's environment,
// then the sample events (events/agentcore-*.json), running as InterceptorRole with exactly
// its template statements against moto with IAM enforced, and the in-process KMS applying
// the log key's template policy; the audit log, verified independently, holds what it
// observed and decided.
func TestEventsAsTheTemplateRole(t *testing.T) {
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	d.SeedAgentCore(t)
	if problems := scenario(t, d, d.Roles["InterceptorRole"]); len(problems) > 0 {
		t.Errorf("as InterceptorRole:\n  %s", strings.Join(problems, "\n  "))
	}
}

// TestEveryStatementIsNeeded: with any one statement of InterceptorRole's template policy
// removed, the same scenario fails — the role grants nothing the function does not use
// (least privilege), and TestEventsAsTheTemplateRole would catch a permission the code
// needs that the template lacked.
func TestEveryStatementIsNeeded(t *testing.T) {
	if awstest.External() {
		t.Skip("the harness enforces IAM only on the moto_server it starts")
	}
	full := awstest.LoadTemplate(t)
	for _, sid := range []string{"Read", "PutNewItems", "UpdateStateOnly"} {
		t.Run(sid, func(t *testing.T) {
			d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
			d.SeedAgentCore(t)
			st, err := full.RoleStatements("InterceptorRole", d.Res)
			if err != nil {
				t.Fatal(err)
			}
			st = slices.DeleteFunc(st, func(s awstest.Statement) bool { return s.Sid == sid })
			p := awstest.RoleWith(t, "InterceptorRole", st, d.Res)
			awstest.ApplyKeyPolicy(t, "LogKey", d.Res) // the key policy names this role now
			if problems := scenario(t, d, p); len(problems) == 0 {
				t.Errorf("without the %s statement the interceptor still did everything: the statement is not needed", sid)
			} else {
				t.Logf("without %s: %s", sid, problems[0])
			}
		})
	}
}

// TestUnconfiguredAndUnstarted: a configuration the function refuses is an error of
// newHandler (main then denies everything); a catalog without servers is no error but a
// handler that denies, keeping the request's id, until a start succeeds.
func TestUnconfiguredAndUnstarted(t *testing.T) {
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	p := d.Roles["InterceptorRole"]
	cfg := p.Config(t)
	opts := awswarrant.Options{KMS: []func(*kms.Options){kmstest.Options(t)}}
	if _, _, err := newHandler(t.Context(), func(string) string { return "" }, &cfg, opts, slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "CATALOG_TABLE") || !strings.Contains(err.Error(), "INTERCEPTOR_ROLE_ARN") {
		t.Errorf("an empty environment: %v", err)
	}
	e := env(d, p.RoleARN)
	h, _, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	o := invoke(t, h, testenv.Event(t, "agentcore-request-tools-call.json"))
	if o.MCP.Response == nil || o.MCP.Response.Body.Error == nil || !strings.Contains(o.MCP.Response.Body.Error.Message, "could not start") {
		t.Errorf("with no server in the catalog: %+v", o)
	}
}

// TestLargeIndexNeedsCatalogObjects: a server whose catalog index is over 32 KB keeps it in
// the object bucket, and its listing's observations over 32 KB go there too; the
// interceptor reads and writes them with InterceptorRole's CatalogObjects statement, and
// without it every decision for that server is denied (its approvals cannot be read).
func TestLargeIndexNeedsCatalogObjects(t *testing.T) {
	if awstest.External() {
		t.Skip("the harness enforces IAM only on the moto_server it starts")
	}
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	var tools, listed []string
	for i := range 200 {
		name := fmt.Sprintf("tool_%03d_%s", i, strings.Repeat("x", 60))
		tools = append(tools, fmt.Sprintf(`{"name":%q,"description":"Tool %d.","inputSchema":{"type":"object"}}`, name, i))
		listed = append(listed, fmt.Sprintf(`{"name":"big___%s","description":"Tool %d, now with more.","inputSchema":{"type":"object"}}`, name, i))
	}
	listed[0] = strings.Replace(tools[0], `"name":"`, `"name":"big___`, 1) // the approved one, as approved
	d.Seed(t, "big", tools, fmt.Sprintf("tool_000_%s", strings.Repeat("x", 60)))
	var ev map[string]any
	if err := json.Unmarshal(testenv.Event(t, "agentcore-response-tools-list.json"), &ev); err != nil {
		t.Fatal(err)
	}
	body := ev["mcp"].(map[string]any)["gatewayResponse"].(map[string]any)["body"].(map[string]any)
	body["result"] = json.RawMessage(`{"tools":[` + strings.Join(listed, ",") + `]}`)
	event, _ := json.Marshal(ev)

	full := awstest.LoadTemplate(t)
	st, err := full.RoleStatements("InterceptorRole", d.Res)
	if err != nil {
		t.Fatal(err)
	}
	noObjects := awstest.RoleWith(t, "InterceptorRole", slices.DeleteFunc(slices.Clone(st), func(s awstest.Statement) bool { return s.Sid == "CatalogObjects" }), d.Res)
	awstest.ApplyKeyPolicy(t, "LogKey", d.Res)
	run := func(p *awstest.Principal) output {
		e := env(d, p.RoleARN)
		cfg := p.Config(t)
		h, _, err := newHandler(t.Context(), func(k string) string { return e[k] }, &cfg, awswarrant.Options{KMS: []func(*kms.Options){kmstest.Options(t)}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return invoke(t, h, event)
	}
	if o := run(noObjects); o.MCP.Response == nil || o.MCP.Response.Body.Error == nil || !strings.Contains(o.MCP.Response.Body.Error.Message, `cannot decide for target "big"`) {
		t.Errorf("without CatalogObjects the large server's listing was not denied for want of its approvals: %+v", o.MCP.Response)
	}
	fullRole := awstest.RoleWith(t, "InterceptorRole", st, d.Res)
	awstest.ApplyKeyPolicy(t, "LogKey", d.Res)
	o := run(fullRole)
	if o.MCP.Response == nil || o.MCP.Response.Body.Result == nil || len(o.MCP.Response.Body.Result.Tools) != 1 || o.MCP.Response.Body.Result.Tools[0].Name != "big___"+fmt.Sprintf("tool_000_%s", strings.Repeat("x", 60)) {
		t.Fatalf("with CatalogObjects the listing was not filtered to the approved tool: %+v %+v", o.MCP.Response, o.MCP.Response.Body.Error)
	}
	recs, rep := d.AuditLog(t)
	if !rep.OK() {
		t.Errorf("audit verify: %v", rep.Problems)
	}
	observed := false
	for _, r := range recs {
		observed = observed || r.Type == warrant.EventCrawlObserved && r.Actor == fullRole.RoleARN && bytes.Contains(r.Body, []byte("tool_199"))
	}
	if !observed {
		t.Error("the 199 drifted tools' observations (over 32 KB: an object) are not in the audit log")
	}
}
