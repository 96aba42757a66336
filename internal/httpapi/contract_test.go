package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

const (
	bodyNotFound      = `{"error":"not_found","detail":"pad not found"}`
	bodyBadKey        = `{"error":"unauthorized","detail":"invalid write key"}`
	bodyMissingTicket = `{"error":"unauthorized","detail":"missing read ticket"}`
	bodyBadTicket     = `{"error":"unauthorized","detail":"invalid read ticket"}`
	bodyLease         = `{"error":"forbidden","detail":"read ticket lease expired"}`
	bodySealed        = `{"error":"conflict","detail":"pad is sealed"}`
	bodyExpired       = `{"error":"gone","detail":"pad is expired"}`
	bodyBlockQuota    = `{"error":"conflict","detail":"block quota exceeded"}`
	bodyByteQuota     = `{"error":"conflict","detail":"byte quota exceeded"}`
	bodyEmpty         = `{"error":"bad_request","detail":"empty payload"}`
	bodyBlockTooBig   = `{"error":"payload_too_large","detail":"payload exceeds 65536 bytes"}`
	bodyJSONTooBig    = `{"error":"payload_too_large","detail":"request body exceeds 4096 bytes"}`
	bodySliceBlocks   = `{"error":"payload_too_large","detail":"slice exceeds 256 blocks; narrow from/to"}`
	bodySliceBytes    = `{"error":"payload_too_large","detail":"slice payload exceeds 65536 bytes; narrow from/to"}`
	bodyInvalidBody   = `{"error":"unprocessable","detail":"invalid request body"}`
	bodyRange         = `{"error":"unprocessable","detail":"invalid from/to range"}`
)

func envelopeBody(reason string) string {
	return `{"error":"bad_request","detail":"block 0 invalid envelope: ` + reason + `"}`
}

// TestErrorTable checks every row of the contract's error table (docs/spec/padlock-wire.md §1.2)
// byte for byte, on a fresh pad per row.
func TestErrorTable(t *testing.T) {
	hs := newHarness(t)
	other := hs.create(`{}`)
	tests := []struct {
		name       string
		setup      func(c created) // prepares the pad
		method     string
		path       string // %s is the pad ID
		body       string
		header     []string // %k is the write key, %t the read ticket
		wantStatus int
		wantBody   string
	}{
		{name: "append unknown pad", method: "POST", path: "/v1/pads/nope/append", body: "x", header: []string{"Authorization: Bearer %k"}, wantStatus: 404, wantBody: bodyNotFound},
		{name: "seal unknown pad", method: "POST", path: "/v1/pads/nope/seal", header: []string{"Authorization: Bearer %k"}, wantStatus: 404, wantBody: bodyNotFound},
		{name: "tickets unknown pad", method: "POST", path: "/v1/pads/nope/tickets", body: "{}", wantStatus: 404, wantBody: bodyNotFound},
		{name: "manifest unknown pad", method: "GET", path: "/v1/pads/nope/manifest", wantStatus: 404, wantBody: bodyNotFound},
		{name: "blocks unknown pad", method: "GET", path: "/v1/pads/nope/blocks", wantStatus: 404, wantBody: bodyNotFound},
		{name: "append no auth header", method: "POST", path: "/v1/pads/%s/append", body: envelope, wantStatus: 401, wantBody: bodyBadKey},
		{name: "append basic scheme", method: "POST", path: "/v1/pads/%s/append", body: envelope, header: []string{"Authorization: Basic %k"}, wantStatus: 401, wantBody: bodyBadKey},
		{name: "append wrong key", method: "POST", path: "/v1/pads/%s/append", body: envelope, header: []string{"Authorization: Bearer wrong"}, wantStatus: 401, wantBody: bodyBadKey},
		{name: "append lower-case scheme accepted", method: "POST", path: "/v1/pads/%s/append", body: envelope, header: []string{"Authorization: bearer %k"}, wantStatus: 201},
		{name: "seal wrong key", method: "POST", path: "/v1/pads/%s/seal", header: []string{"Authorization: Bearer nope"}, wantStatus: 401, wantBody: bodyBadKey},
		{name: "tickets no key", method: "POST", path: "/v1/pads/%s/tickets", body: "{}", wantStatus: 401, wantBody: bodyBadKey},
		{name: "blocks no ticket", method: "GET", path: "/v1/pads/%s/blocks", wantStatus: 401, wantBody: bodyMissingTicket},
		{name: "blocks unknown ticket", method: "GET", path: "/v1/pads/%s/blocks?ticket=nope", wantStatus: 401, wantBody: bodyBadTicket},
		{name: "blocks other pad's ticket", method: "GET", path: "/v1/pads/%s/blocks", header: []string{"Authorization: Bearer " + other.ReadTicket}, wantStatus: 401, wantBody: bodyBadTicket},
		{name: "blocks ticket needs exact-case Bearer", method: "GET", path: "/v1/pads/%s/blocks", header: []string{"Authorization: bearer %t"}, wantStatus: 401, wantBody: bodyMissingTicket},
		{name: "blocks lease expired", setup: func(c created) {
			hs.mustAppend(c, envelope)
			if r := hs.do("GET", "/v1/pads/"+c.PadID+"/blocks?ticket="+c.ReadTicket, nil); r.status != 200 {
				t.Fatalf("first read: %d %s", r.status, r.body)
			}
			hs.clock.Advance(601 * time.Second)
		}, method: "GET", path: "/v1/pads/%s/blocks", header: []string{"Authorization: Bearer %t"}, wantStatus: 403, wantBody: bodyLease},
		{name: "append sealed", setup: func(c created) { hs.seal(c) }, method: "POST", path: "/v1/pads/%s/append", body: envelope, header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodySealed},
		{name: "seal sealed", setup: func(c created) { hs.seal(c) }, method: "POST", path: "/v1/pads/%s/seal", header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodySealed},
		{name: "append expired", setup: func(c created) { hs.clock.Advance(3600 * time.Second) }, method: "POST", path: "/v1/pads/%s/append", body: envelope, header: []string{"Authorization: Bearer %k"}, wantStatus: 410, wantBody: bodyExpired},
		{name: "seal expired", setup: func(c created) { hs.clock.Advance(3601 * time.Second) }, method: "POST", path: "/v1/pads/%s/seal", header: []string{"Authorization: Bearer %k"}, wantStatus: 410, wantBody: bodyExpired},
		{name: "block quota", setup: func(c created) {
			hs.mustAppend(c, envelope)
			for i := 1; i < 32; i++ {
				hs.mustAppend(c, "b")
			}
		}, method: "POST", path: "/v1/pads/%s/append", body: "one more", header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodyBlockQuota},
		{name: "byte quota", setup: func(c created) {
			hs.mustAppend(c, envelope)
			for i := 0; i < 3; i++ {
				hs.mustAppend(c, strings.Repeat("x", 65536))
			}
			hs.mustAppend(c, strings.Repeat("x", 65536-len(envelope)))
		}, method: "POST", path: "/v1/pads/%s/append", body: "x", header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodyByteQuota},
		{name: "empty payload", method: "POST", path: "/v1/pads/%s/append", header: []string{"Authorization: Bearer %k"}, wantStatus: 400, wantBody: bodyEmpty},
		{name: "block too large", method: "POST", path: "/v1/pads/%s/append", body: strings.Repeat("x", 65537), header: []string{"Authorization: Bearer %k"}, wantStatus: 413, wantBody: bodyBlockTooBig},
		{name: "block of exactly 64 KiB accepted", method: "POST", path: "/v1/pads/%s/append", body: envelope + strings.Repeat(" ", 65536-len(envelope)), header: []string{"Authorization: Bearer %k"}, wantStatus: 201},
		{name: "create body too large", method: "POST", path: "/v1/pads", body: "{}" + strings.Repeat(" ", 4095), wantStatus: 413, wantBody: bodyJSONTooBig},
		{name: "create body of exactly 4096 accepted", method: "POST", path: "/v1/pads", body: "{}" + strings.Repeat(" ", 4094), wantStatus: 201},
		{name: "create oversized garbage is 413 not 422", method: "POST", path: "/v1/pads", body: strings.Repeat("!", 5000), wantStatus: 413, wantBody: bodyJSONTooBig},
		{name: "tickets body too large", method: "POST", path: "/v1/pads/%s/tickets", body: "{}" + strings.Repeat(" ", 4095), header: []string{"Authorization: Bearer %k"}, wantStatus: 413, wantBody: bodyJSONTooBig},
		{name: "slice over 256 blocks", setup: func(c created) { hs.fill(c, 300, "b") }, method: "GET", path: "/v1/pads/%s/blocks?from=0&to=256", header: []string{"Authorization: Bearer %t"}, wantStatus: 413, wantBody: bodySliceBlocks},
		{name: "slice over 64 KiB", setup: func(c created) { hs.fill(c, 3, strings.Repeat("y", 40000)) }, method: "GET", path: "/v1/pads/%s/blocks", header: []string{"Authorization: Bearer %t"}, wantStatus: 413, wantBody: bodySliceBytes},
		{name: "create empty body", method: "POST", path: "/v1/pads", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create null", method: "POST", path: "/v1/pads", body: "null", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create array", method: "POST", path: "/v1/pads", body: "[]", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create ttl zero", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":0}`, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create ttl over 30 days", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":2592001}`, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create ttl 30 days", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":2592000}`, wantStatus: 201},
		{name: "create ttl fraction", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":60.5}`, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create ttl integral float", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":1e2}`, wantStatus: 201},
		{name: "create ttl string", method: "POST", path: "/v1/pads", body: `{"ttl_seconds":"abc"}`, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create max_blocks over 4096", method: "POST", path: "/v1/pads", body: `{"max_blocks":4097}`, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create unknown keys ignored", method: "POST", path: "/v1/pads", body: `{"color":"blue"}`, wantStatus: 201},
		{name: "create not json", method: "POST", path: "/v1/pads", body: `{`, wantStatus: 422, wantBody: bodyInvalidBody},
		// Not UTF-8: refused, never repaired (encoding/json alone would accept it with U+FFFD).
		{name: "create invalid UTF-8", method: "POST", path: "/v1/pads", body: "{\"a\":\"\xff\"}", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create invalid UTF-8 in a key", method: "POST", path: "/v1/pads", body: "{\"\xc3\":1}", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create lone surrogate bytes", method: "POST", path: "/v1/pads", body: "{\"a\":\"\xed\xa0\x80\"}", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "create BOM", method: "POST", path: "/v1/pads", body: "\ufeff{}", wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "tickets invalid UTF-8", method: "POST", path: "/v1/pads/%s/tickets", body: "{\"type\":\"read_once\",\"x\":\"\xff\"}", header: []string{"Authorization: Bearer %k"}, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "tickets bad type", method: "POST", path: "/v1/pads/%s/tickets", body: `{"type":"bogus"}`, header: []string{"Authorization: Bearer %k"}, wantStatus: 422,
			wantBody: `{"error":"unprocessable","detail":"type must be 'read_once' or 'read_unlimited', got 'bogus'"}`},
		{name: "tickets bad type repr quoting", method: "POST", path: "/v1/pads/%s/tickets", body: `{"type":"it's"}`, header: []string{"Authorization: Bearer %k"}, wantStatus: 422,
			wantBody: `{"error":"unprocessable","detail":"type must be 'read_once' or 'read_unlimited', got \"it's\""}`},
		{name: "tickets not json", method: "POST", path: "/v1/pads/%s/tickets", body: `x`, header: []string{"Authorization: Bearer %k"}, wantStatus: 422, wantBody: bodyInvalidBody},
		{name: "blocks negative from", setup: func(c created) { hs.mustAppend(c, envelope) }, method: "GET", path: "/v1/pads/%s/blocks?from=-1", header: []string{"Authorization: Bearer %t"}, wantStatus: 422, wantBody: bodyRange},
		{name: "blocks to before from", setup: func(c created) { hs.mustAppend(c, envelope) }, method: "GET", path: "/v1/pads/%s/blocks?from=2&to=1", header: []string{"Authorization: Bearer %t"}, wantStatus: 422, wantBody: bodyRange},
		{name: "blocks nonsense range on empty pad is empty", method: "GET", path: "/v1/pads/%s/blocks?from=-5&to=-9", header: []string{"Authorization: Bearer %t"}, wantStatus: 200,
			wantBody: `{"pad_id":"%s","from":-5,"to":-5,"count":0,"total_blocks":0,"blocks":[]}`},
		{name: "blocks from not an integer", method: "GET", path: "/v1/pads/%s/blocks?from=abc", header: []string{"Authorization: Bearer %t"}, wantStatus: 422,
			wantBody: `{"detail":[{"type":"int_parsing","loc":["query","from"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"}]}`},
		{name: "blocks from past the end is empty", setup: func(c created) { hs.mustAppend(c, envelope) }, method: "GET", path: "/v1/pads/%s/blocks?from=7", header: []string{"Authorization: Bearer %t"}, wantStatus: 200,
			wantBody: `{"pad_id":"%s","from":7,"to":7,"count":0,"total_blocks":1,"blocks":[]}`},
		{name: "unknown path", method: "GET", path: "/v2/pads", wantStatus: 404, wantBody: `{"detail":"Not Found"}`},
		{name: "unknown pad action", method: "GET", path: "/v1/pads/%s/delete", wantStatus: 404, wantBody: `{"detail":"Not Found"}`},
		{name: "wrong method", method: "GET", path: "/v1/pads/%s/append", wantStatus: 405, wantBody: `{"detail":"Method Not Allowed"}`},
		{name: "wrong method on create", method: "DELETE", path: "/v1/pads", wantStatus: 405, wantBody: `{"detail":"Method Not Allowed"}`},
		// Check order.
		{name: "413 before 404", method: "POST", path: "/v1/pads/nope/append", body: strings.Repeat("x", 70000), wantStatus: 413, wantBody: bodyBlockTooBig},
		{name: "404 before 401", method: "POST", path: "/v1/pads/nope/seal", wantStatus: 404, wantBody: bodyNotFound},
		{name: "ticket type checked before lookup", method: "POST", path: "/v1/pads/nope/tickets", body: `{"type":"x"}`, wantStatus: 422,
			wantBody: `{"error":"unprocessable","detail":"type must be 'read_once' or 'read_unlimited', got 'x'"}`},
		{name: "401 before sealed", setup: func(c created) { hs.seal(c) }, method: "POST", path: "/v1/pads/%s/append", body: "x", header: []string{"Authorization: Bearer bad"}, wantStatus: 401, wantBody: bodyBadKey},
		{name: "sealed before empty payload", setup: func(c created) { hs.seal(c) }, method: "POST", path: "/v1/pads/%s/append", header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodySealed},
		{name: "block quota before byte quota", setup: func(c created) {
			hs.mustAppend(c, envelope)
			for i := 1; i < 32; i++ {
				hs.mustAppend(c, strings.Repeat("z", 8000))
			}
		}, method: "POST", path: "/v1/pads/%s/append", body: strings.Repeat("z", 60000), header: []string{"Authorization: Bearer %k"}, wantStatus: 409, wantBody: bodyBlockQuota},
		{name: "lease check before lazy expiry", setup: func(c created) {
			hs.mustAppend(c, envelope)
			hs.do("GET", "/v1/pads/"+c.PadID+"/blocks?ticket="+c.ReadTicket, nil)
			hs.clock.Advance(4000 * time.Second)
		}, method: "GET", path: "/v1/pads/%s/blocks?ticket=%t", wantStatus: 403, wantBody: bodyLease},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := hs.create(`{}`)
			if tc.setup != nil {
				tc.setup(c)
			}
			sub := func(s string) string {
				return strings.NewReplacer("%s", c.PadID, "%k", c.WriteKey, "%t", c.ReadTicket).Replace(s)
			}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var hdr []string
			for _, h := range tc.header {
				hdr = append(hdr, sub(h))
			}
			r := hs.do(tc.method, sub(tc.path), body, hdr...)
			if r.status != tc.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", r.status, tc.wantStatus, r.body)
			}
			if tc.wantBody != "" && r.body != sub(tc.wantBody) {
				t.Errorf("body =\n  %s\nwant\n  %s", r.body, sub(tc.wantBody))
			}
		})
	}
}

func (hs *harness) seal(c created) {
	hs.t.Helper()
	if r := hs.do("POST", "/v1/pads/"+c.PadID+"/seal", nil, "Authorization: Bearer "+c.WriteKey); r.status != 200 {
		hs.t.Fatalf("seal: %d %s", r.status, r.body)
	}
}

// fill appends an envelope then n-1 copies of payload to a pad created with room for them.
func (hs *harness) fill(c created, n int, payload string) {
	hs.t.Helper()
	// Pads in the table are created with defaults; widen this one's quota directly.
	if _, err := hs.db().ExecContext(hs.t.Context(), `UPDATE pads SET max_blocks = 4096 WHERE id = ?`, c.PadID); err != nil {
		hs.t.Fatal(err)
	}
	hs.mustAppend(c, envelope)
	for i := 1; i < n; i++ {
		hs.mustAppend(c, payload)
	}
}

func TestEnvelopeReasons(t *testing.T) {
	hs := newHarness(t)
	tests := []struct{ payload, reason string }{
		{"\xff\xfe", "payload must be JSON"},
		{"not json", "payload must be JSON"},
		{`{"schema":"locker.handoff.v1"} trailing`, "payload must be JSON"},
		{"\ufeff" + envelope, "payload must be JSON"},
		{`{"schema":"locker.handoff.v1","budget_usd":NaN}`, "payload must be JSON"},
		{`[1,2]`, "payload must be a JSON object"},
		{`"text"`, "payload must be a JSON object"},
		{`{}`, "schema must be 'locker.handoff.v1'"},
		{`{"schema":"locker.handoff.v2"}`, "schema must be 'locker.handoff.v1'"},
		{`{"schema":"locker.handoff.v1"}`, "missing required field 'task_id'"},
		{`{"schema":"locker.handoff.v1","task_id":""}`, "field 'task_id' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a"}`, "missing required field 'to_agent'"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":7}`, "field 'to_agent' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[1]}`, "field 'constraints' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":["x"]}`, "field 'artifacts' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[]}`, "missing required field 'budget_usd'"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":true}`, "field 'budget_usd' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":"1"}`, "field 'budget_usd' has an invalid type/value"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":1,"allowed_paths":"src/"}`, "field 'allowed_paths' has an invalid type/value (expected list[str] or null)"},
		{`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":1,"allowed_paths":[1]}`, "field 'allowed_paths' has an invalid type/value (expected list[str] or null)"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := hs.create(`{}`)
			r := hs.appendBlock(c, []byte(tc.payload))
			if r.status != 400 || r.body != envelopeBody(tc.reason) {
				t.Errorf("append %q = %d %s, want 400 %s", tc.payload, r.status, r.body, envelopeBody(tc.reason))
			}
		})
	}
	valid := []string{
		envelope,
		`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":["c"],"artifacts":[{"x":1}],"budget_usd":1.25,"allowed_paths":null,"extra":true}`,
		`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":3,"allowed_paths":["src/**"]}`,
	}
	for _, p := range valid {
		c := hs.create(`{}`)
		if r := hs.appendBlock(c, []byte(p)); r.status != 201 {
			t.Errorf("valid envelope %s refused: %d %s", p, r.status, r.body)
		}
	}
	// Only block 0 is validated.
	c := hs.create(`{}`)
	hs.mustAppend(c, envelope)
	hs.mustAppend(c, "\xff not json at all")
}

func TestHappyPathShapes(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{"ttl_seconds":60,"max_blocks":4}`)
	if len(c.PadID) != 32 || len(c.WriteKey) != 43 || len(c.ReadTicket) != 43 {
		t.Errorf("created = %+v; want 32-hex pad id and 43-char tokens", c)
	}
	r := hs.do("POST", "/v1/pads/"+c.PadID+"/append", strings.NewReader(envelope), "Authorization: Bearer "+c.WriteKey)
	b0 := sha(t, "0000000000000000000000000000000000000000000000000000000000000000"+envelope)
	if want := `{"pad_id":"` + c.PadID + `","seq":0,"curr_hash":"` + b0 + `"}`; r.status != 201 || r.body != want {
		t.Errorf("append = %d %s, want 201 %s", r.status, r.body, want)
	}
	bin := []byte{0xff, 0x00, 0x01}
	r = hs.do("POST", "/v1/pads/"+c.PadID+"/append", bytes.NewReader(bin), "Authorization: Bearer "+c.WriteKey, "Content-Type: application/octet-stream")
	if r.status != 201 {
		t.Fatalf("append binary: %d %s", r.status, r.body)
	}
	b1 := sha(t, b0+string(bin))
	now := hs.clock.Now().Unix()
	r = hs.do("GET", "/v1/pads/"+c.PadID+"/blocks", nil, "Authorization: Bearer "+c.ReadTicket)
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	blocks := got["blocks"].([]any)
	if len(blocks) != 2 || got["count"].(float64) != 2 || got["to"].(float64) != 1 || got["total_blocks"].(float64) != 2 {
		t.Fatalf("blocks = %s", r.body)
	}
	wantKeys := []string{"content_type", "created_at", "curr_hash", "payload_b64", "payload_utf8", "prev_hash", "seq"}
	blk1 := blocks[1].(map[string]any)
	if keys := sortedKeys(blk1); strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
		t.Errorf("block keys = %v, want exactly %v", keys, wantKeys)
	}
	if blk1["payload_utf8"] != nil || blk1["payload_b64"] != "/wAB" || blk1["content_type"] != "application/octet-stream" || blk1["curr_hash"] != b1 {
		t.Errorf("binary block = %v", blk1)
	}
	if blocks[0].(map[string]any)["payload_utf8"] != envelope || blocks[0].(map[string]any)["content_type"] != "application/json" {
		t.Errorf("block 0 = %v", blocks[0])
	}
	r = hs.do("POST", "/v1/pads/"+c.PadID+"/seal", strings.NewReader("ignored body"), "Authorization: Bearer "+c.WriteKey)
	if want := `{"pad_id":"` + c.PadID + `","state":"sealed","sealed_at":` + itoa(now) + `,"head_hash":"` + b1 + `"}`; r.status != 200 || r.body != want {
		t.Errorf("seal = %d %s, want %s", r.status, r.body, want)
	}
	r = hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil)
	if want := `{"pad_id":"` + c.PadID + `","state":"sealed","block_count":2,"total_bytes":` + itoa(int64(len(envelope)+3)) + `,"sealed_at":` + itoa(now) +
		`,"head_hash":"` + b1 + `","created_at":` + itoa(now) + `,"expires_at":` + itoa(now+60) + `}`; r.body != want {
		t.Errorf("manifest = %s, want %s", r.body, want)
	}
	// Tickets: default read_unlimited, works on sealed pads; read_once on request.
	r = hs.do("POST", "/v1/pads/"+c.PadID+"/tickets", strings.NewReader("{}"), "Authorization: Bearer "+c.WriteKey)
	var tk struct{ PadID, Ticket, Type string }
	if err := json.Unmarshal([]byte(r.body), &tk); err != nil || r.status != 201 || tk.Type != "read_unlimited" || len(tk.Ticket) != 43 {
		t.Errorf("tickets = %d %s", r.status, r.body)
	}
	hs.clock.Advance(100 * 24 * time.Hour)
	if r := hs.do("GET", "/v1/pads/"+c.PadID+"/blocks?from=1", nil, "Authorization: Bearer "+tk.Ticket); r.status != 200 {
		t.Errorf("read_unlimited long after TTL: %d %s", r.status, r.body)
	}
	r = hs.do("POST", "/v1/pads/"+c.PadID+"/tickets", strings.NewReader(`{"type":"read_once"}`), "Authorization: Bearer "+c.WriteKey)
	if r.status != 201 || !strings.Contains(r.body, `"type":"read_once"`) {
		t.Errorf("read_once ticket = %d %s", r.status, r.body)
	}
}

func TestOpenPadManifestSealedAtNull(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{}`)
	r := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil)
	if !strings.Contains(r.body, `"state":"open","block_count":0,"total_bytes":0,"sealed_at":null,"head_hash":"0000000000000000000000000000000000000000000000000000000000000000"`) {
		t.Errorf("manifest of a new pad = %s", r.body)
	}
	hs.clock.Advance(3600 * time.Second)
	if r := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil); !strings.Contains(r.body, `"state":"expired"`) {
		t.Errorf("manifest after TTL = %s (lazy expiry)", r.body)
	}
}

// TestReadLease: a read_once ticket opens its lease on the first successful non-empty read;
// empty results, refusals and oversized slices do not open it.
func TestReadLease(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{}`)
	read := func(q string) int {
		return hs.do("GET", "/v1/pads/"+c.PadID+"/blocks"+q, nil, "Authorization: Bearer "+c.ReadTicket).status
	}
	if s := read(""); s != 200 { // empty pad: empty result, no lease
		t.Fatalf("empty read: %d", s)
	}
	hs.clock.Advance(1000 * time.Second)
	hs.mustAppend(c, envelope)
	hs.mustAppend(c, "block one")
	if s := read("?from=5"); s != 200 { // empty slice: no lease
		t.Fatal(s)
	}
	hs.clock.Advance(1000 * time.Second)
	if s := read("?from=0&to=0"); s != 200 { // opens the lease
		t.Fatal(s)
	}
	hs.clock.Advance(600 * time.Second)
	if s := read("?from=1"); s != 200 { // exactly at the window's end: still allowed
		t.Errorf("read at lease end = %d, want 200", s)
	}
	hs.clock.Advance(1 * time.Second)
	if s := read(""); s != 403 {
		t.Errorf("read after lease = %d, want 403", s)
	}
}

func TestDemoPad(t *testing.T) {
	hs := newHarness(t)
	r := hs.do("GET", "/v1/pads/demo-pad-v1/blocks", nil)
	if r.status != 200 || !strings.Contains(r.body, `"total_blocks":3`) || !strings.Contains(r.body, `"curr_hash":"5f77fb573937fa35d50e36ad944a8bd500343bf808d2035b7c4c29a3de5b512b"`) {
		t.Errorf("demo blocks = %d %s", r.status, r.body)
	}
	if r := hs.do("GET", "/v1/pads/demo-pad-v1/blocks?ticket=ignored", nil); r.status != 200 {
		t.Errorf("demo blocks with a ticket = %d", r.status)
	}
	r = hs.do("GET", "/v1/pads/demo-pad-v1/manifest", nil)
	if !strings.Contains(r.body, `"head_hash":"5f77fb573937fa35d50e36ad944a8bd500343bf808d2035b7c4c29a3de5b512b"`) || !strings.Contains(r.body, `"total_bytes":339`) {
		t.Errorf("demo manifest = %s", r.body)
	}
	if r := hs.do("POST", "/v1/pads/demo-pad-v1/append", strings.NewReader("x"), "Authorization: Bearer demo-write-key"); r.status != 409 || r.body != bodySealed {
		t.Errorf("demo append = %d %s", r.status, r.body)
	}
	if r := hs.do("POST", "/v1/pads/demo-pad-v1/append", strings.NewReader("x"), "Authorization: Bearer wrong"); r.status != 401 {
		t.Errorf("demo append wrong key = %d", r.status)
	}
	if r := hs.do("POST", "/v1/pads/demo-pad-v1/tickets", strings.NewReader("{}"), "Authorization: Bearer demo-write-key"); r.status != 201 {
		t.Errorf("demo tickets = %d %s", r.status, r.body)
	}
}

func TestHealth(t *testing.T) {
	hs := newHarness(t)
	hs.create(`{}`)
	r := hs.do("GET", "/health", nil)
	// Open mode configures no payment network and probes nothing: rpc says so with nulls.
	want := `{"status":"ok","version":"test","database":{"writable":true,"wal_mode":true},"rpc":{"network":null,"reachable":null},"pads":{"total":2,"unsealed":1,"sealed":1}}`
	if r.status != 200 || r.body != want {
		t.Errorf("health = %d %s, want %s", r.status, r.body, want)
	}
	h := hs.do("HEAD", "/health", nil)
	if h.status != 200 || h.body != "" {
		t.Errorf("HEAD health = %d %q", h.status, h.body)
	}
}

// probePayments is txid mode's Payments for /health: Probe answers reachable.
type probePayments struct{ reachable bool }

func (p probePayments) Admit(context.Context, string) (*locker.Receipt, error) {
	return nil, errors.New("not used by /health")
}
func (p probePayments) Probe(context.Context) bool { return p.reachable }
func (p probePayments) Network() string            { return "base" }

// TestHealthRPC: rpc names the payment network and the probe's answer only when payments
// are configured (txid mode); open mode reports null for both, never a reachable network.
func TestHealthRPC(t *testing.T) {
	tests := []struct {
		name string
		pay  Payments
		want string
	}{
		{"open mode", nil, `"rpc":{"network":null,"reachable":null}`},
		{"txid, RPC answers", probePayments{true}, `"rpc":{"network":"base","reachable":true}`},
		{"txid, RPC down", probePayments{false}, `"rpc":{"network":"base","reachable":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, func(c *Config) { c.Payments = tc.pay })
			r := hs.do("GET", "/health", nil)
			if r.status != 200 || !strings.Contains(r.body, tc.want) {
				t.Errorf("health = %d %s, want 200 with %s", r.status, r.body, tc.want)
			}
		})
	}
}

// TestSealRefusesInconsistentPad tampers with a stored payload behind the daemon's back:
// seal refuses with 409 inconsistent_pad and leaves the pad open and unchanged.
func TestSealRefusesInconsistentPad(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{}`)
	hs.mustAppend(c, envelope)
	hs.mustAppend(c, "original")
	db := hs.db()
	for _, stmt := range []string{`DROP TRIGGER blocks_no_update`, `UPDATE blocks SET payload = CAST('tampered' AS BLOB) WHERE pad_id = '` + c.PadID + `' AND seq = 1`} {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	before := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil).body
	r := hs.do("POST", "/v1/pads/"+c.PadID+"/seal", nil, "Authorization: Bearer "+c.WriteKey)
	want := `{"error":"inconsistent_pad","detail":"refusing to seal: the stored chain is not consistent (1 problem(s): block 1 curr_hash does not match its payload)"}`
	if r.status != 409 || r.body != want {
		t.Errorf("seal = %d %s, want 409 %s", r.status, r.body, want)
	}
	if after := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil).body; after != before {
		t.Errorf("manifest changed by a refused seal:\n%s\n%s", before, after)
	}
}

func TestSecretsNotInLogs(t *testing.T) {
	var logs bytes.Buffer
	hs := newHarness(t)
	hs.h.(*api).log = newTestLogger(&logs)
	c := hs.create(`{}`)
	hs.mustAppend(c, envelope)
	hs.do("GET", "/v1/pads/"+c.PadID+"/blocks?ticket="+c.ReadTicket, nil)
	hs.do("GET", "/v1/pads/"+c.PadID+"/blocks?ticket=wrong-"+c.ReadTicket, nil)
	hs.do("POST", "/v1/pads/"+c.PadID+"/seal", nil, "Authorization: Bearer "+c.WriteKey)
	for _, secret := range []string{c.WriteKey, c.ReadTicket, "ticket="} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"route":"/v1/pads/{pad_id}/blocks"`) {
		t.Errorf("logs lack the request line:\n%s", logs.String())
	}
}

var _ = http.StatusOK
