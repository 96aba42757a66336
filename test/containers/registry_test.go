package containers_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/scripts/release/oci"
)

// TestArchivePushPinnedByDigest follows infra/ecs/README.md on a registry of our own
// (Debian's docker-registry on loopback): `skopeo copy --preserve-digests` pushes an image
// archive as a release writes it, the registry knows the image by the archive's manifest
// digest (the one MANIFEST and PROVENANCE.json record), and `podman pull NAME@DIGEST` gets
// exactly that image; `podman load` of the archive gives the same digest.
func TestArchivePushPinnedByDigest(t *testing.T) {
	b := images(t)
	skopeo := testenv.LookPath(t, "skopeo")
	registry := testenv.LookPath(t, "docker-registry")
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := exec.Command(registry, "serve", filepath.Join(dir, "config.yml"))
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	pid := reg.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = reg.Wait()
	})
	waitHTTP(t, "http://"+addr+"/v2/", 30*time.Second)

	img := b.images["lockerd"]
	start := time.Now()
	out, err := exec.CommandContext(t.Context(), skopeo, "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false",
		"oci-archive:"+b.archives["lockerd"], "docker://"+addr+"/agentgate/lockerd:test").CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo copy: %v\n%s", err, out)
	}
	pushed := time.Since(start)
	// A fresh store, as on the machine that deploys: pull by the digest, and load the archive.
	fresh, err := oci.New(filepath.Join(dir, "podman"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := fresh.Remove(ctx); err != nil {
			t.Errorf("remove the second store: %v", err)
		}
	})
	run := func(args ...string) string {
		t.Helper()
		out, err := fresh.Run(t.Context(), args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ref := addr + "/agentgate/lockerd@" + img.ManifestDigest
	run("pull", "--quiet", "--tls-verify=false", ref)
	if got := run("image", "inspect", "--format", "{{.Digest}} sha256:{{.Id}}", ref); got != img.ManifestDigest+" "+img.ConfigDigest {
		t.Errorf("pulled by digest: %s, want manifest %s and image ID %s", got, img.ManifestDigest, img.ConfigDigest)
	}
	run("rmi", ref)
	loaded := run("load", "--quiet", "--input", b.archives["lockerd"])
	if got := run("image", "inspect", "--format", "{{.Digest}}", img.Name); got != img.ManifestDigest {
		t.Errorf("podman load (%s): digest %s, want the archive's %s", loaded, got, img.ManifestDigest)
	}
	t.Logf("figures: skopeo copy of the lockerd archive (%s of layers) to a loopback registry %s", mib(img.LayerBytes), pushed.Round(time.Millisecond))
}
