package enforce

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and recapture testdata/everything-tools.json from a live server-everything")

// everythingFile holds the tools/list result of a live @modelcontextprotocol/server-everything
// (the version pinned in test/package.json), each tool object byte for byte as the server
// sent it, wrapped as the gateway's merged result: {"tools":[...]} plus the ttlMs and
// cacheScope members agentgateway stamps on it. TestCaptureEverything -update rewrites it.
const everythingFile = "testdata/everything-tools.json"

func TestCaptureEverything(t *testing.T) {
	if !*update {
		t.Skip("run with -update to recapture " + everythingFile + " from a live server-everything")
	}
	node := testenv.LookPath(t, "node")
	dir := testenv.NodeModule(t, "@modelcontextprotocol/server-everything")
	l, err := mcpclient.ListTools(t.Context(), mcpclient.Server{Name: "everything", Transport: mcpclient.TransportStdio,
		Command: node, Args: []string{filepath.Join(dir, "dist", "index.js"), "stdio"}}, mcpclient.Options{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i, tool := range l.Tools {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(tool.Raw)
	}
	b.WriteString(`],"ttlMs":0,"cacheScope":"private"}`)
	b.WriteByte('\n')
	if err := os.WriteFile(everythingFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d tools from server-everything %s", len(l.Tools), l.ServerVersion)
}
