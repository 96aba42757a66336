package pb

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// protocVersionLine is the one line of generated output that names the protoc release; it
// is ignored so that a different Debian protoc does not count as stale.
var protocVersionLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*\n|^// - protoc +v.*\n`)

// TestGeneratedCodeIsCurrent regenerates the bindings into a temporary directory and
// compares them with the committed files. The generated code is committed, so a build needs
// no protoc; locally the test skips, naming what is missing, when protoc or a pinned plugin
// is not installed (`make generate` installs the plugins into bin/tools). CI installs them
// (.ci/run), and under AGENTGATE_REQUIRE_EXTERNAL=1 a missing one fails the test.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	root := testenv.RepoRoot(t)
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		testenv.Missing(t, testenv.External, "protoc is not on PATH (apt-get install protobuf-compiler); cannot check the committed bindings")
	}
	tools := filepath.Join(root, "bin", "tools")
	var plugins []string
	// The versions the Makefile pins; another version generates other bytes, which says
	// nothing about whether the committed code matches the .proto.
	pinned := map[string]string{"protoc-gen-go": "protoc-gen-go v1.36.12", "protoc-gen-go-grpc": "protoc-gen-go-grpc 1.5.1"}
	for _, name := range []string{"protoc-gen-go", "protoc-gen-go-grpc"} {
		p := filepath.Join(tools, name)
		if _, err := os.Stat(p); err != nil {
			if p, err = exec.LookPath(name); err != nil {
				testenv.Missing(t, testenv.External, name+" is not in bin/tools or on PATH (run make generate); cannot check the committed bindings")
			}
		}
		out, err := exec.Command(p, "--version").Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != pinned[name] {
			testenv.Missing(t, testenv.External, fmt.Sprintf("%s is %q, not the pinned %q (run make generate); cannot check the committed bindings", p, got, pinned[name]))
		}
		plugins = append(plugins, "--plugin="+name+"="+p)
	}
	out := t.TempDir()
	const mod = "module=github.com/agentgate-dev/agentgate/internal/extmcp/pb"
	args := append(plugins, "-I", filepath.Join(root, "proto"),
		"--go_out="+out, "--go_opt="+mod, "--go-grpc_out="+out, "--go-grpc_opt="+mod,
		"agentgateway/ext_mcp.proto")
	cmd := exec.Command(protoc, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	for _, f := range []string{"ext_mcp.pb.go", "ext_mcp_grpc.pb.go"} {
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(protocVersionLine.ReplaceAll(got, nil), protocVersionLine.ReplaceAll(want, nil)) {
			t.Errorf("%s is stale: run make generate and commit the result", f)
		}
	}
}
