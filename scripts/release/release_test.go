package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Run(t.Context(), newRoot(cli.Env{Stdout: &out, Stderr: &out, Getenv: os.Getenv}), args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv})
	return code, out.String()
}

// TestReleaseIsReproducibleAndVerifiable builds the same commit twice, each with its own empty
// build cache and its own podman store (so nothing is reused between the two), and requires
// byte-identical artifacts, the lockerd image's OCI archive among them (on the local base: no
// registry is reachable in CI); then verify must pass, and fail on a one-byte change anywhere.
// Without podman the images are left out and their part skips (fails under
// AGENTGATE_REQUIRE_EXTERNAL=1).
func TestReleaseIsReproducibleAndVerifiable(t *testing.T) {
	if testing.Short() {
		t.Skip("two cold release builds")
	}
	testenv.LookPath(t, "git")
	testenv.LookPath(t, "ssh-keygen")
	root := testenv.RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		testenv.Missing(t, testenv.External, "not a git checkout: "+root)
	}
	tmp := t.TempDir()
	key := filepath.Join(tmp, "release_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "release@test", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(tmp, "allowed_signers")
	if err := os.WriteFile(signers, []byte("release@test "+string(pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, podmanErr := exec.LookPath("podman")
	images := podmanErr == nil
	build := func(name string) string {
		out := filepath.Join(tmp, name)
		t.Setenv("GOCACHE", filepath.Join(tmp, "gocache-"+name))
		start := time.Now()
		code, log := runCLI(t, "build", "--repo", root, "--commit", "HEAD", "--out", out, "--key", key,
			"--platforms", "linux/amd64", "--only", "lockerd,agentgate", "--images="+strconv.FormatBool(images), "--image-base", "local")
		if code != 0 {
			t.Fatalf("release build %s: exit %d\n%s", name, code, log)
		}
		t.Logf("release build %s (cold Go cache, images %v): %s", name, images, time.Since(start).Round(time.Second))
		return out
	}
	a, b := build("a"), build("b")
	t.Run("images", func(t *testing.T) {
		if !images {
			testenv.Missing(t, testenv.External, "podman is not on PATH: the release's images were not built")
		}
		var pa, pb Provenance
		for dir, p := range map[string]*Provenance{a: &pa, b: &pb} {
			data, err := os.ReadFile(filepath.Join(dir, "PROVENANCE.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, p); err != nil {
				t.Fatal(err)
			}
		}
		if len(pa.Images) != 1 || pa.Images[0].Path != "images/lockerd_linux_amd64.oci.tar" || pa.ImageBase == nil || pa.ImageBase.Ref != "local" {
			t.Fatalf("images %+v on base %+v, want the lockerd image for linux/amd64 on the local base", pa.Images, pa.ImageBase)
		}
		if pa.Images[0].ManifestDigest != pb.Images[0].ManifestDigest || pa.Images[0].ManifestDigest == "" {
			t.Errorf("image digests of two builds: %s and %s", pa.Images[0].ManifestDigest, pb.Images[0].ManifestDigest)
		}
		t.Logf("lockerd image %s: %d bytes, manifest %s", pa.Images[0].Name, pa.Images[0].Size, pa.Images[0].ManifestDigest)
	})
	var files []string
	filepath.WalkDir(a, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(a, path)
			files = append(files, rel)
		}
		return err
	})
	if len(files) < 7 || (images && len(files) < 8) {
		t.Fatalf("release has only %v", files)
	}
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds of the same commit", f)
		}
	}

	verify := func() (int, string) {
		return runCLI(t, "verify", "--dir", a, "--allowed-signers", signers, "--identity", "release@test")
	}
	if code, out := verify(); code != 0 {
		t.Fatalf("verify of a fresh release: exit %d\n%s", code, out)
	}
	changed := []string{"bin/lockerd_linux_amd64", "sbom/agentgate_linux_amd64.spdx.json", "MANIFEST", "PROVENANCE.json", "SHA256SUMS"}
	if images {
		changed = append(changed, "images/lockerd_linux_amd64.oci.tar")
	}
	for _, f := range changed {
		t.Run("one byte changed in "+f, func(t *testing.T) {
			path := filepath.Join(a, f)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			changed := bytes.Clone(orig)
			changed[len(changed)/2] ^= 0x01
			if err := os.WriteFile(path, changed, 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, orig, 0o644)
			code, out := verify()
			if code != 1 {
				t.Errorf("verify after changing %s: exit %d, want 1\n%s", f, code, out)
			}
		})
	}
	if images {
		// An unsigned release whose sums were recomputed after the change: the archive's own
		// digests still catch it.
		t.Run("one byte changed in an image, sums recomputed", func(t *testing.T) {
			names := []string{"images/lockerd_linux_amd64.oci.tar", "PROVENANCE.json", "SHA256SUMS"}
			saved := map[string][]byte{}
			for _, n := range names {
				saved[n], _ = os.ReadFile(filepath.Join(a, n))
			}
			defer func() {
				for n, data := range saved {
					os.WriteFile(filepath.Join(a, n), data, 0o644)
				}
			}()
			archive := bytes.Clone(saved[names[0]])
			archive[len(archive)/2] ^= 0x01
			os.WriteFile(filepath.Join(a, names[0]), archive, 0o644)
			var prov Provenance
			json.Unmarshal(saved["PROVENANCE.json"], &prov)
			prov.Images[0].SHA256, _, _ = fileSHA256(filepath.Join(a, names[0]))
			pj, _ := json.MarshalIndent(prov, "", "  ")
			os.WriteFile(filepath.Join(a, "PROVENANCE.json"), append(pj, '\n'), 0o644)
			sums, err := checksums(a)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(a, "SHA256SUMS"), sums, 0o644)
			code, out := runCLI(t, "verify", "--dir", a, "--unsigned")
			if code != 1 || !strings.Contains(out, "has SHA-256") {
				t.Errorf("verify of an unsigned release with a changed image and recomputed sums: exit %d, want 1 naming the blob\n%s", code, out)
			}
		})
	}
	if code, out := verify(); code != 0 {
		t.Errorf("verify after restoring: exit %d\n%s", code, out)
	}
}

func TestBuildRefusesOutputInsideTree(t *testing.T) {
	testenv.LookPath(t, "git")
	root := testenv.RepoRoot(t)
	code, out := runCLI(t, "build", "--repo", root, "--out", filepath.Join(root, "dist-test"))
	if code != 2 || !strings.Contains(out, "inside the source tree") {
		t.Errorf("build into the tree: exit %d\n%s", code, out)
	}
}

// TestVerifyNeverClaimsAnUncheckedSignature: verify without the signer's file refuses to run
// (exit 2, saying what to give) unless told --unsigned, and a signer's file against a release
// that has no signature fails (exit 1) instead of passing (issue 20: it printed that the
// signature was not checked, then "verified" with exit 0).
func TestVerifyNeverClaimsAnUncheckedSignature(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(signers, []byte("release@test ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no signer and no --unsigned", []string{"verify", "--dir", dir}, 2, "no --allowed-signers"},
		{"both", []string{"verify", "--dir", dir, "--unsigned", "--allowed-signers", signers, "--identity", "release@test"}, 2, "contradict"},
		{"no identity", []string{"verify", "--dir", dir, "--allowed-signers", signers}, 2, "--identity is required"},
		{"unsigned release", []string{"verify", "--dir", dir, "--allowed-signers", signers, "--identity", "release@test"}, 1, "SHA256SUMS.sig is missing"},
	} {
		code, out := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out, c.want) || strings.Contains(out, "verified") {
			t.Errorf("%s: exit %d, want %d saying %q and never \"verified\"\n%s", c.name, code, c.code, c.want, out)
		}
	}
}

// TestBuildNamesAMissingTag: make release COMMIT=v0.1.0 on a clone without that tag says how
// to make one, exit 2.
func TestBuildNamesAMissingTag(t *testing.T) {
	testenv.LookPath(t, "git")
	root := testenv.RepoRoot(t)
	code, out := runCLI(t, "build", "--repo", root, "--commit", "v0.0.0-no-such-tag", "--out", t.TempDir())
	if code != 2 || !strings.Contains(out, "git tag v0.0.0-no-such-tag") {
		t.Errorf("build of a missing tag: exit %d, want 2 saying how to tag\n%s", code, out)
	}
}
