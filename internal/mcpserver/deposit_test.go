package mcpserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

func isAppend(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/append") }
func isSeal(r *http.Request) bool   { return strings.HasSuffix(r.URL.Path, "/seal") }
func isCreate(r *http.Request) bool { return r.URL.Path == "/v1/pads" }

// editObj edits a JSON object response of the requests matching.
func editObj(t *testing.T, match func(*http.Request) bool, edit func(n int, m map[string]any)) lockertest.Rewrite {
	n := 0
	return func(r *http.Request, resp *lockertest.Response) {
		if match(r) && resp.Status < 300 {
			lockertest.EditJSON(t, resp, func(m *map[string]any) { edit(n, *m) })
			n++
		}
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestHostileDeposits runs every deposit failure cause against a daemon that rewrites or
// loses responses after the real handler has acted on the request.
func TestHostileDeposits(t *testing.T) {
	tests := []struct {
		name         string
		rewrite      func(t *testing.T) lockertest.Rewrite
		kind         string // error.kind, "" when the preserved daemon error is the error object
		errStatus    float64
		cause        string
		status       string // partial.status
		acknowledged []string
		uncertain    []string
		caps         bool
		integrity    bool
		sealedBehind bool // the daemon did seal although the response was lost
	}{
		{name: "create response lost", rewrite: func(*testing.T) lockertest.Rewrite {
			return func(r *http.Request, resp *lockertest.Response) { resp.Drop = isCreate(r) }
		}, cause: "creation_outcome_unknown", status: "unknown", uncertain: []string{"create"}},
		{name: "create answered 503 by a proxy", rewrite: func(*testing.T) lockertest.Rewrite {
			return func(r *http.Request, resp *lockertest.Response) {
				if isCreate(r) {
					resp.Status, resp.Body = 503, []byte("<html>upstream unavailable</html>")
				}
			}
		}, errStatus: 503, cause: "creation_outcome_unknown", status: "unknown", uncertain: []string{"create"}},
		{name: "create capabilities unreadable", rewrite: func(t *testing.T) lockertest.Rewrite {
			return editObj(t, isCreate, func(_ int, m map[string]any) { delete(m, "write_key") })
		}, kind: "deposit_failed", cause: "creation_capabilities_unreadable", status: "unknown", uncertain: []string{"create"}},
		{name: "append hash mismatch", rewrite: func(t *testing.T) lockertest.Rewrite {
			return editObj(t, isAppend, func(n int, m map[string]any) {
				if n == 1 {
					m["curr_hash"] = strings.Repeat("ab", 32)
				}
			})
		}, kind: "verification_failed", cause: "append_acknowledgment_mismatch", status: "partial",
			acknowledged: []string{"create", "append 0"}, uncertain: []string{"append 1"}, caps: true, integrity: true},
		{name: "append seq mismatch", rewrite: func(t *testing.T) lockertest.Rewrite {
			return editObj(t, isAppend, func(n int, m map[string]any) {
				if n == 0 {
					m["seq"] = 3
				}
			})
		}, kind: "verification_failed", cause: "append_acknowledgment_mismatch", status: "partial",
			acknowledged: []string{"create"}, uncertain: []string{"append 0 (acknowledged at sequence 3)"}, caps: true, integrity: true},
		{name: "append response lost", rewrite: func(*testing.T) lockertest.Rewrite {
			n := 0
			return func(r *http.Request, resp *lockertest.Response) {
				if isAppend(r) {
					resp.Drop = n == 2
					n++
				}
			}
		}, cause: "append_outcome_unknown", status: "partial", acknowledged: []string{"create", "append 0", "append 1"},
			uncertain: []string{"append 2"}, caps: true},
		{name: "append refused 409 after dispatch", rewrite: func(*testing.T) lockertest.Rewrite {
			return func(r *http.Request, resp *lockertest.Response) {
				if isAppend(r) {
					resp.Status, resp.Body = 409, []byte(`{"error":"conflict","detail":"byte quota exceeded"}`)
				}
			}
		}, errStatus: 409, cause: "append_outcome_unknown", status: "partial", acknowledged: []string{"create"},
			uncertain: []string{"append 0"}, caps: true},
		{name: "seal response lost", rewrite: func(*testing.T) lockertest.Rewrite {
			return func(r *http.Request, resp *lockertest.Response) { resp.Drop = isSeal(r) }
		}, cause: "seal_outcome_unknown", status: "partial", acknowledged: []string{"create", "append 0", "append 1", "append 2"},
			uncertain: []string{"seal"}, caps: true, sealedBehind: true},
		{name: "seal head mismatch", rewrite: func(t *testing.T) lockertest.Rewrite {
			return editObj(t, isSeal, func(_ int, m map[string]any) { m["head_hash"] = strings.Repeat("0", 64) })
		}, kind: "verification_failed", cause: "seal_head_mismatch", status: "partial",
			acknowledged: []string{"create", "append 0", "append 1", "append 2"}, uncertain: []string{"seal"}, caps: true, integrity: true},
		{name: "seal state unexpected", rewrite: func(t *testing.T) lockertest.Rewrite {
			return editObj(t, isSeal, func(_ int, m map[string]any) { m["state"] = "open" })
		}, kind: "verification_failed", cause: "seal_state_unexpected", status: "partial",
			acknowledged: []string{"create", "append 0", "append 1", "append 2"}, uncertain: []string{"seal"}, caps: true, integrity: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := lockertest.New(t, lockertest.Options{})
			cs := session(t, d.Hostile(tc.rewrite(t)), config.TicketHeader)
			r := call(t, cs, "locker_deposit", `{"envelope":`+handoffEnvelope+`,"artifacts":["`+marker+` one",{"k":"`+marker+`"}]}`)
			if !r.isError {
				t.Fatalf("a failed deposit is not isError: %s", r.text)
			}
			if _, ok := r.m["head_hash"]; ok {
				t.Fatalf("a failed deposit has the success shape: %s", r.text)
			}
			e := r.m["error"].(map[string]any)
			if tc.kind != "" {
				if e["kind"] != tc.kind || e["cause"] != tc.cause || e["status"] != 0.0 {
					t.Errorf("error = %v", e)
				}
			} else if e["status"] != tc.errStatus || !strings.HasPrefix(e["detail"].(string), "locker daemon error ") {
				t.Errorf("error = %v, want the daemon error with status %v", e, tc.errStatus)
			}
			p := r.m["partial"].(map[string]any)
			if p["status"] != tc.status || p["cause"] != tc.cause || p["automatic_recovery"] != false {
				t.Errorf("partial = %v", p)
			}
			if got := strs(p["acknowledged"]); !slices.Equal(got, tc.acknowledged) && !(len(got) == 0 && len(tc.acknowledged) == 0) {
				t.Errorf("acknowledged = %v, want %v", got, tc.acknowledged)
			}
			if got := strs(p["uncertain"]); !slices.Equal(got, tc.uncertain) {
				t.Errorf("uncertain = %v, want %v", got, tc.uncertain)
			}
			for _, k := range []string{"detail", "classification_basis", "note", "continuation", "capabilities_note", "uncertain_note"} {
				if s, _ := p[k].(string); s == "" {
					t.Errorf("partial.%s is empty", k)
				}
			}
			_, hasIntegrity := r.m["integrity"]
			if hasIntegrity != tc.integrity {
				t.Errorf("integrity present = %v, want %v", hasIntegrity, tc.integrity)
			}
			if tc.caps {
				caps := p["capabilities"].(map[string]any)
				if p["recovery"] != "capabilities_returned" || caps["write_key"] == "" || r.m["pad_id"] != caps["pad_id"] {
					t.Errorf("capabilities: %s", r.text)
				}
				if tc.integrity && !strings.Contains(p["continuation"].(string), "verification failure") {
					t.Errorf("continuation lacks the prohibition: %v", p["continuation"])
				}
				_, body := d.Do("GET", "/v1/pads/"+caps["pad_id"].(string)+"/manifest", nil, "")
				var m map[string]any
				_ = json.Unmarshal(body, &m)
				if tc.sealedBehind && m["state"] != "sealed" {
					t.Errorf("fixture: the daemon did not seal behind the lost response (%v)", m["state"])
				}
			} else if p["capabilities"] != nil || p["recovery"] != "capabilities_not_received" {
				t.Errorf("capabilities: %s", r.text)
			}
			if strings.Contains(r.text, marker) {
				t.Errorf("payload text in the result: %s", r.text)
			}
		})
	}
}

// TestCapabilitiesNeverLogged: a deposit failure carries capabilities to the caller; the
// logs (server and client, at debug) show neither them nor any payload.
func TestCapabilitiesNeverLogged(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := d.Hostile(editObj(t, isSeal, func(_ int, m map[string]any) { m["head_hash"] = strings.Repeat("0", 64) }))
	cs := sessionLogged(t, lockertest.Serve(t, h), config.TicketQuery, log)
	r := call(t, cs, "locker_deposit", `{"envelope":`+handoffEnvelope+`,"artifacts":["`+marker+`"]}`)
	caps := get(t, r.m, "partial.capabilities").(map[string]any)
	call(t, cs, "locker_read_blocks", `{"pad_id":"`+caps["pad_id"].(string)+`","ticket":"`+caps["read_ticket"].(string)+`"}`)
	out := logs.String()
	if !strings.Contains(out, `"outcome":"deposit_failed_seal_head_mismatch"`) {
		t.Fatalf("logs: %s", out)
	}
	for _, s := range []string{caps["write_key"].(string), caps["read_ticket"].(string), marker, "?"} {
		if strings.Contains(out, s) {
			t.Errorf("logs show %q: %s", s, out)
		}
	}
}
