package rie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// interceptorOutput is an interceptor output as the gateway reads it.
type interceptorOutput struct {
	Version string `json:"interceptorOutputVersion"`
	MCP     struct {
		Request *struct {
			Body json.RawMessage `json:"body"`
		} `json:"transformedGatewayRequest"`
		Response *struct {
			StatusCode int             `json:"statusCode"`
			Body       json.RawMessage `json:"body"`
		} `json:"transformedGatewayResponse"`
	} `json:"mcp"`
}

// rpcBody is the part of a JSON-RPC message the test reads.
type rpcBody struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// interceptorEnv is the function's environment under RIE: its template role's session,
// the in-process KMS, and what template.yaml sets (a short refresh, so that the test sees a
// drift reach the catalog, and a window of an hour, so that only shutdown writes the
// decision records).
func interceptorEnv(t *testing.T, d *awsapptest.Deployment) []string {
	t.Helper()
	role := d.Roles["InterceptorRole"]
	return append(append(role.Env(t), kmstest.Env(t)...), "CATALOG_TABLE="+d.Table, "CATALOG_BLOB_BUCKET="+d.BlobBucket, "AUDIT_KMS_KEY="+d.Key,
		"CHECKPOINT_S3_PATH_STYLE=1", "INTERCEPTOR_ROLE_ARN="+role.RoleARN, "INTERCEPTOR_RECORD_EVERY=1h", "INTERCEPTOR_REFRESH=100ms", "INTERCEPTOR_STALENESS=30s")
}

// TestInterceptorUnderRIE runs the built interceptor bootstrap under aws-lambda-rie as its
// template role against moto (IAM enforced) and KMS, over the catalog the sample events
// assume: the REQUEST and RESPONSE events of events/agentcore-*.json and variants of them
// (an unapproved call, AgentCore's search tool, an unknown method, bytes that are not JSON,
// events over Lambda's 6 MB). Unapproved and drifted tools leave the listing, their calls
// and everything undecidable are denied, each answer is an interceptor output (never a
// function error), and at shutdown (SIGTERM) the decision records reach the audit log,
// which verifies.
func TestInterceptorUnderRIE(t *testing.T) {
	rie := rietest.Find(t)
	d := awsapptest.DeployWith(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	d.SeedAgentCore(t)
	boot := rietest.Build(t, "interceptor")
	emu := rietest.Start(t, rie, boot, interceptorEnv(t, d))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	first := true
	send := func(what string, event []byte) (interceptorOutput, rpcBody) {
		t.Helper()
		invoke := emu.Invoke
		if first {
			invoke, first = emu.FirstInvoke, false
		}
		raw, err := invoke(ctx, event)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var o interceptorOutput
		if err := json.Unmarshal(raw, &o); err != nil || o.Version != "1.0" || (o.MCP.Request == nil) == (o.MCP.Response == nil) {
			t.Fatalf("%s: not an interceptor output (%v): %.500s", what, err, raw)
		}
		var b rpcBody
		body := json.RawMessage(nil)
		if o.MCP.Response != nil {
			body = o.MCP.Response.Body
		} else {
			body = o.MCP.Request.Body
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%s: body %s: %v", what, body, err)
		}
		return o, b
	}
	denied := func(what string, event []byte, id, reason string) {
		t.Helper()
		o, b := send(what, event)
		if o.MCP.Response == nil || o.MCP.Response.StatusCode != 200 || b.Error == nil || string(b.ID) != id || !strings.Contains(b.Error.Message, reason) {
			t.Errorf("%s: want a denial with id %s saying %q, got %+v %+v", what, id, reason, o.MCP.Response, b.Error)
		}
	}
	passed := func(what string, event []byte) {
		t.Helper()
		if o, _ := send(what, event); o.MCP.Request == nil {
			t.Errorf("%s: not passed", what)
		}
	}
	listResp := testenv.Event(t, "agentcore-response-tools-list.json")
	call := testenv.Event(t, "agentcore-request-tools-call.json")
	callOf := func(tool string) []byte {
		return bytes.ReplaceAll(call, []byte("weather___get_forecast"), []byte(tool))
	}

	start := time.Now()
	o, b := send("tools/list RESPONSE", listResp)
	t.Logf("aws-lambda-rie start to first answer %s", time.Since(start).Round(time.Millisecond))
	var names []string
	if b.Result != nil {
		for _, tool := range b.Result.Tools {
			names = append(names, tool.Name)
		}
	}
	if o.MCP.Response == nil || o.MCP.Response.StatusCode != 200 || !slices.Equal(names, []string{"weather___get_forecast"}) {
		t.Errorf("tools/list RESPONSE kept %v, want weather___get_forecast only (unapproved get_alerts, drifted get_radar, AgentCore's search removed)", names)
	}
	passed("tools/list REQUEST", testenv.Event(t, "agentcore-request-tools-list.json"))
	passed("initialize REQUEST", testenv.Event(t, "agentcore-request-initialize.json"))
	passed("tools/call REQUEST of the approved tool", call)
	denied("tools/call of an unapproved tool", callOf("weather___get_alerts"), "2", "is unapproved")
	denied("tools/call of AgentCore's search", callOf("x_amz_bedrock_agentcore_search"), "2", "carries no prefix of a served target")
	denied("an unknown method", bytes.Replace(call, []byte(`"method": "tools/call"`), []byte(`"method": "tools/delete"`), 1), "2", "not an MCP method")
	denied("an event that is not JSON", call[:len(call)/2], "null", "cannot read the gateway's event")
	// Over Lambda's 6 MB (6,291,456 bytes); aws-lambda-rie delivers up to 6 MiB + 100.
	pad := func(event []byte, size int) []byte {
		i := bytes.LastIndexByte(event, '}')
		out := append(append([]byte{}, event[:i]...), `,"padding":"`...)
		out = append(out, bytes.Repeat([]byte("p"), size-len(event)-len(`,"padding":""`))...)
		return append(append(out, '"'), event[i:]...)
	}
	big := pad(call, awstest.MaxLambdaRequest+44)
	if len(big) != awstest.MaxLambdaRequest+44 {
		t.Fatalf("padded event is %d bytes", len(big))
	}
	denied("a REQUEST over 6 MB", big, "2", "over the 6291456-byte bound")
	var many []string
	for i := range 25000 {
		many = append(many, fmt.Sprintf(`{"name":"weather___t%05d","description":"%s","inputSchema":{"type":"object"}}`, i, strings.Repeat("d", 150)))
	}
	var ev map[string]any
	if err := json.Unmarshal(listResp, &ev); err != nil {
		t.Fatal(err)
	}
	ev["mcp"].(map[string]any)["gatewayResponse"].(map[string]any)["body"].(map[string]any)["result"] = json.RawMessage(`{"tools":[` + strings.Join(many, ",") + `]}`)
	huge, _ := json.Marshal(ev)
	if len(huge) >= awstest.MaxLambdaRequest {
		t.Fatalf("the listing event is already %d bytes", len(huge))
	}
	huge = pad(huge, awstest.MaxLambdaRequest+90)
	denied("a tools/list RESPONSE over 6 MB (never passed unfiltered)", huge, "1", "-byte bound")

	// The listing showed get_radar in another definition than the approved one; the
	// interceptor recorded that before answering, so after a refresh the catalog's current
	// definition is the listed one and the call is denied as drifted.
	time.Sleep(150 * time.Millisecond)
	denied("tools/call of the drifted tool", callOf("weather___get_radar"), "2", "has drifted")

	if init, ok := emu.InitDuration(); ok {
		t.Logf("interceptor init (INIT REPORT) %s", init)
	}
	emu.Stop() // SIGTERM: the function writes the window of decision records, then exits
	if !strings.Contains(emu.Logs(), "interceptor: started") {
		t.Errorf("the function did not log its start:\n%s", emu.Logs())
	}

	recs, rep := d.AuditLog(t)
	if !rep.OK() {
		t.Errorf("audit verify: %v", rep.Problems)
	}
	entries, err := warrant.ParseDecisions(recs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tools/list weather get_forecast": "allowed", "tools/list weather get_alerts": "filtered", "tools/list weather get_radar": "filtered",
		"tools/call weather get_forecast": "allowed", "tools/call weather get_alerts": "denied", "tools/call weather get_radar": "denied",
		// With one served server, the core attributes a whole-message denial and an unprefixed
		// call to it; the unknown method is recorded as "other".
		"tools/call weather x_amz_bedrock_agentcore_search": "denied", "tools/list  x_amz_bedrock_agentcore_search": "filtered", "other weather ": "denied"}
	for _, e := range entries {
		if e.Point != "agentcore" || e.Shadow {
			continue
		}
		for _, r := range e.Records {
			if w := want[r.Method+" "+r.Server+" "+r.Tool]; w == r.Outcome {
				delete(want, r.Method+" "+r.Server+" "+r.Tool)
			}
		}
	}
	if len(want) > 0 {
		var got []string
		for _, e := range entries {
			for _, r := range e.Records {
				got = append(got, fmt.Sprintf("%s %s %s %s", r.Method, r.Server, r.Tool, r.Outcome))
			}
		}
		t.Errorf("decision records not in the audit log after shutdown: %v\nrecorded: %v", want, got)
	}
}

// BenchmarkInterceptorColdStart measures the interceptor's cold start under aws-lambda-rie
// against the minimal bootstrap (test/rie/baseline) started in the same run, as
// BenchmarkColdStart does for the pads function. The interceptor's init does its AWS calls
// (the catalog's format marker, the log key's public key, the servers, one read of each
// server's approvals) against moto and the in-process KMS on loopback. Reported, as medians:
//
//	interceptor-init-ms, baseline-init-ms   init as aws-lambda-rie reports it
//	init-over-baseline-ms                   the interceptor's own init
//	refused-init-over-baseline-ms           the same with a configuration it refuses: package
//	                                        initialisation alone, no AWS call
//	first-list-ms                           emulator listening to the first tools/list RESPONSE answered
//
// Run: go test -run='^$' -bench=InterceptorColdStart -benchtime=10x ./test/rie/
func BenchmarkInterceptorColdStart(b *testing.B) {
	rie := rietest.Find(b)
	d := awsapptest.DeployWith(b, map[string]string{"EnableAgentCoreInterceptor": "true"})
	d.SeedAgentCore(b)
	fn := rietest.Build(b, "interceptor")
	base := rietest.BuildPackage(b, "./test/rie/baseline")
	role := d.Roles["InterceptorRole"]
	env := append(append(role.Env(b), kmstest.Env(b)...), "CATALOG_TABLE="+d.Table, "CATALOG_BLOB_BUCKET="+d.BlobBucket, "AUDIT_KMS_KEY="+d.Key,
		"CHECKPOINT_S3_PATH_STYLE=1", "INTERCEPTOR_ROLE_ARN="+role.RoleARN)
	list := testenv.Event(b, "agentcore-response-tools-list.json")
	refused := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "INTERCEPTOR_ROLE_ARN=") })
	cold := func(bootstrap string, event []byte, env []string) (time.Duration, time.Duration) {
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		emu := rietest.Start(b, rie, bootstrap, env)
		defer emu.Stop()
		if err := emu.WaitListening(ctx); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := emu.Invoke(ctx, event); err != nil {
			b.Fatalf("%s: %v\n%s", bootstrap, err, emu.Logs())
		}
		first := time.Since(t0)
		for wait := 0; ; wait++ {
			if d, ok := emu.InitDuration(); ok {
				return d, first
			}
			if wait == 500 {
				b.Fatalf("no INIT REPORT:\n%s", emu.Logs())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	cold(fn, list, env) // warm moto's tables and the page cache, untimed
	var fnInit, refusedInit, baseInit, firstList []time.Duration
	b.ResetTimer()
	for range b.N {
		i, f := cold(fn, list, env)
		r, _ := cold(fn, list, refused)
		z, _ := cold(base, list, env)
		fnInit, refusedInit, firstList, baseInit = append(fnInit, i), append(refusedInit, r), append(firstList, f), append(baseInit, z)
	}
	b.StopTimer()
	fi, bi := median(fnInit), median(baseInit)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(fi), "interceptor-init-ms")
	b.ReportMetric(ms(bi), "baseline-init-ms")
	b.ReportMetric(ms(fi-bi), "init-over-baseline-ms")
	b.ReportMetric(ms(median(refusedInit)-bi), "refused-init-over-baseline-ms")
	b.ReportMetric(ms(median(firstList)), "first-list-ms")
}
