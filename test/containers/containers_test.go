// Package containers_test builds the lockerd and ExtMcp (toolwarrant) images from
// infra/*/Dockerfile, unchanged, on the local base (infra/base: no registry is reachable in
// CI), and runs them under podman: lockerd as uid 65532 on a read-only root with a /data
// volume, across a stop and start; the processor against a read-only SQLite catalog and
// against the DynamoDB catalog on moto, with the gateway stand-in's checks through it; and
// infra/lockerd/docker-compose.yml under podman-compose, published on loopback only; and an
// image archive pushed with skopeo to a registry on loopback and pulled by its digest.
//
// Everything runs in one private podman store (scripts/release/oci) in a temporary
// directory, removed when the tests end; each test stops and removes the containers and
// volumes it made, by ID or name, also when it fails. The tests skip with a reason where
// podman is missing, and fail instead under AGENTGATE_REQUIRE_EXTERNAL=1 (.ci/run). They
// log the figures: image sizes and the time from `podman run` to the first healthy answer.
package containers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/scripts/release/oci"
)

// Image names: the compose file names agentgate/lockerd (tag latest).
const (
	lockerdImage   = "localhost/agentgate/lockerd:latest"
	processorImage = "localhost/agentgate/toolwarrant:latest"
)

// built is what setup made once for the package.
type built struct {
	p        *oci.Podman
	arch     string
	binaries map[string]string // name → SHA-256 of the binary in the image
	images   map[string]*oci.Image
	archives map[string]string // name → the image saved as a release saves it (OCI archive)
	err      error
}

var (
	setupOnce sync.Once
	shared    built
	storeDir  string
)

func TestMain(m *testing.M) {
	code := awstest.Main(m)
	if shared.p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := shared.p.Remove(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "containers: remove the podman store: %v\n", err)
			code = 1
		}
		cancel()
	}
	if storeDir != "" {
		if err := os.RemoveAll(storeDir); err != nil {
			fmt.Fprintf(os.Stderr, "containers: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// images builds the binaries (linux, this machine's architecture, static, without build ID,
// as the release builds them) and both images on the local base, once per test binary.
func images(t *testing.T) *built {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs container images")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		testenv.Missing(t, testenv.External, "podman is not on PATH (apt-get install -y podman runc podman-compose)")
	}
	setupOnce.Do(func() { shared.err = setup(&shared) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return &shared
}

func setup(b *built) error {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var err error
	if storeDir, err = os.MkdirTemp("", "agentgate-containers-"); err != nil {
		return err
	}
	if b.p, err = oci.New(filepath.Join(storeDir, "podman")); err != nil {
		return err
	}
	root := repoRoot()
	b.arch = runtime.GOARCH
	bctx := filepath.Join(storeDir, "context")
	start := time.Now()
	// -trimpath is left out so that the packages the tests already compiled are reused;
	// scripts/release's test builds the image from a real release build.
	cmd := exec.CommandContext(ctx, goTool(), "build", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", filepath.Join(bctx, "bin")+"/",
		"./cmd/lockerd", "./cmd/toolwarrant")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+b.arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	b.binaries = map[string]string{}
	for _, name := range []string{"lockerd", "toolwarrant"} {
		from := filepath.Join(bctx, "bin", name)
		to := filepath.Join(bctx, "bin", name+"_linux_"+b.arch)
		if err := os.Rename(from, to); err != nil {
			return err
		}
		data, err := os.ReadFile(to)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		b.binaries[name] = hex.EncodeToString(sum[:])
	}
	compiled := time.Since(start)
	start = time.Now()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	platform := "linux/" + b.arch
	base, err := b.p.BuildLocalBase(ctx, root, platform, created)
	if err != nil {
		return err
	}
	b.images, b.archives = map[string]*oci.Image{}, map[string]string{}
	for _, img := range []struct{ tag, dockerfile, name string }{
		{lockerdImage, "infra/lockerd/Dockerfile", "lockerd"},
		{processorImage, "infra/extmcp/Dockerfile", "toolwarrant"},
	} {
		if _, err := b.p.Build(ctx, oci.Build{Dockerfile: filepath.Join(root, img.dockerfile), Context: bctx, Platform: platform,
			Tag: img.tag, Args: map[string]string{"BASE": base}, Created: created}); err != nil {
			return err
		}
		archive := filepath.Join(storeDir, img.name+".oci.tar")
		if err := b.p.Save(ctx, img.tag, archive, created); err != nil {
			return err
		}
		if b.images[img.name], err = oci.ReadArchive(archive); err != nil {
			return err
		}
		b.archives[img.name] = archive
	}
	fmt.Fprintf(os.Stderr, "containers: binaries compiled in %s; base and both images built and saved in %s\n",
		compiled.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	return nil
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// podman runs podman on the private store and fails the test on an error.
func (b *built) podman(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := b.p.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run starts a detached container (`podman run -d args...`) and returns its ID. When the
// test ends the container is removed by ID, after its log is printed if the test failed.
func (b *built) run(t *testing.T, args ...string) string {
	t.Helper()
	id := b.podman(t, append([]string{"run", "--detach"}, args...)...)
	t.Cleanup(func() { b.remove(t, id) })
	return id
}

// remove removes container id (stopping it first, 5 s grace), printing its log when the test
// failed.
func (b *built) remove(t *testing.T, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if t.Failed() {
		if logs, err := b.p.Command(ctx, "logs", id).CombinedOutput(); err == nil {
			t.Logf("log of container %.12s:\n%s", id, logs)
		}
	}
	if _, err := b.p.Run(ctx, "rm", "--force", "--time", "5", id); err != nil {
		t.Errorf("remove container %.12s: %v", id, err)
	}
}

// volume creates a named volume, removed by name when the test ends.
func (b *built) volume(t *testing.T, name string) string {
	t.Helper()
	b.podman(t, "volume", "create", name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := b.p.Run(ctx, "volume", "rm", "--force", name); err != nil {
			t.Errorf("remove volume %s: %v", name, err)
		}
	})
	return name
}

// pid returns the host PID of a running container's main process.
func (b *built) pid(t *testing.T, id string) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscan(b.podman(t, "inspect", "--format", "{{.State.Pid}}", id), &pid); err != nil || pid <= 0 {
		t.Fatalf("container %.12s has no PID: %v", id, err)
	}
	return pid
}

// imageSize returns the image's size in the store (uncompressed, as `podman images` shows).
func (b *built) imageSize(t *testing.T, ref string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(b.podman(t, "image", "inspect", "--format", "{{.Size}}", ref), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitHTTP polls url every 20 ms until it answers 200 or limit passes, and returns the
// body of the first 200.
func waitHTTP(t *testing.T, url string, limit time.Duration) string {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for {
		resp, err := c.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %s (last error: %v)", url, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processUser returns the real user and group IDs of a host process (/proc/PID/status).
func processUser(t *testing.T, pid int) (uid, gid string) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Uid:" {
			uid = f[1]
		}
		if len(f) >= 2 && f[0] == "Gid:" {
			gid = f[1]
		}
	}
	return uid, gid
}

// rootReadOnly reports whether the process's root file system is mounted read-only
// (/proc/PID/mountinfo: the mount point "/" and its options).
func rootReadOnly(t *testing.T, pid int) bool {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			for _, o := range strings.Split(f[5], ",") {
				if o == "ro" {
					return true
				}
			}
			return false
		}
	}
	t.Fatalf("no root mount in /proc/%d/mountinfo", pid)
	return false
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
