// Package infra_test checks the container files without a Docker engine (none runs on the
// CI machines): the published port binds loopback only, the image runs as a non-root user,
// and every base image is pinned by digest.
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

func TestDockerfile(t *testing.T) {
	var froms, users []string
	for _, line := range strings.Split(read(t, "infra/lockerd/Dockerfile"), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms = append(froms, f[1])
		case "USER":
			users = append(users, f[1])
		}
	}
	if len(froms) == 0 {
		t.Fatal("no FROM line")
	}
	for _, img := range froms {
		if !pinned.MatchString(img) {
			t.Errorf("base image %q is not pinned by digest", img)
		}
	}
	if len(users) == 0 {
		t.Fatal("no USER line: the image would run as root")
	}
	if last := users[len(users)-1]; last == "0" || strings.HasPrefix(last, "root") || strings.HasPrefix(last, "0:") {
		t.Errorf("final USER is %q, want a non-root user", last)
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
