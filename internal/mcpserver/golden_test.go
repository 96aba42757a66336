package mcpserver

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// secretsRE matches the random parts of a result: 32-hex pad ids and 43-character tokens.
var secretsRE = regexp.MustCompile(`"[0-9a-f]{32}"|"[A-Za-z0-9_-]{43}"`)

// golden compares a result's text with testdata/name.golden, whose first lines (starting
// with "#") say what the file guards.
func golden(t *testing.T, name, header, text string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	text = secretsRE.ReplaceAllStringFunc(text, func(s string) string {
		if len(s) == 34 {
			return `"<pad_id>"`
		}
		return `"<token>"`
	})
	want := header + text + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update)", err)
	}
	if string(got) != want {
		t.Errorf("%s differs (go test -run Golden -update rewrites it):\n--- want\n%s\n--- got\n%s", path, got, want)
	}
}

func comment(lines ...string) string {
	return "# " + strings.Join(lines, "\n# ") + "\n"
}

// TestGoldenResults pins the exact text a model sees for each result shape.
func TestGoldenResults(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	cs := session(t, d.Handler, config.TicketHeader)
	golden(t, "read_blocks_trusted", comment(
		"locker_read_blocks on demo-pad-v1 (blocks 0..2) with the demo head as expected_head_hash.",
		"Guards the success shape: key order, integrity block and verdict trusted_head_match, blocks",
		"without content_type, payload_utf8 derived by the client (payload_utf8_source)."),
		call(t, cs, "locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","to_block":2,"expected_head_hash":"`+locker.DemoHead+`"}`).text)
	golden(t, "manifest_not_checked", comment(
		"locker_manifest on demo-pad-v1 without a ticket: the daemon's manifest, integrity not_checked,",
		"head_provenance with manifest_head.verified_by_client false and no recomputed head."),
		call(t, cs, "locker_manifest", `{"pad_id":"demo-pad-v1"}`).text)
	golden(t, "read_blocks_mismatch", comment(
		"locker_read_blocks on demo-pad-v1 with a wrong expected head: the verification failure shape",
		"(error.kind verification_failed, cause, pad_id, integrity with verdict failed) and no payload."),
		call(t, cs, "locker_read_blocks", `{"pad_id":"demo-pad-v1","ticket":"","expected_head_hash":"`+strings.Repeat("0", 64)+`"}`).text)
	golden(t, "daemon_error", comment(
		"locker_read_blocks on an unknown pad: a daemon error is returned as a result, not raised."),
		call(t, cs, "locker_read_blocks", `{"pad_id":"nope","ticket":"x"}`).text)

	hostile := session(t, d.Hostile(editObj(t, isAppend, func(n int, m map[string]any) {
		if n == 1 {
			m["curr_hash"] = strings.Repeat("ab", 32)
		}
	})), config.TicketHeader)
	golden(t, "deposit_ack_mismatch", comment(
		"locker_deposit where the daemon acknowledges append 1 with a foreign hash: the deposit failure",
		"shape with its partial block (capabilities returned, here replaced by placeholders) and the",
		"integrity block naming the three heads."),
		call(t, hostile, "locker_deposit", `{"envelope":`+handoffEnvelope+`,"artifacts":["one","two"]}`).text)
	lost := session(t, d.Hostile(func(r *http.Request, resp *lockertest.Response) { resp.Drop = isCreate(r) }), config.TicketHeader)
	out := call(t, lost, "locker_deposit", `{"envelope":`+handoffEnvelope+`,"artifacts":[]}`).text
	out = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(out, "127.0.0.1:PORT")
	golden(t, "deposit_create_lost", comment(
		"locker_deposit whose create response is lost after the daemon committed: status unknown, no",
		"capabilities, recovery capabilities_not_received; the error object is the transport error."), out)
}
