package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Podman runs the podman CLI (and podman-compose, through [Podman.Env]) on a private store.
type Podman struct {
	dir string
	env []string
}

// containersConf is the private containers.conf. crun and podman's default ulimits are
// refused in some sandboxes (CI machines among them): runc and no default ulimits work
// everywhere podman does. Events go to a file under the store, not to journald, and the
// networks podman-compose creates are defined under the store, not in /etc/containers.
const containersConf = `[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = %q

[network]
network_config_dir = %q
`

// storageConf is the private storage.conf: vfs needs no kernel overlay support and leaves
// plain files behind, so removing the directory removes the store.
const storageConf = `[storage]
driver = "vfs"
graphroot = %q
runroot = %q
`

// New prepares a private store under dir (created when missing) and returns the podman that
// uses it. It fails when podman is not on PATH.
func New(dir string) (*Podman, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, errors.New("podman is not on PATH (apt-get install -y podman runc)")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"root", "run", "tmp", "networks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("podman store: %w", err)
		}
	}
	cc, sc := filepath.Join(dir, "containers.conf"), filepath.Join(dir, "storage.conf")
	if err := os.WriteFile(cc, fmt.Appendf(nil, containersConf, filepath.Join(dir, "tmp"), filepath.Join(dir, "networks")), 0o600); err != nil {
		return nil, fmt.Errorf("podman store: %w", err)
	}
	if err := os.WriteFile(sc, fmt.Appendf(nil, storageConf, filepath.Join(dir, "root"), filepath.Join(dir, "run")), 0o600); err != nil {
		return nil, fmt.Errorf("podman store: %w", err)
	}
	env := []string{"CONTAINERS_CONF=" + cc, "CONTAINERS_STORAGE_CONF=" + sc}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "CONTAINERS_CONF" && k != "CONTAINERS_STORAGE_CONF" {
			env = append(env, kv)
		}
	}
	return &Podman{dir: dir, env: env}, nil
}

// Dir returns the store's directory.
func (p *Podman) Dir() string { return p.dir }

// Env returns the environment that points podman, and podman-compose, at the private store.
func (p *Podman) Env() []string { return append([]string(nil), p.env...) }

// Command returns `podman args...` on the private store.
func (p *Podman) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = p.Env()
	return cmd
}

// Run runs `podman args...` and returns its standard output without surrounding space; the
// error names the command and carries its standard error.
func (p *Podman) Run(ctx context.Context, args ...string) (string, error) {
	cmd := p.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Version returns podman's version (it goes into the release's provenance: the builder's
// version is part of what makes an image's bytes).
func (p *Podman) Version(ctx context.Context) (string, error) {
	return p.Run(ctx, "version", "--format", "{{.Client.Version}}")
}

// Remove removes every container of the store by ID (so that none keeps a mount), then the
// store's directory. Call it once nothing uses the store any more.
func (p *Podman) Remove(ctx context.Context) error {
	var errs []error
	ids, err := p.Run(ctx, "ps", "--all", "--quiet", "--no-trunc")
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range strings.Fields(ids) {
		if _, err := p.Run(ctx, "rm", "--force", "--time", "0", id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(p.dir); err != nil {
		// Rootless podman leaves files owned by mapped IDs: remove them inside the user namespace.
		if _, uerr := p.Run(ctx, "unshare", "rm", "-rf", p.dir); uerr != nil {
			errs = append(errs, err, uerr)
		}
	}
	return errors.Join(errs...)
}
