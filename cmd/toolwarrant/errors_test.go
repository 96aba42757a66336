package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
)

// TestErrorLines pins the whole error line of each refusal a newcomer meets first (issue
// 20): what failed, why, and what to do; the thing it failed on named once; no internal
// package names; a usage error points at the command's own --help and exits 2.
func TestErrorLines(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(fixture.New(forecast, alerts))
	defer srv.Close()
	if r := runCLI(t, dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r)
	}
	if r := runCLI(t, dir, nil, "server", "add", "wx", srv.URL+"/mcp", "--allow-private"); r.code != 0 {
		t.Fatalf("server add: %s", r)
	}
	if r := runCLI(t, dir, nil, "crawl"); r.code != 1 {
		t.Fatalf("crawl: %s", r)
	}
	// The crawling identity (tester@example) holds a trusted key: separation of duties.
	crawlerKey := sshKey(t, dir, "crawler")
	if r := runCLI(t, dir, nil, "trust", "init", "--ssh-key", crawlerKey+".pub", "--principal", "tester@example"); r.code != 0 {
		t.Fatalf("trust init: %s", r)
	}
	fc := string(digestOf(t, forecast))
	privateKey := filepath.Join(dir, "crawler")

	tests := []struct {
		name string
		args []string
		code int
		want string // the whole of stderr
	}{
		{"approve without --hash", []string{"approve", "wx", "get_forecast", "--sign-key", crawlerKey}, 2,
			"toolwarrant: --hash DIGEST is required: the digest you read and decide on (the 12 hex digits 'toolwarrant list' prints will do) (see 'toolwarrant approve --help')"},
		{"rollback without --to", []string{"rollback", "wx", "get_forecast", "--sign-key", crawlerKey}, 2,
			"toolwarrant: --to DIGEST is required: the digest you read and decide on (the 12 hex digits 'toolwarrant list' prints will do) (see 'toolwarrant rollback --help')"},
		{"separation of duties is a whole sentence", []string{"approve", "wx", "get_forecast", "--hash", fc, "--sign-key", crawlerKey}, 2,
			"toolwarrant: tester@example crawled this digest, so it cannot approve it too: separation of duties; another person on the trust list must approve it, signing with their own key"},
		{"a private key where the public one belongs", []string{"trust", "add", "--ssh-key", privateKey, "--sign-key", crawlerKey}, 2,
			"toolwarrant: --ssh-key " + privateKey + ": this is a private key, not a public key: pass its public key, " + privateKey + ".pub (ssh-keygen -y -f " + privateKey + " prints it) (see 'toolwarrant trust add --help')"},
		{"a typo in the trust root is not a rewritten history", []string{"audit", "verify", "--trust-root", "abc"}, 2,
			"toolwarrant: --trust-root \"abc\" is not a trust root: give the 64 hex digits 'toolwarrant trust init' printed (or 'toolwarrant trust list' shows) (see 'toolwarrant audit verify --help')"},
		{"unknown server named once", []string{"diff", "weather", "get_forecast"}, 2,
			"toolwarrant: server \"weather\" is not in the catalog ('toolwarrant server list' shows those that are)"},
		{"unknown server, show", []string{"show", "weather", "get_forecast"}, 2,
			"toolwarrant: server \"weather\" is not in the catalog ('toolwarrant server list' shows those that are)"},
		{"unknown tool", []string{"show", "wx", "nope"}, 2,
			"toolwarrant: server \"wx\" has no tool \"nope\" ('toolwarrant list' shows the tools of every server)"},
		{"URL without a scheme", []string{"server", "add", "weather", "weather.example.com/mcp"}, 2,
			"toolwarrant: server \"weather\": URL \"weather.example.com/mcp\" has no scheme: write it as https://weather.example.com/mcp (or http:// for a server on this machine) (see 'toolwarrant server add --help')"},
		{"loopback without --allow-private", []string{"server", "add", "local", "http://127.0.0.1:9/mcp"}, 2,
			"toolwarrant: server \"local\": URL \"http://127.0.0.1:9/mcp\" points at 127.0.0.1, a loopback address: for a server on this machine or your intranet, add --allow-private (see 'toolwarrant server add --help')"},
		{"cloud metadata", []string{"server", "add", "md", "http://169.254.169.254/", "--allow-private"}, 2,
			"toolwarrant: server \"md\": URL \"http://169.254.169.254/\" points at 169.254.169.254, a cloud metadata address: cloud metadata addresses are always refused (see 'toolwarrant server add --help')"},
		{"a password in the URL is never printed", []string{"server", "add", "pw", "https://u:hunter2@x.example/mcp"}, 2,
			"toolwarrant: server \"pw\": URL \"https://u:xxxxx@x.example/mcp\" is refused: it holds userinfo: give credentials with --header-env, never in the URL (see 'toolwarrant server add --help')"},
		{"wrong argument count names the arguments", []string{"diff", "wx"}, 2,
			"toolwarrant: toolwarrant diff takes 2 arguments, SERVER TOOL; got 1: \"wx\" (see 'toolwarrant diff --help')"},
		{"unknown subcommand", []string{"server", "remove", "wx"}, 2,
			"toolwarrant: unknown command \"remove\" for \"toolwarrant server\" (see 'toolwarrant server --help')"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, dir, nil, tc.args...)
			if r.code != tc.code || r.stderr != tc.want+"\n" || r.stdout != "" {
				t.Errorf("exit %d\nstderr %q\nwant   %q\nstdout %q", r.code, r.stderr, tc.want+"\n", r.stdout)
			}
			if strings.Contains(r.stderr, "netguard") || strings.Contains(r.stderr, "hunter2") {
				t.Errorf("internal name or secret in %q", r.stderr)
			}
		})
	}

	// list --json: a tool without findings has "findings": [], never null.
	r := runCLI(t, dir, nil, "list", "--json")
	if r.code != 0 || strings.Contains(r.stdout, `"findings": null`) || !strings.Contains(r.stdout, `"findings": []`) {
		t.Errorf("list --json: %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "toolwarrant.db")); err != nil {
		t.Fatal(err)
	}
}
