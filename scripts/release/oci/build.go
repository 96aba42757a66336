package oci

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Build is one `podman build`.
type Build struct {
	// Dockerfile is the Dockerfile's path. Required.
	Dockerfile string
	// Context is the build context directory. Required.
	Context string
	// Platform is the target, "linux/amd64" or "linux/arm64"; it also sets TARGETARCH.
	// Default: the machine's.
	Platform string
	// Tag names the image. Default: untagged.
	Tag string
	// Args are --build-arg values (BASE, the runtime base).
	Args map[string]string
	// Created is the image's creation time and every copied file's modification time
	// (--timestamp): with it fixed, the same inputs give the same image digest. Required.
	Created time.Time
	// Pull lets podman pull a base image it does not have. Default false: the base must
	// already be in the store (the local base), and nothing is fetched.
	Pull bool
}

// Build builds b and returns the image ID (its config digest, "sha256:…"). The layer cache
// is not used: a cached layer of another platform would otherwise be reused.
func (p *Podman) Build(ctx context.Context, b Build) (string, error) {
	if b.Dockerfile == "" || b.Context == "" || b.Created.IsZero() {
		return "", errors.New("oci: Build needs Dockerfile, Context and Created")
	}
	iid, err := os.CreateTemp(p.dir, "iid-")
	if err != nil {
		return "", err
	}
	iid.Close()
	defer os.Remove(iid.Name())
	pull := "never"
	if b.Pull {
		pull = "missing"
	}
	args := []string{"build", "--quiet", "--no-cache", "--pull=" + pull, "--file", b.Dockerfile,
		"--timestamp", strconv.FormatInt(b.Created.Unix(), 10), "--iidfile", iid.Name()}
	if b.Platform != "" {
		args = append(args, "--platform", b.Platform)
	}
	if b.Tag != "" {
		args = append(args, "--tag", b.Tag)
	}
	keys := make([]string, 0, len(b.Args))
	for k := range b.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--build-arg", k+"="+b.Args[k])
	}
	if _, err := p.Run(ctx, append(args, b.Context)...); err != nil {
		return "", err
	}
	id, err := os.ReadFile(iid.Name())
	if err != nil {
		return "", fmt.Errorf("podman build wrote no image ID: %w", err)
	}
	return strings.TrimSpace(string(id)), nil
}

// CABundle is where Debian's ca-certificates package puts the CA bundle that the local base
// carries (distroless carries the same file at the same path).
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// LocalBaseName is the name (without the architecture tag) of the local base image.
const LocalBaseName = "localhost/agentgate/base"

// BuildLocalBase builds the local stand-in for distroless static (nonroot) for platform
// from infra/base in the source tree src (its Dockerfile, passwd and group: uid/gid 65532)
// and this machine's CA bundle (Debian's ca-certificates), and returns its reference,
// LocalBaseName:local-<arch>. Machines that cannot pull from a registry build on it.
func (p *Podman) BuildLocalBase(ctx context.Context, src, platform string, created time.Time) (string, error) {
	ctxDir, err := os.MkdirTemp(p.dir, "base-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(ctxDir)
	// The context is the base's root file system; modes are set explicitly because they are
	// part of the layer, and the umask must not change the digest.
	files := map[string]string{
		filepath.Join(src, "infra", "base", "passwd"): "etc/passwd",
		filepath.Join(src, "infra", "base", "group"):  "etc/group",
		CABundle: "etc/ssl/certs/ca-certificates.crt",
	}
	for from, to := range files {
		data, err := os.ReadFile(from)
		if err != nil {
			if from == CABundle {
				return "", fmt.Errorf("local base: %v (apt-get install -y ca-certificates)", err)
			}
			return "", fmt.Errorf("local base: %w", err)
		}
		dst := filepath.Join(ctxDir, filepath.FromSlash(to))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return "", err
		}
		if err := os.Chmod(dst, 0o644); err != nil {
			return "", err
		}
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs"} {
		if err := os.Chmod(filepath.Join(ctxDir, d), 0o755); err != nil {
			return "", err
		}
	}
	_, arch, _ := strings.Cut(platform, "/")
	if arch == "" {
		return "", fmt.Errorf("local base: platform %q is not os/arch", platform)
	}
	ref := LocalBaseName + ":local-" + arch
	if _, err := p.Build(ctx, Build{Dockerfile: filepath.Join(src, "infra", "base", "Dockerfile"), Context: ctxDir,
		Platform: platform, Tag: ref, Created: created}); err != nil {
		return "", fmt.Errorf("local base: %w", err)
	}
	return ref, nil
}

// DefaultBase returns the default of `ARG BASE=…` in a Dockerfile: the base image users
// get when they pass no --build-arg BASE.
func DefaultBase(dockerfile string) (string, error) {
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.EqualFold(f[0], "ARG") && strings.HasPrefix(f[1], "BASE=") {
			return strings.TrimPrefix(f[1], "BASE="), nil
		}
	}
	return "", fmt.Errorf("%s has no ARG BASE=<image> line", dockerfile)
}
