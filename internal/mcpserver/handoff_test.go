package mcpserver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

const handoffEnvelope = `{"schema":"locker.handoff.v1","task_id":"fix-123","from_agent":"planner","to_agent":"worker","constraints":["tests must pass"],"artifacts":[{"name":"plan.md"}],"budget_usd":1.25,"allowed_paths":["src/**"]}`

func TestListTools(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
		if s, ok := tl.InputSchema.(map[string]any); !ok || s["type"] != "object" {
			t.Errorf("%s input schema = %v", tl.Name, tl.InputSchema)
		}
	}
	slices.Sort(names)
	want := []string{"locker_append", "locker_create", "locker_deposit", "locker_manifest", "locker_read_blocks", "locker_seal"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.ServerInfo.Name != "lockermcp" {
		t.Fatalf("server info = %+v", ir)
	}
}

// TestHandoff is the planner/worker flow: the planner deposits and hands over (pad_id,
// read_ticket, head_hash); the worker reads the envelope first, then the rest against the
// trusted head.
func TestHandoff(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	planner := session(t, d.Handler, config.TicketHeader)
	dep := call(t, planner, "locker_deposit", `{"envelope":`+handoffEnvelope+`,"artifacts":[{"step":1,"z":"last key first","a":"é"},"plain text artifact\n",["list","artifact"]]}`)
	if dep.isError || dep.m["error"] != nil {
		t.Fatalf("deposit: %s", dep.text)
	}
	for _, k := range []string{"pad_id", "read_ticket", "head_hash", "head_source", "server_head_hash", "status"} {
		if _, ok := dep.m[k]; !ok {
			t.Errorf("deposit result lacks %s: %s", k, dep.text)
		}
	}
	if dep.m["head_source"] != "locally_computed" || dep.m["status"] != "sealed" || dep.m["head_hash"] != dep.m["server_head_hash"] {
		t.Fatalf("deposit result: %s", dep.text)
	}
	padID, ticket, head := dep.m["pad_id"].(string), dep.m["read_ticket"].(string), dep.m["head_hash"].(string)

	worker := session(t, d.Handler, config.TicketHeader)
	env := call(t, worker, "locker_read_blocks", `{"pad_id":"`+padID+`","ticket":"`+ticket+`"}`)
	if env.m["error"] != nil || get(t, env.m, "count") != 1.0 || get(t, env.m, "total_blocks") != 4.0 {
		t.Fatalf("envelope read: %s", env.text)
	}
	if v := get(t, env.m, "integrity.verdict"); v != "internal_consistency_only" {
		t.Errorf("envelope verdict = %v", v)
	}
	text := get(t, env.m, "blocks.0.payload_utf8").(string)
	if !strings.HasPrefix(text, `{"schema": "locker.handoff.v1", "task_id": "fix-123"`) || !strings.Contains(text, `"budget_usd": 1.25, "allowed_paths": ["src/**"]}`) {
		t.Errorf("envelope not encoded as json.dumps: %s", text)
	}
	blk := get(t, env.m, "blocks.0").(map[string]any)
	var keys []string
	for k := range blk {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "curr_hash", "payload_b64", "payload_utf8", "payload_utf8_source", "prev_hash", "seq"}; !slices.Equal(keys, want) {
		t.Errorf("block keys = %v, want %v (content_type must not be returned)", keys, want)
	}

	rest := call(t, worker, "locker_read_blocks", `{"pad_id":"`+padID+`","ticket":"`+ticket+`","from_block":1,"to_block":10,"expected_head_hash":"`+head+`"}`)
	if rest.m["error"] != nil || get(t, rest.m, "count") != 3.0 || get(t, rest.m, "to") != 3.0 {
		t.Fatalf("rest read: %s", rest.text)
	}
	if v := get(t, rest.m, "integrity.verdict"); v != "trusted_head_match" {
		t.Fatalf("verdict = %v: %s", v, rest.text)
	}
	if got := get(t, rest.m, "blocks.0.payload_utf8"); got != `{"step": 1, "z": "last key first", "a": "\u00e9"}` {
		t.Errorf("artifact 1 = %v (key order and ensure_ascii must match json.dumps)", got)
	}
	if got := get(t, rest.m, "blocks.1.payload_utf8"); got != "plain text artifact\n" {
		t.Errorf("artifact 2 = %q", got)
	}
	if got := get(t, rest.m, "blocks.2.payload_utf8"); got != `["list", "artifact"]` {
		t.Errorf("artifact 3 = %q", got)
	}
	if get(t, rest.m, "blocks.2.curr_hash") != head {
		t.Errorf("last curr_hash is not the deposit head")
	}

	man := call(t, worker, "locker_manifest", `{"pad_id":"`+padID+`","ticket":"`+ticket+`","expected_head_hash":"`+head+`"}`)
	if v := get(t, man.m, "integrity.verdict"); v != "trusted_head_match" {
		t.Fatalf("manifest verdict = %v: %s", v, man.text)
	}
	if get(t, man.m, "head_provenance.manifest_head.verified_by_client") != true || get(t, man.m, "head_provenance.recomputed_head.value") != head ||
		get(t, man.m, "head_provenance.expected_head.matches") != true || get(t, man.m, "state") != "sealed" {
		t.Errorf("manifest: %s", man.text)
	}
	free := call(t, worker, "locker_manifest", `{"pad_id":"`+padID+`"}`)
	if get(t, free.m, "integrity.verdict") != "not_checked" || get(t, free.m, "head_provenance.manifest_head.verified_by_client") != false ||
		get(t, free.m, "head_provenance.recomputed_head.value") != nil {
		t.Errorf("ticketless manifest: %s", free.text)
	}
}

func TestPostSealAppendRejected(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	cr := call(t, cs, "locker_create", `{"ttl_seconds":600}`)
	padID, key := cr.m["pad_id"].(string), cr.m["write_key"].(string)
	if a := call(t, cs, "locker_append", `{"pad_id":"`+padID+`","write_key":"`+key+`","payload":`+handoffEnvelope+`}`); a.m["seq"] != 0.0 {
		t.Fatalf("append: %s", a.text)
	}
	seal := call(t, cs, "locker_seal", `{"pad_id":"`+padID+`","write_key":"`+key+`"}`)
	if seal.m["state"] != "sealed" {
		t.Fatalf("seal: %s", seal.text)
	}
	late := call(t, cs, "locker_append", `{"pad_id":"`+padID+`","write_key":"`+key+`","payload":"too late","content_type":"text/plain"}`)
	if got := mustJSON(t, late.m); got != `{"error":{"detail":"locker daemon error 409: pad is sealed","status":409}}` {
		t.Fatalf("post-seal append = %s", got)
	}
	if strings.Contains(late.text, key) {
		t.Error("the write key appears in the result")
	}
	demo := call(t, cs, "locker_append", `{"pad_id":"demo-pad-v1","write_key":"demo-write-key","payload":"x"}`)
	if get(t, demo.m, "error.status") != 409.0 {
		t.Errorf("demo append: %s", demo.text)
	}
}

func TestLeaseExpiry(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{LeaseSeconds: 60})
	cs := session(t, d.Handler, config.TicketHeader)
	c := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte("second")}, true)
	first := call(t, cs, "locker_read_blocks", `{"pad_id":"`+c.PadID+`","ticket":"`+c.ReadTicket+`"}`)
	if first.m["error"] != nil {
		t.Fatalf("first read: %s", first.text)
	}
	d.Clock.Advance(30 * time.Second)
	if again := call(t, cs, "locker_read_blocks", `{"pad_id":"`+c.PadID+`","ticket":"`+c.ReadTicket+`","from_block":1,"to_block":1}`); again.m["error"] != nil {
		t.Fatalf("read inside the lease: %s", again.text)
	}
	d.Clock.Advance(31 * time.Second)
	late := call(t, cs, "locker_read_blocks", `{"pad_id":"`+c.PadID+`","ticket":"`+c.ReadTicket+`","from_block":1,"to_block":1}`)
	if got := mustJSON(t, late.m); got != `{"error":{"detail":"locker daemon error 403: read ticket lease expired","status":403}}` {
		t.Fatalf("read after the lease = %s", got)
	}
	if strings.Contains(late.text, c.ReadTicket) || strings.Contains(late.text, "second") {
		t.Error("the ticket or a payload appears in the result")
	}
}

func TestReadDemoVerdicts(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	all := call(t, cs, "locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","to_block":2,"expected_head_hash":"`+locker.DemoHead+`"}`)
	if get(t, all.m, "integrity.verdict") != "trusted_head_match" || get(t, all.m, "count") != 3.0 {
		t.Fatalf("%s", all.text)
	}
	wrong := strings.Repeat("0", 63) + "1"
	bad := call(t, cs, "locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","to_block":2,"expected_head_hash":"`+wrong+`"}`)
	if get(t, bad.m, "error.cause") != "expected_head_mismatch" || get(t, bad.m, "integrity.verdict") != "failed" || bad.m["blocks"] != nil {
		t.Fatalf("%s", bad.text)
	}
}

func TestArgumentErrors(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	tests := []struct {
		name, tool, args, want string
	}{
		{"unknown argument", "locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","expected_head":"x"}`, `unknown argument(s) "expected_head"`},
		{"missing", "locker_seal", `{"pad_id":"x"}`, `missing required argument "write_key"`},
		{"payload type", "locker_append", `{"pad_id":"x","write_key":"k","payload":5}`, "payload must be a string, an object or a list, not a number"},
		{"lone surrogate", "locker_append", `{"pad_id":"x","write_key":"k","payload":"\ud800"}`, "lone surrogate"},
		{"integer", "locker_create", `{"ttl_seconds":"60"}`, `argument "ttl_seconds" must be an integer, not a string`},
		{"fraction", "locker_create", `{"ttl_seconds":60.5}`, `must be an integer in 32-bit range`},
		{"bad artifact", "locker_deposit", `{"envelope":` + handoffEnvelope + `,"artifacts":["ok",true]}`, "artifact 1 must be a string, an object or a list, not a boolean"},
		{"envelope type", "locker_deposit", `{"envelope":[],"artifacts":[]}`, "envelope must be an object, not a list"},
		{"invalid envelope", "locker_deposit", `{"envelope":{"schema":"locker.handoff.v1"},"artifacts":[]}`, "refused before anything was sent: the envelope is not a valid locker.handoff.v1 envelope: missing required field 'task_id'"},
		{"empty artifact", "locker_deposit", `{"envelope":` + handoffEnvelope + `,"artifacts":[""]}`, "block 1 is empty"},
		{"oversized artifact", "locker_deposit", `{"envelope":` + handoffEnvelope + `,"artifacts":["` + strings.Repeat("x", 65537) + `"]}`, "over the 65536-byte block limit"},
		{"ttl", "locker_deposit", `{"envelope":` + handoffEnvelope + `,"artifacts":[],"ttl_seconds":0}`, "ttl_seconds must be from 1 to 2592000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, cs, tc.tool, tc.args)
			e, _ := r.m["error"].(map[string]any)
			detail, _ := e["detail"].(string)
			if !r.isError || e["kind"] != "invalid_arguments" || !strings.Contains(detail, tc.want) {
				t.Fatalf("isError=%v error=%v, want kind invalid_arguments and a detail containing %q", r.isError, e, tc.want)
			}
		})
	}
	// No preflight refusal created a pad: only the demo pad exists.
	if code, body := d.Do("GET", "/health", nil, ""); code != 200 || !strings.Contains(string(body), `"pads":{"total":1,`) {
		t.Fatalf("health: %d %s", code, body)
	}
}
