package pkgid

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// ErrUnsupported means a server's command runs a package agentgate cannot pin: a flag it
// does not know, a spec that is not a registry package (a git URL, a path, a tarball), more
// than one package. The error says which; the server's surface is still locked.
var ErrUnsupported = errors.New("its package cannot be pinned")

// Ref is what a server's configuration says it runs, read from its command line (or URL)
// alone, without the network.
type Ref struct {
	// Type is lockfile.PackageNPM, PackagePyPI, PackageOCI or PackageRemote.
	Type string
	// Name is the npm name, the PyPI project name (PEP 503 normalized), the OCI repository
	// with its registry (docker.io/library/alpine); "" for a remote server.
	Name string
	// Spec is what the config asks for after the name, as written: an npm version, range or
	// dist-tag ("" when none), a PyPI specifier ("==1.0", ">=1", ""), an image tag.
	Spec string
	// Exact is the exact version the config pins (npm, PyPI); "" when it floats.
	Exact string
	// Digest is the digest an OCI reference names ("sha256:…"); "" when it names a tag only.
	Digest string
	// URL is a remote server's URL without user info, query or fragment.
	URL string
	// Floating says the config names no exact version, so what runs is whatever the
	// registry serves when it starts; Why says how it floats ("no version", "the dist-tag
	// latest", "the range ^1.2.0", "the tag latest without a digest").
	Floating bool
	Why      string

	command string   // the program as written
	args    []string // its arguments
	arg     int      // index in args of the token naming the package
	prefix  string   // text of args[arg] before the package reference (--package=, --from=)
	atStyle bool     // the token pins as NAME@VERSION (uvx's command argument), not NAME==VERSION
	end     int      // index of the last argument PinnedCommand shows (the command after --package)
	// Runner names the command that runs the package, for messages: npx, npm exec, pnpm
	// dlx, bunx, uvx, pipx run, docker run, podman run.
	Runner string
}

// Package returns what ref pins without the network: its type, name, URL and, when the
// config names it exactly, its version or digest (integrity and files are left empty).
func (ref Ref) Package() lockfile.Package {
	p := lockfile.Package{Type: ref.Type, Name: ref.Name, URL: ref.URL}
	switch ref.Type {
	case lockfile.PackageNPM, lockfile.PackagePyPI:
		p.Version = ref.Exact
	case lockfile.PackageOCI:
		p.Tag, p.Digest = ref.Spec, ref.Digest
	}
	return p
}

// ContentPinned reports whether the config names the content itself (an OCI digest).
func (ref Ref) ContentPinned() bool { return ref.Digest != "" }

// Parse reads the package a stdio server runs from its command and arguments. ok is false
// when the command is not a package runner agentgate knows (node, python, a binary):
// there is nothing to pin. An error wrapping ErrUnsupported means it is one, but its
// package cannot be read from the arguments.
func Parse(command string, args []string) (ref Ref, ok bool, err error) {
	base := strings.ToLower(filepath.Base(command))
	for _, ext := range []string{".cmd", ".exe", ".bat", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	ref = Ref{command: command, args: args}
	sub := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch {
	case base == "npx":
		ref.Runner = "npx"
		err = ref.npm(0, npxFlags)
	case base == "npm" && (sub(0) == "exec" || sub(0) == "x"):
		ref.Runner = "npm exec"
		err = ref.npm(1, npxFlags)
	case base == "pnpm" && sub(0) == "dlx":
		ref.Runner = "pnpm dlx"
		err = ref.npm(1, pnpmFlags)
	case base == "pnpx":
		ref.Runner = "pnpx"
		err = ref.npm(0, pnpmFlags)
	case base == "bunx" || (base == "bun" && sub(0) == "x"):
		ref.Runner = "bunx"
		start := 0
		if base == "bun" {
			start = 1
		}
		err = ref.npm(start, bunxFlags)
	case base == "uvx":
		ref.Runner = "uvx"
		err = ref.uvx(0)
	case base == "uv" && sub(0) == "tool" && sub(1) == "run":
		ref.Runner = "uv tool run"
		err = ref.uvx(2)
	case base == "pipx" && sub(0) == "run":
		ref.Runner = "pipx run"
		err = ref.pipx(1)
	case base == "docker" || base == "podman":
		i, found := containerRun(args)
		if !found {
			return Ref{}, false, nil
		}
		ref.Runner = base + " run"
		err = ref.oci(i)
	default:
		return Ref{}, false, nil
	}
	if err != nil {
		return Ref{}, true, fmt.Errorf("%s: %w (%v)", ref.Runner, ErrUnsupported, err)
	}
	return ref, true, nil
}

// ParseURL reads a remote server's URL: user info, query and fragment are left out, since
// they often carry credentials and would end up in the lockfile.
func ParseURL(raw string) (Ref, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Ref{}, fmt.Errorf("%w: not an http(s) URL", ErrUnsupported)
	}
	clean := url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return Ref{Type: lockfile.PackageRemote, URL: clean.String(), Runner: "url"}, nil
}

// flagSet says which flags of a runner take a value (the next argument, unless given as
// --flag=value) and which do not; a flag in neither is refused, so a value is never taken
// for the package.
type flagSet struct {
	value, bool map[string]bool
	// pkg names the flags that name the package instead of the first argument (npx
	// --package).
	pkg map[string]bool
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	npxFlags = flagSet{
		value: set("-p", "--package", "-c", "--call", "-w", "--workspace", "--registry", "--cache", "--userconfig", "--loglevel", "--prefix", "--node-options"),
		bool:  set("-y", "--yes", "--no", "--no-yes", "-q", "--quiet", "-s", "--silent", "--ws", "--workspaces", "--include-workspace-root", "--prefer-online", "--prefer-offline", "--offline", "--no-install", "--ignore-existing", "--verbose", "-d"),
		pkg:   set("-p", "--package"),
	}
	pnpmFlags = flagSet{
		value: set("--package", "-c", "--shell-mode", "--registry", "--dir", "-C", "--reporter", "--allow-build"),
		bool:  set("--silent", "-s", "--shell-mode", "-y", "--yes"),
		pkg:   set("--package"),
	}
	bunxFlags = flagSet{
		value: set("-p", "--package", "--registry", "--cwd"),
		bool:  set("--bun", "--no-install", "--silent", "--verbose", "-y", "--yes"),
		pkg:   set("-p", "--package"),
	}
	uvxFlags = flagSet{
		value: set("--from", "--with", "--with-editable", "--with-requirements", "-w", "--python", "-p", "--index", "--default-index",
			"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index-strategy", "--keyring-provider", "--resolution",
			"--prerelease", "--exclude-newer", "--reinstall-package", "--refresh-package", "--upgrade-package", "-P", "--link-mode",
			"--compile-bytecode-timeout", "--cache-dir", "--config-file", "--directory", "--project", "--color", "--build-constraints",
			"-c", "--constraints", "--overrides", "--env-file", "--torch-backend", "--python-platform", "--no-binary-package", "--only-binary-package",
			"--no-build-package", "--no-build-isolation-package", "--config-setting", "-C"),
		bool: set("-q", "--quiet", "-v", "--verbose", "--isolated", "--no-cache", "-n", "--offline", "--no-config", "--no-progress",
			"--native-tls", "--upgrade", "-U", "--reinstall", "--refresh", "--no-sources", "--no-build", "--no-binary", "--no-build-isolation",
			"--managed-python", "--no-managed-python", "--no-python-downloads", "--compile-bytecode", "--no-env-file", "--lfs", "--show-resolution", "--python-preference"),
		pkg: set("--from"),
	}
	pipxFlags = flagSet{
		value: set("--spec", "--python", "--pip-args", "--index-url", "-i", "--backend"),
		bool:  set("--no-cache", "--pypackages", "-v", "--verbose", "-q", "--quiet", "--system-site-packages", "--fetch-missing-python"),
		pkg:   set("--spec"),
	}
)

// token is one argument of a runner's command line.
type token struct {
	i      int    // index in args
	flag   string // the flag, "" for a positional argument
	value  string // the flag's value, or the positional argument
	prefix string // what precedes value in args[i] ("--package=")
}

// scan reads a runner's arguments from start up to and including the first positional one
// (the package or command): its flags with their values, and that argument (pos.i is -1
// when there is none).
func scan(args []string, start int, fs flagSet) (flags []token, pos token, err error) {
	pos.i = -1
	for i := start; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				pos = token{i: i + 1, value: args[i+1]}
			}
			return flags, pos, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return flags, token{i: i, value: a}, nil
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case fs.value[name] && hasVal:
			flags = append(flags, token{i: i, flag: name, value: val, prefix: name + "="})
		case fs.value[name]:
			if i+1 >= len(args) {
				return nil, pos, fmt.Errorf("%s has no value", name)
			}
			flags = append(flags, token{i: i + 1, flag: name, value: args[i+1]})
			i++
		case fs.bool[name]:
			flags = append(flags, token{i: i, flag: name})
		default:
			return nil, pos, fmt.Errorf("unknown option %s", name)
		}
	}
	return flags, pos, nil
}

// npm reads an npm runner's package: the --package flag's value, else the first argument.
func (ref *Ref) npm(start int, fs flagSet) error {
	ref.Type = lockfile.PackageNPM
	flags, pos, err := scan(ref.args, start, fs)
	if err != nil {
		return err
	}
	var named []token
	for _, f := range flags {
		if fs.pkg[f.flag] {
			named = append(named, f)
		}
	}
	var t token
	switch {
	case len(named) > 1:
		return errors.New("more than one --package")
	case len(named) == 1:
		t = named[0]
	case pos.i < 0:
		return errors.New("no package named")
	default:
		t = pos
	}
	ref.arg, ref.prefix, ref.end = t.i, t.prefix, max(t.i, pos.i)
	return ref.npmSpec(t.value)
}

// npmSpec reads NAME[@SPEC] as npm-package-arg reads a registry spec.
func (ref *Ref) npmSpec(s string) error {
	name, spec := s, ""
	at := strings.LastIndexByte(s, '@')
	if at > 0 {
		name, spec = s[:at], s[at+1:]
	}
	if strings.HasPrefix(spec, "npm:") || strings.Contains(s, ":") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") {
		return fmt.Errorf("%q is not a registry package (a git, file, URL or alias spec)", s)
	}
	if !validNPMName(name) {
		return fmt.Errorf("%q is not an npm package name", name)
	}
	ref.Name, ref.Spec = name, spec
	switch v, isVersion := parseVersion(spec); {
	case spec == "":
		ref.Floating, ref.Why = true, "no version"
	case isVersion:
		ref.Exact = v.String()
	default:
		if _, isRange := parseRange(spec); isRange {
			ref.Floating, ref.Why = true, "the range "+spec
		} else if validTag(spec) {
			ref.Floating, ref.Why = true, "the dist-tag "+spec
		} else {
			return fmt.Errorf("%q is not a version, range or dist-tag", spec)
		}
	}
	return nil
}

var npmNameRE = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9._~-][a-zA-Z0-9._~-]*$`)

func validNPMName(s string) bool { return len(s) <= 214 && npmNameRE.MatchString(s) }

func validTag(s string) bool {
	return s != "" && len(s) <= 128 && url.PathEscape(s) == s && !strings.ContainsAny(s, "/\\")
}

// uvx reads uvx's (uv tool run's) package: --from's requirement, else the first argument.
func (ref *Ref) uvx(start int) error {
	ref.Type = lockfile.PackagePyPI
	flags, pos, err := scan(ref.args, start, uvxFlags)
	if err != nil {
		return err
	}
	for _, f := range flags {
		if f.flag == "--from" {
			ref.arg, ref.prefix = f.i, f.prefix
			return ref.pySpec(f.value, true)
		}
	}
	if pos.i < 0 {
		return errors.New("no package named")
	}
	ref.arg, ref.atStyle = pos.i, true
	return ref.pySpec(pos.value, true)
}

// pipx reads pipx run's package: --spec's requirement, else the first argument.
func (ref *Ref) pipx(start int) error {
	ref.Type = lockfile.PackagePyPI
	flags, pos, err := scan(ref.args, start, pipxFlags)
	if err != nil {
		return err
	}
	for _, f := range flags {
		if f.flag == "--spec" {
			ref.arg, ref.prefix = f.i, f.prefix
			return ref.pySpec(f.value, false)
		}
	}
	if pos.i < 0 {
		return errors.New("no package named")
	}
	ref.arg = pos.i
	return ref.pySpec(pos.value, false)
}

var (
	pyNameRE     = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])(\[[A-Za-z0-9._,\s-]*\])?`)
	pyNormRE     = regexp.MustCompile(`[-_.]+`)
	pyClause     = regexp.MustCompile(`^\s*(===|==|!=|~=|<=|>=|<|>)\s*([A-Za-z0-9.*+!_-]+)\s*$`)
	pyReleaseNum = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)
)

// normalizePyPI is PEP 503's normalized name.
func normalizePyPI(name string) string { return strings.ToLower(pyNormRE.ReplaceAllString(name, "-")) }

// pySpec reads a PEP 508 requirement with a version specifier (name[extras]==1.0,
// name>=1,<2), or uv's name@1.0 / name@latest when at is true.
func (ref *Ref) pySpec(s string, at bool) error {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "git+") || strings.HasPrefix(s, "file:") ||
		strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, ".whl") || strings.HasSuffix(s, ".tar.gz") {
		return fmt.Errorf("%q is not a registry package (a URL, a path or a file)", s)
	}
	m := pyNameRE.FindString(s)
	if m == "" {
		return fmt.Errorf("%q is not a Python requirement", s)
	}
	name := m
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	rest := strings.TrimSpace(s[len(m):])
	ref.Name = normalizePyPI(name)
	switch {
	case rest == "":
		ref.Floating, ref.Why = true, "no version"
		return nil
	case at && strings.HasPrefix(rest, "@"):
		v := strings.TrimSpace(rest[1:])
		if v == "latest" {
			ref.Spec, ref.Floating, ref.Why = "@latest", true, "latest"
			return nil
		}
		if !validPyVersion(v) {
			return fmt.Errorf("%q is not a registry package (a direct URL?)", s)
		}
		ref.Spec, ref.Exact = "=="+v, v
		return nil
	case strings.HasPrefix(rest, "@") || strings.HasPrefix(rest, ";"):
		return fmt.Errorf("%q is not a registry package (a direct URL or a marker)", s)
	}
	clauses := strings.Split(rest, ",")
	for _, c := range clauses {
		if pyClause.FindStringSubmatch(c) == nil {
			return fmt.Errorf("%q has a version specifier agentgate cannot read", s)
		}
	}
	ref.Spec = strings.Join(strings.Fields(rest), "")
	if m := pyClause.FindStringSubmatch(rest); len(clauses) == 1 && (m[1] == "==" || m[1] == "===") && !strings.Contains(m[2], "*") {
		ref.Exact = m[2]
		return nil
	}
	ref.Floating, ref.Why = true, "the specifier "+ref.Spec
	return nil
}

func validPyVersion(s string) bool {
	return s != "" && len(s) <= 128 && strings.Trim(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+!-_") == ""
}

// PinnedCommand is the command line to use instead of a floating one: the package token
// rewritten to name p exactly. Arguments after it are shown as "…" and the values of
// -e/--env as KEY=…, so that a secret passed on the command line is not printed.
func (ref Ref) PinnedCommand(p lockfile.Package) string {
	parts := []string{shellQuote(ref.command)}
	end := max(ref.arg, ref.end)
	for i := 0; i < len(ref.args) && i <= end; i++ {
		a := ref.args[i]
		switch rest, isEnv := strings.CutPrefix(a, "--env="); {
		case i == ref.arg:
			a = ref.prefix + ref.PinnedArg(p)
		case isEnv:
			if k, _, ok := strings.Cut(rest, "="); ok {
				a = "--env=" + k + "=…"
			}
		case i > 0 && ref.Type == lockfile.PackageOCI && (ref.args[i-1] == "-e" || ref.args[i-1] == "--env"):
			if k, _, ok := strings.Cut(a, "="); ok {
				a = k + "=…"
			}
		}
		parts = append(parts, shellQuote(a))
	}
	if end+1 < len(ref.args) {
		parts = append(parts, "…")
	}
	return strings.Join(parts, " ")
}

// PinnedArg is the package token that names p exactly: NAME@VERSION (npm), NAME==VERSION
// (PyPI), REPOSITORY[:TAG]@DIGEST (OCI), as written in the config (the name as the config
// spells it is kept for PyPI and OCI).
func (ref Ref) PinnedArg(p lockfile.Package) string {
	switch ref.Type {
	case lockfile.PackageNPM:
		return p.Name + "@" + p.Version
	case lockfile.PackagePyPI:
		m := pyNameRE.FindString(ref.args[ref.arg][len(ref.prefix):])
		if ref.atStyle {
			return m + "@" + p.Version
		}
		return m + "==" + p.Version
	case lockfile.PackageOCI:
		orig := ref.args[ref.arg]
		if i := strings.IndexByte(orig, '@'); i >= 0 {
			orig = orig[:i]
		}
		return orig + "@" + p.Digest
	}
	return p.URL
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-…^~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
