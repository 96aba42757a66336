// Package infra_test checks the container files statically: the published port binds
// loopback only, each image runs as a non-root user, copies the release-built binary (the
// image build compiles nothing), and its default base is pinned by digest. test/containers
// builds and runs the images under podman.
package infra_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var pinned = regexp.MustCompile(`^\S+@sha256:[0-9a-f]{64}$`)

// TestDockerfiles: each image's Dockerfile builds FROM the BASE build argument, whose
// default is distroless static pinned by digest; copies exactly the release binary
// bin/<name>_linux_${TARGETARCH}; runs no command (no RUN: nothing is compiled or installed
// in the image build, so it needs no shell and no registry but the base's); and ends as a
// non-root user.
func TestDockerfiles(t *testing.T) {
	tests := []struct{ dockerfile, binary string }{
		{"infra/lockerd/Dockerfile", "lockerd"},
		{"infra/extmcp/Dockerfile", "toolwarrant"},
	}
	for _, tc := range tests {
		t.Run(tc.dockerfile, func(t *testing.T) {
			var froms, users, copies []string
			args := map[string]string{}
			for _, line := range strings.Split(read(t, tc.dockerfile), "\n") {
				f := strings.Fields(line)
				if len(f) < 2 {
					continue
				}
				switch strings.ToUpper(f[0]) {
				case "ARG":
					k, v, _ := strings.Cut(f[1], "=")
					args[k] = v
				case "FROM":
					froms = append(froms, f[1])
				case "USER":
					users = append(users, f[1])
				case "COPY":
					copies = append(copies, strings.Join(f[1:], " "))
				case "RUN", "ADD":
					t.Errorf("%s: the image build must only copy the release binary", line)
				}
			}
			if len(froms) != 1 || froms[0] != "${BASE}" {
				t.Fatalf("FROM %v, want one stage FROM ${BASE}", froms)
			}
			if base := args["BASE"]; !pinned.MatchString(base) || !strings.HasPrefix(base, "gcr.io/distroless/static-debian12:nonroot@") {
				t.Errorf("ARG BASE default %q: want distroless static (nonroot) pinned by digest", base)
			}
			want := "--chmod=0755 bin/" + tc.binary + "_linux_${TARGETARCH} /usr/local/bin/" + tc.binary
			if len(copies) != 1 || copies[0] != want {
				t.Errorf("COPY %q, want exactly %q", copies, want)
			}
			if len(users) == 0 {
				t.Fatal("no USER line: the image would run as root")
			}
			if last := users[len(users)-1]; last != "65532:65532" {
				t.Errorf("final USER is %q, want 65532:65532 (distroless nonroot)", last)
			}
		})
	}
}

func TestComposePublishesLoopbackOnly(t *testing.T) {
	var doc struct {
		Services map[string]struct {
			User  string   `yaml:"user"`
			Ports []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "infra/lockerd/docker-compose.yml")), &doc); err != nil {
		t.Fatal(err)
	}
	svc, ok := doc.Services["lockerd"]
	if !ok {
		t.Fatal("no lockerd service")
	}
	if len(svc.Ports) == 0 {
		t.Fatal("lockerd publishes no port")
	}
	for _, p := range svc.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q is not bound to 127.0.0.1: a proxy in front could be bypassed", p)
		}
	}
	if svc.User == "" || svc.User == "0" || strings.HasPrefix(svc.User, "root") {
		t.Errorf("compose user = %q, want non-root", svc.User)
	}
}
