package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// run executes lockermcp in-process.
func run(t *testing.T, env map[string]string, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	e := cli.Env{Stdin: stdin, Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code = cli.Run(t.Context(), newRoot(e), args, e)
	return code, out.String(), errb.String()
}

func TestInspectExitCodes(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	url := lockertest.Serve(t, d.Handler)
	p := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte("two")}, true)
	head := locker.ChainHead([][]byte{[]byte(lockertest.Envelope), []byte("two")})
	forged := d.Hostile(func(r *http.Request, resp *lockertest.Response) {
		if strings.HasSuffix(r.URL.Path, "/blocks") {
			lockertest.EditJSON(t, resp, func(pg *lockertest.Page) { lockertest.SetPayload(&pg.Blocks[1], []byte("TWO")) })
		}
	})
	forgedURL := lockertest.Serve(t, forged)
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{name: "demo, flag url", args: []string{"inspect", "demo-pad-v1", "--url", url}, code: 0,
			stdout: []string{"state          sealed", "blocks         3", "bytes          339", "head           " + locker.DemoHead, "verdict        internal_consistency_only"}},
		{name: "env url, expected head", env: map[string]string{"LOCKER_URL": url}, args: []string{"inspect", "demo-pad-v1", "--expected-head", locker.DemoHead}, code: 0,
			stdout: []string{"verdict        trusted_head_match"}},
		{name: "ticket and expected head", args: []string{"inspect", p.PadID, "--url=" + url, "--ticket", p.ReadTicket, "--expected-head=" + head}, code: 0,
			stdout: []string{"blocks         2", "trusted_head_match"}},
		{name: "flag beats env", env: map[string]string{"LOCKER_URL": "http://127.0.0.1:1"}, args: []string{"inspect", "demo-pad-v1", "--url", url}, code: 0},
		{name: "unknown pad", args: []string{"inspect", "nope", "--url", url}, code: 1, stderr: "has no pad nope (404: pad not found): check the pad id and --url"},
		{name: "wrong ticket", args: []string{"inspect", p.PadID, "--url", url, "--ticket", "x"}, code: 1, stderr: "refused the read ticket for pad " + p.PadID + " (401: invalid read ticket)"},
		{name: "no ticket", args: []string{"inspect", p.PadID, "--url", url}, code: 1, stderr: "needs a read ticket (daemon 401: "},
		{name: "no ticket json", args: []string{"inspect", p.PadID, "--url", url, "--json"}, code: 1, stdout: []string{`"status": 401`}, stderr: "--ticket-file FILE"},
		{name: "unreachable", args: []string{"inspect", "demo-pad-v1", "--url", "http://127.0.0.1:1"}, code: 1, stderr: "cannot reach the Padlock daemon at http://127.0.0.1:1 ("},
		{name: "unreachable hint", args: []string{"inspect", "demo-pad-v1", "--url", "http://127.0.0.1:1"}, code: 1, stderr: "connection refused): is it running?"},
		{name: "mismatching head", args: []string{"inspect", "demo-pad-v1", "--url", url, "--expected-head", strings.Repeat("a", 64)}, code: 2,
			stdout: []string{"NOT VERIFIED (expected_head_mismatch)", "verdict  failed"}},
		// A malformed head is a usage error, refused before the daemon is asked (no report).
		{name: "malformed head", args: []string{"inspect", "demo-pad-v1", "--url", url, "--expected-head", "xyz"}, code: 2, stdout: []string{""},
			stderr: `--expected-head "xyz" is not a head hash: give the 64 lowercase hex digits`},
		{name: "tampered daemon", args: []string{"inspect", p.PadID, "--url", forgedURL, "--ticket", p.ReadTicket}, code: 2, stdout: []string{"NOT VERIFIED (chain_inconsistent)"}},
		{name: "json", args: []string{"inspect", "demo-pad-v1", "--url", url, "--json"}, code: 0,
			stdout: []string{`"verified": true`, `"verdict": "internal_consistency_only"`, `"head_hash": "` + locker.DemoHead + `"`}},
		{name: "json failure", args: []string{"inspect", p.PadID, "--url", forgedURL, "--ticket", p.ReadTicket, "--json"}, code: 2,
			stdout: []string{`"verified": false`, `"cause": "chain_inconsistent"`, `"verdict": "failed"`}},
		// Usage errors exit 2, as in every command (docs/cli.md), and point at inspect's help.
		{name: "no pad", args: []string{"inspect", "--url", url}, code: 2, stderr: "lockermcp inspect takes 1 argument, PAD_ID; got none (see 'lockermcp inspect --help')"},
		{name: "bad flag", args: []string{"inspect", "x", "--nope"}, code: 2, stderr: "unknown flag: --nope (see 'lockermcp inspect --help')"},
		{name: "bad url", args: []string{"inspect", "x", "--url", "file:///etc"}, code: 2, stderr: "must be an http:// or https:// URL"},
		{name: "bad transport", env: map[string]string{"LOCKER_TICKET_TRANSPORT": "cookie"}, args: []string{"inspect", "x"}, code: 2, stderr: "LOCKER_TICKET_TRANSPORT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.env, nil, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tc.name == "malformed head" && out != "" {
				t.Errorf("a malformed --expected-head was reported as a verification: %s", out)
			}
			if code == 1 && !slices.Contains(tc.args, "--json") && out != "" {
				t.Errorf("a daemon error printed a report on stdout (only stderr should speak): %s", out)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr lacks %q: %s", tc.stderr, errs)
			}
			if strings.Contains(out+errs, p.ReadTicket) {
				t.Errorf("the ticket is printed")
			}
			if strings.Contains(out, "--json") || (strings.Contains(strings.Join(tc.args, " "), "--json") && !json.Valid([]byte(out))) {
				t.Errorf("--json output is not one JSON document: %s", out)
			}
		})
	}
}

// TestInspectDashTicket: a ticket starting with '-' works in both flag forms.
func TestInspectDashTicket(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	var mu sync.Mutex
	var seen []string
	spy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/blocks") {
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization"))
			mu.Unlock()
		}
		d.Handler.ServeHTTP(w, r)
	})
	url := lockertest.Serve(t, spy)
	const ticket = "-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
	for _, args := range [][]string{
		{"inspect", "demo-pad-v1", "--url", url, "--ticket=" + ticket},
		{"inspect", "demo-pad-v1", "--url", url, "--ticket", ticket},
		{"inspect", "--ticket", ticket, "demo-pad-v1", "--url", url},
	} {
		if code, out, errs := run(t, nil, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	// --ticket-file keeps the ticket out of the argument list: its first line, or stdin.
	file := filepath.Join(t.TempDir(), "ticket")
	if err := os.WriteFile(file, []byte(ticket+"\nsecond line ignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, nil, nil, "inspect", "demo-pad-v1", "--url", url, "--ticket-file", file); code != 0 {
		t.Fatalf("--ticket-file: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, nil, strings.NewReader(ticket+"\n"), "inspect", "demo-pad-v1", "--url", url, "--ticket-file", "-"); code != 0 {
		t.Fatalf("--ticket-file -: exit %d\n%s%s", code, out, errs)
	}
	for _, h := range seen {
		if h != "Bearer "+ticket {
			t.Errorf("Authorization = %q", h)
		}
	}
	if len(seen) != 5 {
		t.Errorf("%d reads, want 5", len(seen))
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	for _, args := range [][]string{
		{"--ticket-file", empty},
		{"--ticket-file", filepath.Join(t.TempDir(), "missing")},
		{"--ticket-file", file, "--ticket", ticket},
	} {
		code, _, errs := run(t, nil, nil, append([]string{"inspect", "demo-pad-v1", "--url", url}, args...)...)
		if code != 2 || strings.Contains(errs, ticket) {
			t.Errorf("%v: exit %d, stderr %q; want 2 without the ticket", args, code, errs)
		}
	}
	if len(seen) != 5 {
		t.Errorf("a refused --ticket-file still read the pad (%d reads)", len(seen))
	}
}

func TestServerRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "refusing to start: LOCKER_URL is not set"},
		{map[string]string{"LOCKER_URL": "127.0.0.1:8000"}, "LOCKER_URL"},
		{map[string]string{"LOCKER_URL": "http://x", "LOCKER_TICKET_TRANSPORT": "both"}, `LOCKER_TICKET_TRANSPORT="both" is not a transport`},
	} {
		code, out, errs := run(t, tc.env, nil)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("env %v: exit %d, stdout %q, stderr %q", tc.env, code, out, errs)
		}
	}
}

// TestServerOverStdio runs the root command with pipes as stdin/stdout and talks MCP to it
// with the go-sdk client.
func TestServerOverStdio(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	url := lockertest.Serve(t, d.Handler)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	e := cli.Env{Stdin: inR, Stdout: outW, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"LOCKER_URL": url}[k]
	}}
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(t.Context(), newRoot(e), nil, e)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "locker_read_blocks",
		Arguments: json.RawMessage(`{"pad_id":"demo-pad-v1","ticket":"","expected_head_hash":"` + locker.DemoHead + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"verdict":"trusted_head_match"`) {
		t.Fatalf("result: %s", raw)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	logs := errb.String()
	if !strings.Contains(logs, `"tool":"locker_read_blocks"`) || !strings.Contains(logs, `"outcome":"ok_trusted_head_match"`) {
		t.Errorf("logs: %s", logs)
	}
	if strings.Contains(logs, "payload") || strings.Contains(logs, "Permanent read-only") {
		t.Errorf("logs show result content: %s", logs)
	}
}
