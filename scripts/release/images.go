package main

import (
	"context"

	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/scripts/release/oci"
)

// imageTarget is one container image of a release: a Dockerfile that copies one released
// binary.
type imageTarget struct {
	name       string // archive base name and the binary it holds
	repo       string // image name, tagged with the version
	dockerfile string // inside the source tree
}

var imageTargets = []imageTarget{
	{name: "lockerd", repo: "agentgate/lockerd", dockerfile: "infra/lockerd/Dockerfile"},
	{name: "toolwarrant", repo: "agentgate/toolwarrant", dockerfile: "infra/extmcp/Dockerfile"},
}

// ImageArtifact is one container image of a release, written as an OCI archive.
type ImageArtifact struct {
	// Path is the archive, images/<name>_linux_<arch>.oci.tar.
	Path string `json:"path"`
	// SHA256 and Size are the archive file's.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Name is the reference the archive names (what `podman load` tags).
	Name     string `json:"name"`
	Platform string `json:"platform"`
	// ManifestDigest is what a registry knows the image by: pin it (NAME@sha256:…).
	ManifestDigest string `json:"manifest_digest"`
	// ConfigDigest is the image ID once loaded.
	ConfigDigest string `json:"config_digest"`
	// Binary is the release artifact the image holds, at Entrypoint.
	Binary     string `json:"binary"`
	Entrypoint string `json:"entrypoint"`
	Dockerfile string `json:"dockerfile"`
	// Base is the base image it was built on, and BaseDigest that image's manifest digest
	// as the builder's store knew it.
	Base       string `json:"base"`
	BaseDigest string `json:"base_digest,omitempty"`
}

// ImageBase is the base the release's images were built on.
type ImageBase struct {
	// Ref is the Dockerfiles' pinned default, another image reference, or "local" (infra/base).
	Ref string `json:"ref"`
	// CABundleSHA256 is, for the local base, the SHA-256 of the CA bundle it carries.
	CABundleSHA256 string `json:"ca_bundle_sha256,omitempty"`
}

// imageJob is what buildImages needs from the release build.
type imageJob struct {
	src, out, version string
	created           time.Time
	base              string // --image-base
	artifacts         []Artifact
}

// buildImages builds, for every image target whose binary was built for linux, its image per
// platform on a private podman store, and writes each as a reproducible OCI archive under
// out/images. Its Dockerfile must copy the release binary (commits from before the images
// did are skipped).
func buildImages(ctx context.Context, j imageJob, env cli.Env) ([]ImageArtifact, *ImageBase, string, error) {
	type todo struct {
		t     imageTarget
		arch  string
		built Artifact
	}
	var jobs []todo
	for _, t := range imageTargets {
		df, err := os.ReadFile(filepath.Join(j.src, t.dockerfile))
		if err != nil || !strings.Contains(string(df), "bin/"+t.name+"_linux_${TARGETARCH}") {
			fmt.Fprintf(env.Stderr, "release: %s does not copy the release binary in this commit; no %s image\n", t.dockerfile, t.name)
			continue
		}
		for _, a := range j.artifacts {
			if a.GOOS == "linux" && a.Path == fmt.Sprintf("bin/%s_linux_%s", t.name, a.GOARCH) {
				jobs = append(jobs, todo{t: t, arch: a.GOARCH, built: a})
			}
		}
	}
	if len(jobs) == 0 {
		return nil, nil, "", nil
	}
	store, err := os.MkdirTemp("", "agentgate-release-podman-")
	if err != nil {
		return nil, nil, "", err
	}
	p, err := oci.New(store)
	if err != nil {
		os.RemoveAll(store)
		return nil, nil, "", fmt.Errorf("%v; or build without images (--images=false, make release IMAGES=0)", err)
	}
	defer func() {
		// Use a fresh context: removing the store must happen even when ctx was cancelled.
		if err := p.Remove(context.Background()); err != nil {
			fmt.Fprintf(env.Stderr, "release: remove the podman store %s: %v\n", store, err)
		}
	}()
	version, err := p.Version(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	base := &ImageBase{Ref: j.base}
	if j.base == "" {
		if base.Ref, err = oci.DefaultBase(filepath.Join(j.src, jobs[0].t.dockerfile)); err != nil {
			return nil, nil, "", err
		}
	}
	if j.base == "local" {
		sum, _, err := fileSHA256(oci.CABundle)
		if err != nil {
			return nil, nil, "", fmt.Errorf("local base: %v (apt-get install -y ca-certificates)", err)
		}
		base.CABundleSHA256 = sum
	}
	if err := os.MkdirAll(filepath.Join(j.out, "images"), 0o755); err != nil {
		return nil, nil, "", err
	}
	localBases := map[string]string{}
	var out []ImageArtifact
	for _, job := range jobs {
		platform := "linux/" + job.arch
		b := oci.Build{Dockerfile: filepath.Join(j.src, job.t.dockerfile), Platform: platform, Created: j.created,
			Tag: job.t.repo + ":" + j.version, Args: map[string]string{}}
		baseRef := base.Ref
		switch j.base {
		case "":
			b.Pull = true // the Dockerfile's pinned default
		case "local":
			if localBases[platform] == "" {
				fmt.Fprintf(env.Stderr, "release: building the local base for %s\n", platform)
				if localBases[platform], err = p.BuildLocalBase(ctx, j.src, platform, j.created); err != nil {
					return nil, nil, "", err
				}
			}
			b.Args["BASE"], baseRef = localBases[platform], localBases[platform]
		default:
			b.Args["BASE"], b.Pull = j.base, true
		}
		// The context holds the one binary the Dockerfile copies, mode 0755 whatever the umask.
		if b.Context, err = os.MkdirTemp(store, "context-"); err != nil {
			return nil, nil, "", err
		}
		if err := copyFile(filepath.Join(j.out, job.built.Path), filepath.Join(b.Context, job.built.Path)); err != nil {
			return nil, nil, "", err
		}
		name := fmt.Sprintf("%s_linux_%s", job.t.name, job.arch)
		fmt.Fprintf(env.Stderr, "release: building image %s\n", name)
		if _, err := p.Build(ctx, b); err != nil {
			return nil, nil, "", fmt.Errorf("image %s: %w", name, err)
		}
		// The builder's own base annotation is not the base's digest (buildah 1.28): ask the store.
		baseDigest, _ := p.Run(ctx, "image", "inspect", "--format", "{{.Digest}}", baseRef)
		rel := "images/" + name + ".oci.tar"
		dst := filepath.Join(j.out, filepath.FromSlash(rel))
		if err := p.Save(ctx, b.Tag, dst, j.created); err != nil {
			return nil, nil, "", fmt.Errorf("image %s: %w", name, err)
		}
		img, err := oci.ReadArchive(dst)
		if err != nil {
			return nil, nil, "", err
		}
		entry := "/usr/local/bin/" + job.t.name
		if got := img.Files[entry].SHA256; got != job.built.SHA256 {
			return nil, nil, "", fmt.Errorf("image %s: %s has SHA-256 %q, the release binary %s", name, entry, got, job.built.SHA256)
		}
		sum, size, err := fileSHA256(dst)
		if err != nil {
			return nil, nil, "", err
		}
		out = append(out, ImageArtifact{Path: rel, SHA256: sum, Size: size, Name: img.Name, Platform: platform,
			ManifestDigest: img.ManifestDigest, ConfigDigest: img.ConfigDigest, Binary: job.built.Path, Entrypoint: entry,
			Dockerfile: job.t.dockerfile, Base: baseRef, BaseDigest: baseDigest})
	}
	return out, base, version, nil
}

// manifestImageLines are the MANIFEST lines of the images: "image  <manifest digest>  <archive>".
func manifestImageLines(imgs []ImageArtifact) string {
	var b strings.Builder
	for _, i := range imgs {
		fmt.Fprintf(&b, "image  %s  %s\n", i.ManifestDigest, i.Path)
	}
	return b.String()
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		return err
	}
	return os.Chmod(to, 0o755)
}

// checkImages verifies the images of a release: each archive whole (oci.ReadArchive), its
// digests as PROVENANCE.json records them, the release binary it must hold, and the MANIFEST
// lines naming them.
func checkImages(dir string, prov Provenance, listed map[string]string, manifest []byte) error {
	binaries := map[string]string{}
	for _, a := range prov.Artifacts {
		binaries[a.Path] = a.SHA256
	}
	var want []string
	for _, i := range prov.Images {
		if listed[i.Path] != i.SHA256 {
			return fail("%s: PROVENANCE.json and SHA256SUMS disagree", i.Path)
		}
		img, err := oci.ReadArchive(filepath.Join(dir, filepath.FromSlash(i.Path)))
		if err != nil {
			return fail("%v", err)
		}
		switch {
		case img.ManifestDigest != i.ManifestDigest:
			return fail("%s: manifest digest %s, PROVENANCE.json says %s", i.Path, img.ManifestDigest, i.ManifestDigest)
		case img.ConfigDigest != i.ConfigDigest:
			return fail("%s: config digest %s, PROVENANCE.json says %s", i.Path, img.ConfigDigest, i.ConfigDigest)
		case img.OS+"/"+img.Architecture != i.Platform:
			return fail("%s: platform %s/%s, PROVENANCE.json says %s", i.Path, img.OS, img.Architecture, i.Platform)
		case binaries[i.Binary] == "":
			return fail("%s: its binary %s is not a release artifact", i.Path, i.Binary)
		case img.Files[i.Entrypoint].SHA256 != binaries[i.Binary]:
			return fail("%s: %s is not the release binary %s", i.Path, i.Entrypoint, i.Binary)
		}
		want = append(want, fmt.Sprintf("image  %s  %s", i.ManifestDigest, i.Path))
	}
	var got []string
	for _, line := range strings.Split(string(manifest), "\n") {
		if strings.HasPrefix(line, "image  ") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		return fail("MANIFEST's image lines %q do not match PROVENANCE.json's images %q", got, want)
	}
	// Every archive in images/ is one the provenance describes.
	archives, _ := filepath.Glob(filepath.Join(dir, "images", "*"))
	if len(archives) != len(prov.Images) {
		return fail("images/ holds %d files, PROVENANCE.json describes %d images", len(archives), len(prov.Images))
	}
	return nil
}
