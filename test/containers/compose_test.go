package containers_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestComposeLoopbackOnly brings infra/lockerd/docker-compose.yml up with podman-compose,
// unchanged but for the host port (LOCKER_HOST_PORT), and checks: the daemon answers on
// 127.0.0.1, as uid 65532 on a read-only root; a connection to any non-loopback address of
// this host on the same port is refused; `podman-compose down` stops the daemon with SIGTERM
// (exit 0, within podman-compose's 1 s grace) and removes its container.
func TestComposeLoopbackOnly(t *testing.T) {
	b := images(t)
	compose := testenv.LookPath(t, "podman-compose")
	project := fmt.Sprintf("agentgate%d", time.Now().UnixNano()%1e9)
	port := testenv.FreePort(t)
	file := filepath.Join(repoRoot(), "infra", "lockerd", "docker-compose.yml")
	pc := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, compose, append([]string{"--project-name", project, "--file", file}, args...)...)
		cmd.Env = append(b.p.Env(), "LOCKER_HOST_PORT="+strconv.Itoa(port))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ids := func() []string {
		return strings.Fields(b.podman(t, "ps", "--all", "--quiet", "--no-trunc", "--filter", "label=io.podman.compose.project="+project))
	}
	t.Cleanup(func() {
		// Whatever the test left: the project's containers by ID, then its network and volume
		// by name (podman-compose 1.0 does not remove networks on down).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, _ := b.p.Run(ctx, "ps", "--all", "--quiet", "--no-trunc", "--filter", "label=io.podman.compose.project="+project)
		for _, id := range strings.Fields(out) {
			b.remove(t, id)
		}
		for _, kind := range []struct{ what, name string }{{"network", project + "_default"}, {"volume", project + "_locker-data"}} {
			if b.p.Command(ctx, kind.what, "exists", kind.name).Run() != nil {
				continue
			}
			if _, err := b.p.Run(ctx, kind.what, "rm", "--force", kind.name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	start := time.Now()
	if out, err := pc("up", "--detach"); err != nil {
		t.Fatalf("podman-compose up: %v\n%s", err, out)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitHTTP(t, base+"/health", 60*time.Second)
	took := time.Since(start)
	running := ids()
	if len(running) != 1 {
		t.Fatalf("project %s has containers %v, want one", project, running)
	}
	id := running[0]
	pid := b.pid(t, id)
	if uid, _ := processUser(t, pid); uid != "65532" {
		t.Errorf("the daemon runs as uid %s, want 65532", uid)
	}
	if !rootReadOnly(t, pid) {
		t.Error("the compose service's root file system is writable")
	}
	if got, want := b.podman(t, "port", id), "8000/tcp -> 127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("published ports %q, want only %q", got, want)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		target := net.JoinHostPort(ipn.IP.String(), strconv.Itoa(port))
		conn, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err == nil {
			conn.Close()
			t.Errorf("%s accepted a connection: the port is published beyond loopback", target)
			continue
		}
		refused++
		t.Logf("%s: %v", target, err)
	}
	if refused == 0 {
		t.Log("this host has no non-loopback address: the refusal could not be checked")
	}

	downStart := time.Now()
	if out, err := pc("down"); err != nil {
		t.Fatalf("podman-compose down: %v\n%s", err, out)
	}
	downTook := time.Since(downStart)
	if left := ids(); len(left) != 0 {
		t.Errorf("containers left after down: %v", left)
	}
	// The daemon's exit, from podman's event log: 0 means it shut down on SIGTERM by itself
	// (a kill after the grace period would be 137).
	exit := b.podman(t, "events", "--stream=false", "--filter", "container="+id, "--filter", "event=died", "--format", "{{.ContainerExitCode}}")
	if exit != "0" {
		t.Errorf("lockerd's exit code on podman-compose down: %q, want 0", exit)
	}
	if _, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
		t.Error("the port still accepts connections after down")
	}
	t.Logf("figures: podman-compose up to first healthy /health %s; down %s", took.Round(time.Millisecond), downTook.Round(time.Millisecond))
}
