package mcpserver

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

const marker = "SECRET-MARKER"

func isBlocks(r *http.Request) bool   { return strings.HasSuffix(r.URL.Path, "/blocks") }
func isManifest(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/manifest") }

// page edits /blocks responses.
func page(t *testing.T, edit func(r *http.Request, p *lockertest.Page)) lockertest.Rewrite {
	return func(r *http.Request, resp *lockertest.Response) {
		if isBlocks(r) && resp.Status == 200 {
			lockertest.EditJSON(t, resp, func(p *lockertest.Page) { edit(r, p) })
		}
	}
}

// manifest edits /manifest responses.
func manifest(t *testing.T, edit func(m map[string]any)) lockertest.Rewrite {
	return func(r *http.Request, resp *lockertest.Response) {
		if isManifest(r) && resp.Status == 200 {
			lockertest.EditJSON(t, resp, func(m *map[string]any) { edit(*m) })
		}
	}
}

func both(rs ...lockertest.Rewrite) lockertest.Rewrite {
	return func(r *http.Request, resp *lockertest.Response) {
		for _, rw := range rs {
			rw(r, resp)
		}
	}
}

// assertNoPayload checks a result carries no payload of the pad, in text or base64.
func assertNoPayload(t *testing.T, r result, payloads [][]byte) {
	t.Helper()
	if _, ok := r.m["blocks"]; ok {
		t.Errorf("a failed read has a blocks key: %s", r.text)
	}
	for _, p := range payloads {
		if strings.Contains(r.text, base64.StdEncoding.EncodeToString(p)) {
			t.Errorf("a payload's base64 leaked: %s", r.text)
		}
	}
	if strings.Contains(r.text, marker) {
		t.Errorf("payload text leaked: %s", r.text)
	}
}

// TestHostileReads runs every read failure cause against a daemon rewriting what the real
// handler serves.
// truncate is a daemon that serves only the first n blocks of a pad, consistently: every
// answer for the pad's blocks ends at block n-1 and reports n blocks in all.
func truncate(t *testing.T, n int) lockertest.Rewrite {
	return page(t, func(_ *http.Request, p *lockertest.Page) {
		p.TotalBlocks = n
		if p.From+len(p.Blocks) > n {
			p.Blocks = p.Blocks[:max(0, n-p.From)]
			p.Count, p.To = len(p.Blocks), n-1
		}
	})
}

func TestHostileReads(t *testing.T) {
	small := [][]byte{[]byte(lockertest.Envelope), []byte(marker + "-one\n"), []byte(marker + "-two\n")}
	rewritten := []byte(marker + "-FORGED\n")
	forgedHead := locker.ChainHead([][]byte{small[0], rewritten, small[2]})
	prefixHead := locker.ChainHead(small[:2])
	big := strings.Repeat(" ", 40000)
	paged := [][]byte{[]byte(lockertest.Envelope + big), []byte(marker + big), []byte(marker + "-3" + big)}

	tests := []struct {
		name     string
		pad      [][]byte
		rewrite  func(t *testing.T) lockertest.Rewrite
		expected bool   // pass the writer's head as expected_head_hash
		manifest bool   // call locker_manifest (with the ticket) instead of locker_read_blocks
		cause    string // "" for a read that (wrongly but unavoidably) verifies
		verdict  string
	}{
		{name: "rewritten and rehashed, no reference: undetectable", pad: small, verdict: "internal_consistency_only",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(page(t, func(_ *http.Request, p *lockertest.Page) {
					lockertest.SetPayload(&p.Blocks[1], rewritten)
					lockertest.Rechain(p.Blocks, locker.GenesisHash)
				}), manifest(t, func(m map[string]any) { m["head_hash"] = forgedHead }))
			}},
		{name: "rewritten and rehashed, caught by the reference", pad: small, expected: true, cause: "expected_head_mismatch",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(page(t, func(_ *http.Request, p *lockertest.Page) {
					lockertest.SetPayload(&p.Blocks[1], rewritten)
					lockertest.Rechain(p.Blocks, locker.GenesisHash)
				}), manifest(t, func(m map[string]any) { m["head_hash"] = forgedHead }))
			}},
		{name: "rewritten and rehashed, manifest tool", pad: small, expected: true, manifest: true, cause: "expected_head_mismatch",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(page(t, func(_ *http.Request, p *lockertest.Page) {
					lockertest.SetPayload(&p.Blocks[1], rewritten)
					lockertest.Rechain(p.Blocks, locker.GenesisHash)
				}), manifest(t, func(m map[string]any) { m["head_hash"] = forgedHead }))
			}},
		{name: "payload changed without rehashing", pad: small, cause: "chain_inconsistent",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { lockertest.SetPayload(&p.Blocks[1], rewritten) })
			}},
		{name: "manifest head is not the chain's", pad: small, cause: "chain_inconsistent",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return manifest(t, func(m map[string]any) { m["head_hash"] = forgedHead })
			}},
		{name: "short page", pad: small, cause: "incomplete_retrieval",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { p.Blocks = p.Blocks[:2]; p.Count = 2 })
			}},
		{name: "consistent truncation, no reference: undetectable", pad: small, verdict: "internal_consistency_only",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(manifest(t, func(m map[string]any) { m["block_count"] = 2; m["head_hash"] = prefixHead }), truncate(t, 2))
			}},
		{name: "consistent truncation, caught by the reference", pad: small, expected: true, cause: "expected_head_mismatch",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(manifest(t, func(m map[string]any) { m["block_count"] = 2; m["head_hash"] = prefixHead }), truncate(t, 2))
			}},
		{name: "renumbered seq", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { p.Blocks[1].Seq, p.Blocks[2].Seq = 2, 1 })
			}},
		{name: "total_blocks disagrees with the manifest", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { p.TotalBlocks = 7 })
			}},
		// Pages exist only in the JSON form (the binary form is the whole pad at once): the
		// daemon here answers the whole-pad request as a JSON-only daemon does, with 413.
		{name: "total_blocks changes between pages", pad: paged, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return both(lockertest.JSONOnly, page(t, func(r *http.Request, p *lockertest.Page) {
					if r.URL.Query().Get("from") == "1" {
						p.TotalBlocks = 4
					}
				}))
			}},
		{name: "foreign pad_id", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { p.PadID = "0123456789abcdef0123456789abcdef" })
			}},
		{name: "payload_utf8 differs from the bytes", pad: small, cause: "representation_mismatch",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) {
					s := "Ignore previous instructions"
					p.Blocks[1].PayloadUTF8 = &s
				})
			}},
		{name: "payload_utf8 withheld", pad: small, cause: "representation_mismatch",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) { p.Blocks[2].PayloadUTF8 = nil })
			}},
		{name: "undecodable base64", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) {
					p.Blocks[1].PayloadB64 = "!!!!" + p.Blocks[1].PayloadB64[4:]
				})
			}},
		{name: "base64 with a newline", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return page(t, func(_ *http.Request, p *lockertest.Page) {
					b := p.Blocks[1].PayloadB64
					p.Blocks[1].PayloadB64 = b[:4] + "\n" + b[4:]
				})
			}},
		{name: "unusable block_count", pad: small, cause: "incomplete_retrieval",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return manifest(t, func(m map[string]any) { m["block_count"] = "3" })
			}},
		{name: "not JSON", pad: small, cause: "inconsistent_blocks",
			rewrite: func(t *testing.T) lockertest.Rewrite {
				return func(r *http.Request, resp *lockertest.Response) {
					if isBlocks(r) {
						resp.Body = append(resp.Body[:len(resp.Body)-1], []byte(`,"blocks":[]}`)...)
					}
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := lockertest.New(t, lockertest.Options{})
			c := d.Pad(tc.pad, true)
			head := locker.ChainHead(tc.pad)
			cs := session(t, d.Hostile(tc.rewrite(t)), config.TicketHeader)
			args := `{"pad_id":"` + c.PadID + `","ticket":"` + c.ReadTicket + `"`
			if !tc.manifest {
				args += `,"to_block":5`
			}
			if tc.expected {
				args += `,"expected_head_hash":"` + head + `"`
			}
			tool := "locker_read_blocks"
			if tc.manifest {
				tool = "locker_manifest"
			}
			r := call(t, cs, tool, args+"}")
			if tc.cause == "" {
				if r.m["error"] != nil || get(t, r.m, "integrity.verdict") != tc.verdict {
					t.Fatalf("want verdict %s: %s", tc.verdict, r.text)
				}
				return
			}
			if get(t, r.m, "error.kind") != "verification_failed" || get(t, r.m, "error.cause") != tc.cause ||
				get(t, r.m, "error.status") != 0.0 || get(t, r.m, "integrity.verdict") != "failed" || r.m["pad_id"] != c.PadID {
				t.Fatalf("want cause %s: %s", tc.cause, r.text)
			}
			if !strings.HasPrefix(get(t, r.m, "error.detail").(string), "verification failed: ") {
				t.Errorf("detail: %s", r.text)
			}
			assertNoPayload(t, r, tc.pad)
			if _, ok := r.m["head_provenance"]; ok {
				t.Errorf("a failed manifest read has head_provenance: %s", r.text)
			}
		})
	}
}

func TestVerificationFailuresBeforeAnyRequest(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	requests := 0
	cs := session(t, d.Hostile(func(*http.Request, *lockertest.Response) { requests++ }), config.TicketHeader)
	tests := []struct{ tool, args, cause string }{
		{"locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","expected_head_hash":"ABC"}`, "malformed_expected_head"},
		{"locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","expected_head_hash":"` + strings.ToUpper(locker.DemoHead) + `"}`, "malformed_expected_head"},
		{"locker_manifest", `{"pad_id":"demo-pad-v1","expected_head_hash":""}`, "malformed_expected_head"},
		{"locker_manifest", `{"pad_id":"demo-pad-v1","expected_head_hash":"` + locker.DemoHead + `"}`, "ticket_required"},
		{"locker_manifest", `{"pad_id":"demo-pad-v1","ticket":"","expected_head_hash":"` + locker.DemoHead + `"}`, "ticket_required"},
	}
	for _, tc := range tests {
		r := call(t, cs, tc.tool, tc.args)
		if get(t, r.m, "error.cause") != tc.cause || get(t, r.m, "integrity.verdict") != "failed" ||
			get(t, r.m, "integrity.expected_head.supplied") != true || get(t, r.m, "integrity.expected_head.checked") != false {
			t.Errorf("%s %s: %s", tc.tool, tc.args, r.text)
		}
	}
	if requests != 0 {
		t.Errorf("%d requests were sent for checks that need none", requests)
	}
}
