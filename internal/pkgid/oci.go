package pkgid

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// containerRun finds docker's or podman's run subcommand ("run", "container run") after
// the global options, and returns the index of the first argument after it.
func containerRun(args []string) (int, bool) {
	globalValue := set("--context", "-c", "-H", "--host", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey",
		"--url", "--connection", "--identity", "--root", "--runroot", "--storage-driver", "--storage-opt", "--cgroup-manager",
		"--events-backend", "--runtime", "--tmpdir", "--network-cmd-path", "--module", "--imagestore", "--volumepath", "--ssh", "--cdi-spec-dir", "--hooks-dir")
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "run":
			return i + 1, true
		case a == "container" && i+1 < len(args) && args[i+1] == "run":
			return i + 2, true
		case strings.HasPrefix(a, "-") && strings.Contains(a, "="):
		case globalValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return 0, false // another subcommand: exec, compose, start
		}
	}
	return 0, false
}

var (
	runValue = set("-a", "--attach", "-c", "--cpu-shares", "-e", "--env", "-h", "--hostname", "-l", "--label", "-m", "--memory",
		"-p", "--publish", "-u", "--user", "-v", "--volume", "-w", "--workdir",
		"--add-host", "--annotation", "--blkio-weight", "--blkio-weight-device", "--cap-add", "--cap-drop", "--cgroup-parent", "--cgroupns",
		"--cidfile", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "--cpus", "--cpuset-cpus", "--cpuset-mems",
		"--detach-keys", "--device", "--device-cgroup-rule", "--device-read-bps", "--device-read-iops", "--device-write-bps",
		"--device-write-iops", "--dns", "--dns-option", "--dns-opt", "--dns-search", "--domainname", "--entrypoint", "--env-file", "--expose",
		"--gpus", "--group-add", "--health-cmd", "--health-interval", "--health-retries", "--health-start-interval", "--health-start-period",
		"--health-timeout", "--ip", "--ip6", "--ipc", "--isolation", "--kernel-memory", "--label-file", "--link", "--link-local-ip",
		"--log-driver", "--log-opt", "--mac-address", "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount", "--name",
		"--network", "--net", "--network-alias", "--net-alias", "--oom-score-adj", "--pid", "--pids-limit", "--platform", "--pull",
		"--restart", "--runtime", "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl",
		"--tmpfs", "--ulimit", "--userns", "--uts", "--volume-driver", "--volumes-from",
		// podman run
		"--arch", "--os", "--variant", "--authfile", "--cert-dir", "--creds", "--decryption-key", "--hostuser", "--image-volume",
		"--init-path", "--passwd-entry", "--pod", "--pod-id-file", "--preserve-fds", "--requires", "--sdnotify", "--seccomp-policy",
		"--secret", "--timeout", "--tz", "--umask", "--uidmap", "--gidmap", "--subuidname", "--subgidname", "--chrootdirs",
		"--conmon-pidfile", "--group-entry", "--personality", "--rdt-class", "--retry", "--retry-delay", "--unsetenv", "--cgroups", "--cgroup-conf")
	runBool = set("-d", "--detach", "-i", "--interactive", "-t", "--tty", "-P", "--publish-all", "-q", "--quiet", "--rm", "--init",
		"--privileged", "--read-only", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable", "--disable-content-trust", "--env-host",
		"--http-proxy", "--read-only-tmpfs", "--replace", "--rmi", "--no-hosts", "--tls-verify", "--use-host-ipc")
)

// oci reads docker run's (podman run's) image: the first argument after the run options.
func (ref *Ref) oci(start int) error {
	ref.Type = lockfile.PackageOCI
	for i := start; i < len(ref.args); i++ {
		a := ref.args[i]
		name, _, hasVal := strings.Cut(a, "=")
		switch {
		case a == "--":
			continue
		case !strings.HasPrefix(a, "-") || a == "-":
			ref.arg = i
			return ref.image(a)
		case strings.HasPrefix(a, "--") && hasVal && (runValue[name] || runBool[name]):
		case runValue[a]:
			if i+1 >= len(ref.args) {
				return fmt.Errorf("%s has no value", a)
			}
			i++
		case runBool[a]:
		case !strings.HasPrefix(a, "--") && len(a) > 2:
			// A cluster of short flags: -it, -itd, -ie VALUE, -p8080:80.
			n, err := shortCluster(a)
			if err != nil {
				return err
			}
			i += n
		default:
			return fmt.Errorf("unknown option %s", name)
		}
	}
	return errors.New("no image named")
}

// shortCluster reads -abc: boolean flags, the last of which may take the next argument
// (n is 1 then), or a value flag followed by its value in the same argument.
func shortCluster(a string) (n int, err error) {
	for j := 1; j < len(a); j++ {
		f := "-" + a[j:j+1]
		switch {
		case runBool[f]:
		case runValue[f] && j == len(a)-1:
			return 1, nil
		case runValue[f]:
			return 0, nil // -p8080:80
		default:
			return 0, fmt.Errorf("unknown option %s", f)
		}
	}
	return 0, nil
}

var (
	ociComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	ociTag       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	ociDomain    = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?))*(?::[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]+)?$`)
)

// image reads an image reference as docker normalizes it: [REGISTRY/]PATH[:TAG][@DIGEST],
// Docker Hub's when no registry is named (docker.io/library/ for one-component paths).
// Podman resolves short names through registries.conf; agentgate reads them as Docker Hub's,
// the usual configuration, and says so in docs.
func (ref *Ref) image(s string) error {
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		ref.Digest, rest = rest[i+1:], rest[:i]
		if !lockfile.ValidDigest(ref.Digest) {
			return fmt.Errorf("%q: the digest is not sha256: and 64 lowercase hex digits", s)
		}
	}
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		ref.Spec, rest = rest[i+1:], rest[:i]
		if !ociTag.MatchString(ref.Spec) {
			return fmt.Errorf("%q: %q is not an image tag", s, ref.Spec)
		}
	}
	domain, path := "docker.io", rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if first := rest[:i]; strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[") {
			domain, path = first, rest[i+1:]
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if !ociDomain.MatchString(domain) {
		return fmt.Errorf("%q: %q is not a registry host", s, domain)
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	for _, c := range strings.Split(path, "/") {
		if !ociComponent.MatchString(c) {
			return fmt.Errorf("%q is not an image reference (lowercase letters, digits and separators only)", s)
		}
	}
	ref.Name = domain + "/" + path
	switch {
	case ref.Digest != "":
	case ref.Spec == "":
		ref.Floating, ref.Why = true, "no tag (latest) and no digest"
	default:
		ref.Floating, ref.Why = true, "the tag "+ref.Spec+" without a digest"
	}
	return nil
}

// ociTag is the tag to resolve: the reference's, or latest as docker assumes.
func (ref Ref) ociTag() string {
	if ref.Spec == "" {
		return "latest"
	}
	return ref.Spec
}

// manifestAccept are the manifest media types asked for, an index (manifest list) first:
// the digest of a multi-platform image is its index's, the one docker run IMAGE@DIGEST takes.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

// maxManifest is the OCI distribution specification's suggested bound on a manifest (4 MiB).
const maxManifest = 4 << 20

// registryBase is the base URL of a registry host: Config.OCIRegistries', else Docker Hub's
// API host for docker.io, http:// for a loopback registry (as docker allows), https://.
func (r *Resolver) registryBase(host string) string {
	if b, ok := r.cfg.OCIRegistries[host]; ok {
		return strings.TrimSuffix(b, "/")
	}
	if host == "docker.io" {
		return "https://registry-1.docker.io"
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
		return "http://" + host
	}
	return "https://" + host
}

// resolveOCI returns the manifest digest the reference's tag names now: HEAD
// /v2/NAME/manifests/TAG (GET when the registry sends no Docker-Content-Digest, hashing the
// bounded body), with Docker Hub's anonymous token flow on a 401.
func (r *Resolver) resolveOCI(ctx context.Context, ref Ref) (lockfile.Package, error) {
	host, repo, _ := strings.Cut(ref.Name, "/")
	base := r.registryBase(host)
	p := lockfile.Package{Type: lockfile.PackageOCI, Name: ref.Name, Tag: ref.Spec}
	what := "registry " + base
	manifest := base + "/v2/" + repo + "/manifests/" + url.PathEscape(ref.ociTag())
	token := ""
	get := func(method string) (answer, error) {
		hdr := http.Header{"Accept": {manifestAccept}}
		if token != "" {
			hdr.Set("Authorization", "Bearer "+token)
		}
		a, err := r.do(ctx, method, manifest, hdr, maxManifest, what)
		if err != nil {
			return a, err
		}
		switch a.status {
		case http.StatusOK:
			return a, nil
		case http.StatusUnauthorized:
			if token == "" {
				return a, nil
			}
			return a, fmt.Errorf("%s: %w: %s needs credentials to be read (a private image?); agentgate reads public images only", what, ErrNotFound, ref.Name)
		case http.StatusNotFound:
			return a, fmt.Errorf("%s: %w: no image %s:%s", what, ErrNotFound, ref.Name, ref.ociTag())
		}
		return a, statusError(what, a.status)
	}
	a, err := get(http.MethodHead)
	if err != nil {
		return p, err
	}
	if a.status == http.StatusUnauthorized {
		if token, err = r.ociToken(ctx, a.header.Get("Www-Authenticate"), repo, what); err != nil {
			return p, err
		}
		if a, err = get(http.MethodHead); err != nil {
			return p, err
		}
	}
	d := a.header.Get("Docker-Content-Digest")
	if d == "" { // a registry that does not say: GET the manifest and hash it
		a, err := get(http.MethodGet)
		if err != nil {
			return p, err
		}
		sum := sha256.Sum256(a.body)
		d = "sha256:" + hex.EncodeToString(sum[:])
		if h := a.header.Get("Docker-Content-Digest"); h != "" && h != d {
			return p, fmt.Errorf("%s: %w: the manifest of %s does not hash to its Docker-Content-Digest", what, ErrInvalid, ref.Name)
		}
	}
	if !lockfile.ValidDigest(d) {
		return p, fmt.Errorf("%s: %w: Docker-Content-Digest %q is not sha256: and 64 lowercase hex digits", what, ErrInvalid, d)
	}
	p.Digest = d
	return p, nil
}

// ociToken follows a Bearer challenge (realm, service, scope) for an anonymous pull token,
// as docker does against Docker Hub's auth.docker.io.
func (r *Resolver) ociToken(ctx context.Context, challenge, repo, what string) (string, error) {
	scheme, params, _ := strings.Cut(challenge, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%s: %w: it asks for credentials (%s authentication); agentgate reads public images only", what, ErrNotFound, strings.TrimSpace(scheme))
	}
	kv := parseChallenge(params)
	realm, err := url.Parse(kv["realm"])
	if err != nil || (realm.Scheme != "https" && realm.Scheme != "http") || realm.Host == "" {
		return "", fmt.Errorf("%s: %w: its token realm %q is not an http(s) URL", what, ErrInvalid, kv["realm"])
	}
	q := realm.Query()
	if s := kv["service"]; s != "" {
		q.Set("service", s)
	}
	scope := kv["scope"]
	if scope == "" {
		scope = "repository:" + repo + ":pull"
	}
	q.Set("scope", scope)
	realm.RawQuery = q.Encode()
	a, err := r.do(ctx, http.MethodGet, realm.String(), nil, 1<<20, "token service "+realm.Scheme+"://"+realm.Host)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusOK {
		return "", statusError("token service "+realm.Host, a.status)
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(a.body, &tok); err != nil || (tok.Token == "" && tok.AccessToken == "") {
		return "", fmt.Errorf("token service %s: %w: no token in its answer", realm.Host, ErrInvalid)
	}
	if tok.Token != "" {
		return tok.Token, nil
	}
	return tok.AccessToken, nil
}

// parseChallenge reads the auth-params of a WWW-Authenticate challenge: key="value", ...
func parseChallenge(s string) map[string]string {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			var b strings.Builder
			for ; end < len(rest) && rest[end] != '"'; end++ {
				if rest[end] == '\\' && end+1 < len(rest) {
					end++
				}
				b.WriteByte(rest[end])
			}
			v, rest = b.String(), rest[min(end+1, len(rest)):]
		} else {
			v, rest, _ = strings.Cut(rest, ",")
			rest = "," + rest
		}
		out[k] = strings.TrimSpace(v)
		rest = strings.TrimSpace(rest)
		s = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return out
}
