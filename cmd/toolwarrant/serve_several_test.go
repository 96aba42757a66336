package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/test/extmcp/standin"
)

// TestServeAndEmitCoverEveryServer: with two servers in the catalog, 'emit' routes both to
// one processor, and 'serve' without --server serves both, so neither route is denied for
// want of a processor; 'serve --server' with a name the catalog does not hold is a usage
// error at start, not a warning followed by a processor that denies everything.
func TestServeAndEmitCoverEveryServer(t *testing.T) {
	dir := t.TempDir()
	twOK(t, dir, "init")
	for _, name := range []string{"wx", "wx2"} {
		upstream := httptest.NewServer(fixture.New(twForecast))
		t.Cleanup(upstream.Close)
		twOK(t, dir, "server", "add", name, upstream.URL+"/mcp", "--allow-private")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	approver := crawlAndTrust(ctx, t, dir)
	for _, name := range []string{"wx", "wx2"} {
		r := twOK(t, dir, "approve", name, "get_forecast", "--hash", twDigest(t, twForecast), "--sign-key", approver, "--json")
		if !strings.Contains(r.stdout, `"decision": "approved"`) || !strings.Contains(r.stdout, `"auditHead": {`) {
			t.Errorf("approve --json: %s", r)
		}
	}

	procAddr := freeAddr(t)
	gwFile := filepath.Join(dir, "gateway.yaml")
	r := twOK(t, dir, "emit", "--processor", procAddr, "--out", gwFile, "--json")
	if want := `"servers": [
    "wx",
    "wx2"
  ]`; !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, `"allowedTools": 2`) {
		t.Errorf("emit --json: %s", r)
	}
	config, err := os.ReadFile(gwFile)
	if err != nil {
		t.Fatal(err)
	}

	// serve with no --server: every catalog server, the routes emit wrote.
	_, stop := startServeAt(t, dir, procAddr, "--refresh", "100ms", "--staleness", "5s")
	gw := httptest.NewServer(standin.New(t, config))
	defer gw.Close()
	for _, name := range []string{"wx", "wx2"} {
		cs := connect(t, gw.URL+"/"+name+"/mcp")
		if names := listNames(t, cs); strings.Join(names, ",") != "get_forecast" {
			t.Errorf("through the gateway's %s route: %v", name, names)
		}
	}
	if r := stop(); r.code != 0 || !strings.Contains(r.stderr, "serving ExtMcp for wx, wx2 on "+procAddr) {
		t.Errorf("serve: %s", r)
	}

	// A name the catalog does not hold: refused at once (bounded, in case it serves).
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r = tw(ctx, dir, "serve", "--server", "nosuch", "--listen", freeAddr(t))
	if want := `toolwarrant: --server "nosuch" is not in the catalog (servers: wx, wx2): serving it would deny every call (see 'toolwarrant serve --help')` + "\n"; r.code != 2 || r.stderr != want {
		t.Errorf("serve --server nosuch: %s\nwant stderr %q", r, want)
	}
	if r := tw(t.Context(), dir, "emit", "--json"); r.code != 2 || !strings.Contains(r.stderr, "--json needs --out FILE") {
		t.Errorf("emit --json without --out: %s", r)
	}
}
