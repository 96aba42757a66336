package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The servers here misbehave the ways real ones do. Each must be listed (or refused with an
// error that says why) within two seconds of its own answer time, never after the whole
// timeout: the listing's timeout is set far above that so that a wait would show.

func TestMisbehavingStdioServers(t *testing.T) {
	tests := []struct {
		mode            string
		note            string // a note the listing must carry
		probeUnanswered bool
		errSubstr       string // "" for a successful listing
	}{
		// A legacy server that ignores unknown requests: the probe is given up on after
		// DefaultProbeTimeout and initialize follows on the same connection.
		{mode: "ignore-unknown", probeUnanswered: true},
		// One that exits on an unknown method: restarted, then initialize.
		{mode: "exit-on-unknown", note: "exited when sent the server/discover probe; restarted"},
		// A startup banner and a stray print on stdout: skipped, logged, counted.
		{mode: "banner", note: "skipped 3 lines on stdout that are not JSON-RPC (the first: Fake MCP server v1.0 starting...)"},
		// Everything at once, slowly.
		{mode: "banner,ignore-unknown,slow=200", note: "skipped 3 lines", probeUnanswered: true},
		// Thousands of non-JSON lines: refused, bounded.
		{mode: "flood", errSubstr: "more than 1000 lines on stdout that are not JSON-RPC (the first: debug line 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			// The server's own answer time: the same server listed as a client that sends
			// initialize first (no probe to ignore or exit on).
			cursor, _ := BuiltinProfile("cursor")
			start := time.Now()
			_, _ = ListTools(t.Context(), fakeStdio(t, tc.mode), Options{Timeout: 30 * time.Second, Profile: &cursor})
			own := time.Since(start)
			start = time.Now()
			l, err := ListTools(t.Context(), fakeStdio(t, tc.mode), Options{Timeout: 30 * time.Second})
			if elapsed := time.Since(start); elapsed > own+2*time.Second {
				t.Errorf("took %v; the server's own answer time is %v", elapsed, own)
			}
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) || !errors.Is(err, ErrProtocol) {
					t.Fatalf("err = %v, want ErrProtocol with %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tools) != 3 || string(l.Tools[0].Raw) != rawTools[0] {
				t.Errorf("got %d tools: %+v", len(l.Tools), l.Tools)
			}
			if !strings.Contains(strings.Join(l.Notes, "\n"), tc.note) || l.ProbeUnanswered != tc.probeUnanswered {
				t.Errorf("notes = %q, probe unanswered %v; want a note containing %q, probe unanswered %v", l.Notes, l.ProbeUnanswered, tc.note, tc.probeUnanswered)
			}
			waitGone(t, l.PID)
		})
	}
}

// A profile that offers a pre-2026 revision sends initialize first, as the editors do: no
// probe, so even a server that exits on unknown methods is listed at once.
func TestLegacyProfileSendsInitializeFirst(t *testing.T) {
	cursor, _ := BuiltinProfile("cursor")
	start := time.Now()
	l, err := ListTools(t.Context(), fakeStdio(t, "exit-on-unknown"), Options{Timeout: 30 * time.Second, Profile: &cursor})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second || len(l.Notes) != 0 || l.ProbeUnanswered || l.Profile != "cursor" {
		t.Errorf("took %v, notes %q, profile %q", el, l.Notes, l.Profile)
	}
}

// The capabilities a profile declares reach the server exactly (the fake server echoes
// them as its instructions), including the ones the SDK's types cannot express (tasks).
func TestProfileCapabilitiesOnTheWire(t *testing.T) {
	for _, p := range BuiltinProfiles() {
		t.Run(p.Name, func(t *testing.T) {
			l, err := ListTools(t.Context(), fakeStdio(t, "everything"), Options{Timeout: 10 * time.Second, Profile: &p, Everything: true})
			if err != nil {
				t.Fatal(err)
			}
			if l.Instructions == nil || *l.Instructions != string(p.Capabilities) {
				t.Errorf("server saw capabilities %v, want %s", l.Instructions, p.Capabilities)
			}
			if len(l.Prompts) != 1 || l.Prompts[0].Key != "greet" || len(l.Resources) != 1 || l.Resources[0].Key != "fake://readme" ||
				len(l.ResourceTemplates) != 1 || l.ResourceTemplates[0].Key != "fake://doc/{id}" {
				t.Errorf("prompts %v, resources %v, templates %v", l.Prompts, l.Resources, l.ResourceTemplates)
			}
		})
	}
}

func TestNewProfile(t *testing.T) {
	p, err := NewProfile("mine", "2025-06-18", []byte(` {"sampling": {}, "roots":{ }} `))
	if err != nil || string(p.Capabilities) != `{"roots":{},"sampling":{}}` {
		t.Errorf("NewProfile = %+v, %v", p, err)
	}
	for _, bad := range []struct{ name, version, caps string }{
		{"", "2025-06-18", `{}`}, {"a b", "2025-06-18", `{}`}, {"x", "2025-01-01", `{}`}, {"x", "2025-06-18", `[]`}, {"x", "2025-06-18", `{"a":1,"a":2}`},
	} {
		if _, err := NewProfile(bad.name, bad.version, []byte(bad.caps)); err == nil {
			t.Errorf("NewProfile(%q, %q, %s) accepted", bad.name, bad.version, bad.caps)
		}
	}
}

// An HTTP error response keeps its explanation in the error, shortened and with the
// configured credentials and anything shaped like a credential removed.
func TestHTTPErrorBodyKeptAndRedacted(t *testing.T) {
	const token = "s3cr3t-token-value"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "Forbidden: the token %s lacks the scope mcp:read.\nAsk an admin; request id 42. api_key=abcd1234efgh session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig %s",
			r.Header.Get("Authorization"), strings.Repeat("x", 20000))
	}))
	defer srv.Close()
	_, err := ListTools(t.Context(), Server{Name: "guarded", Transport: TransportHTTP, URL: srv.URL + "/mcp?key=querysecret",
		Headers: map[string]string{"Authorization": "Bearer " + token}}, Options{Timeout: 10 * time.Second})
	if err == nil {
		t.Fatal("a 403 listed")
	}
	msg := err.Error()
	for _, want := range []string{"HTTP 403 Forbidden: Forbidden: the token", "lacks the scope mcp:read. Ask an admin; request id 42.", "[redacted]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, secret := range []string{token, "abcd1234efgh", "eyJhbGciOiJIUzI1NiJ9", "querysecret", "\n"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error contains %q:\n%s", secret, msg)
		}
	}
	if len(msg) > 1500 {
		t.Errorf("error is %d bytes long: the body is not bounded", len(msg))
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"error":"invalid_token","token":"abc123456"}`, `{"error":"invalid_token","token":"[redacted]"}`},
		{"Authorization: Bearer zzzzzzzz rejected", "Authorization: [redacted] rejected"},
		{"key ghp_0123456789abcdefABCDEF leaked", "key [redacted] leaked"},
		{"plain   words\n\tonly", "plain words only"},
		{"mine=hunter22", "mine=[redacted]"},
	}
	for _, tc := range tests {
		if got := redact(tc.in, []string{"hunter22"}); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var raw json.RawMessage = []byte(`{}`)
	_ = raw
}
