package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
)

type buildOptions struct {
	commit, out, key, repo string
	platforms, only        []string
	// images builds the container images as OCI archives; imageBase is their base: "" the
	// Dockerfiles' pinned default, "local" the local base (infra/base), else an image.
	images    bool
	imageBase string
}

// target is one released binary: a main package and the platforms it ships for.
type target struct {
	name      string // artifact base name
	pkg       string // package path inside the module
	tags      string
	platforms []string
}

var cliPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}
var lambdaPlatforms = []string{"linux/amd64", "linux/arm64"}

// targets lists what a release contains; main packages that do not exist in the exported
// commit are skipped (older commits have fewer binaries).
func targets(src string) []target {
	var ts []target
	for _, name := range []string{"agentgate", "toolwarrant", "lockerd", "lockermcp"} {
		ts = append(ts, target{name: name, pkg: "./cmd/" + name, platforms: cliPlatforms})
	}
	fns, _ := filepath.Glob(filepath.Join(src, "functions", "*", "main.go"))
	sort.Strings(fns)
	for _, f := range fns {
		fn := filepath.Base(filepath.Dir(f))
		ts = append(ts, target{name: "lambda-" + fn, pkg: "./functions/" + fn, tags: "lambda.norpc", platforms: lambdaPlatforms})
	}
	var present []target
	for _, t := range ts {
		if _, err := os.Stat(filepath.Join(src, t.pkg)); err == nil {
			present = append(present, t)
		}
	}
	return present
}

// Provenance is PROVENANCE.json.
type Provenance struct {
	SchemaVersion  int               `json:"schema_version"`
	SourceCommit   string            `json:"source_commit"`
	CommitTime     string            `json:"commit_time"`
	ManifestSHA256 string            `json:"manifest_sha256"`
	GoVersion      string            `json:"go_version"`
	BuildFlags     []string          `json:"build_flags"`
	BuildEnv       map[string]string `json:"build_env"`
	Artifacts      []Artifact        `json:"artifacts"`
	// PodmanVersion, ImageBase and Images describe the container images (none: omitted).
	PodmanVersion string          `json:"podman_version,omitempty"`
	ImageBase     *ImageBase      `json:"image_base,omitempty"`
	Images        []ImageArtifact `json:"images,omitempty"`
}

// Artifact is one built binary.
type Artifact struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	SBOM   string `json:"sbom"`
}

func git(ctx context.Context, repo string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func runBuild(ctx context.Context, o buildOptions, env cli.Env) error {
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(strings.TrimSpace(string(top)), out); err == nil && !strings.HasPrefix(rel, "..") {
		return fmt.Errorf("--out %s is inside the source tree; choose a directory outside it", out)
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty", out)
	}
	full, err := git(ctx, repo, "rev-parse", "--verify", o.commit+"^{commit}")
	if err != nil {
		return fmt.Errorf("%q names no commit in %s: tag the commit to release first (git tag %s), or name one that exists (COMMIT=HEAD, a branch or a hash) (%w)", o.commit, repo, o.commit, err)
	}
	commit := strings.TrimSpace(string(full))
	ctime, err := git(ctx, repo, "show", "-s", "--format=%cI", commit)
	if err != nil {
		return err
	}
	commitTime, err := time.Parse(time.RFC3339, strings.TrimSpace(string(ctime)))
	if err != nil {
		return fmt.Errorf("commit time: %w", err)
	}
	src := filepath.Join(out, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "release: exporting %s\n", commit)
	archive, err := git(ctx, repo, "archive", "--format=tar", commit)
	if err != nil {
		return err
	}
	manifest, err := extract(archive, src)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}

	gover, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return fmt.Errorf("go env GOVERSION: %w", err)
	}
	version := "0.0.0-" + commit[:12]
	if tag, err := git(ctx, repo, "describe", "--tags", "--exact-match", commit); err == nil {
		version = strings.TrimPrefix(strings.TrimSpace(string(tag)), "v")
	}
	ldflags := fmt.Sprintf("-s -w -buildid= -X github.com/agentgate-dev/agentgate/internal/version.Version=%s -X github.com/agentgate-dev/agentgate/internal/version.Commit=%s", version, commit)
	flags := []string{"-trimpath", "-buildvcs=false", "-ldflags=" + ldflags}
	prov := Provenance{SchemaVersion: 1, SourceCommit: commit, CommitTime: commitTime.UTC().Format(time.RFC3339),
		GoVersion:  strings.TrimSpace(string(gover)),
		BuildFlags: flags, BuildEnv: map[string]string{"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local"}}
	bin := filepath.Join(out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	want := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	ts := targets(src)
	n := 0
	for _, t := range ts {
		if !want(o.only, t.name) {
			continue
		}
		for _, p := range t.platforms {
			if !want(o.platforms, p) {
				continue
			}
			goos, goarch, _ := strings.Cut(p, "/")
			name := fmt.Sprintf("%s_%s_%s", t.name, goos, goarch)
			dst := filepath.Join(bin, name)
			args := append([]string{"build", "-o", dst}, flags...)
			if t.tags != "" {
				args = append(args, "-tags", t.tags)
			}
			args = append(args, t.pkg)
			n++
			fmt.Fprintf(env.Stderr, "release: building %s\n", name)
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
			if outb, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("build %s: %v\n%s", name, err, outb)
			}
			sum, size, err := fileSHA256(dst)
			if err != nil {
				return err
			}
			sbom, err := writeSBOM(dst, name, sum, commit, commitTime)
			if err != nil {
				return fmt.Errorf("sbom %s: %w", name, err)
			}
			prov.Artifacts = append(prov.Artifacts, Artifact{Path: "bin/" + name, SHA256: sum, Size: size, GOOS: goos, GOARCH: goarch, SBOM: "sbom/" + filepath.Base(sbom)})
		}
	}
	if n == 0 {
		return errors.New("nothing to build: --only/--platforms matched no release target")
	}
	if o.images {
		// The images are built at the commit's time: their digests depend on the commit only.
		imgs, base, podman, err := buildImages(ctx, imageJob{src: src, out: out, version: version, created: commitTime,
			base: o.imageBase, artifacts: prov.Artifacts}, env)
		if err != nil {
			return err
		}
		prov.Images, prov.ImageBase, prov.PodmanVersion = imgs, base, podman
		// MANIFEST ends with the images' digests, after the exported files.
		manifest = append(manifest, manifestImageLines(imgs)...)
	}
	if err := os.WriteFile(filepath.Join(out, "MANIFEST"), manifest, 0o644); err != nil {
		return err
	}
	manifestSum := sha256.Sum256(manifest)
	prov.ManifestSHA256 = hex.EncodeToString(manifestSum[:])
	pj, err := json.MarshalIndent(prov, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "PROVENANCE.json"), append(pj, '\n'), 0o644); err != nil {
		return err
	}
	sums, err := checksums(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), sums, 0o644); err != nil {
		return err
	}
	// The exported source stays out of the release directory's artifacts: it is described by
	// MANIFEST and can be re-exported from the commit.
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if o.key != "" {
		cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "sign", "-f", o.key, "-n", Namespace, filepath.Join(out, "SHA256SUMS"))
		if outb, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("sign SHA256SUMS: %v\n%s", err, outb)
		}
	}
	fmt.Fprintf(env.Stdout, "release %s: %d binaries and %d images in %s\n", commit, n, len(prov.Images), out)
	return nil
}

// extract unpacks a git archive tar into dir and returns the manifest: one line per regular
// file, "sha256  size  path", sorted by path.
func extract(archive []byte, dir string) ([]byte, error) {
	tr := tar.NewReader(bytes.NewReader(archive))
	var lines []string
	for i := 0; i < 1_000_000; i++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			if h.Typeflag == tar.TypeXGlobalHeader {
				continue
			}
			return nil, fmt.Errorf("archive entry %q escapes the export directory", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, data, os.FileMode(h.Mode)&0o755|0o600); err != nil {
				return nil, err
			}
			sum := sha256.Sum256(data)
			lines = append(lines, fmt.Sprintf("%s  %d  %s", hex.EncodeToString(sum[:]), len(data), h.Name))
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return nil, err
			}
			sum := sha256.Sum256([]byte(h.Linkname))
			lines = append(lines, fmt.Sprintf("%s  %d  %s -> %s", hex.EncodeToString(sum[:]), len(h.Linkname), h.Name, h.Linkname))
		case tar.TypeXGlobalHeader:
		default:
			return nil, fmt.Errorf("archive entry %q has unsupported type %c", h.Name, h.Typeflag)
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// checksums lists every file of the release (except SHA256SUMS and its signature) in
// sha256sum format, sorted by path.
func checksums(dir string) ([]byte, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "src" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "SHA256SUMS" || rel == "SHA256SUMS.sig" {
			return nil
		}
		sum, _, err := fileSHA256(path)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

var _ = runtime.GOOS
