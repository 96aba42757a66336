package pkgid

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

func TestParse(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		cmd      string
		args     []string
		typ      string
		pkg      string
		spec     string
		exact    string
		digest   string
		floating string // Why, "" when pinned
		pinned   string // PinnedCommand for pin
	}{
		{name: "npx exact", cmd: "npx", args: []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"},
			typ: "npm", pkg: "@modelcontextprotocol/server-everything", spec: "2026.8.31", exact: "2026.8.31",
			pinned: "npx -y @modelcontextprotocol/server-everything@2026.8.31 …"},
		{name: "npx no version", cmd: "npx", args: []string{"-y", "@modelcontextprotocol/server-everything"},
			typ: "npm", pkg: "@modelcontextprotocol/server-everything", floating: "no version",
			pinned: "npx -y @modelcontextprotocol/server-everything@2026.8.31"},
		{name: "npx latest", cmd: "/usr/local/bin/npx.cmd", args: []string{"--yes", "server-x@latest", "--port", "1"},
			typ: "npm", pkg: "server-x", spec: "latest", floating: "the dist-tag latest", pinned: "/usr/local/bin/npx.cmd --yes server-x@2026.8.31 …"},
		{name: "npx loose version", cmd: "npx", args: []string{"server-x@v1.2.3"}, typ: "npm", pkg: "server-x", spec: "v1.2.3", exact: "1.2.3"},
		{name: "npx range", cmd: "npx", args: []string{"-y", "server-x@^1.2.0"}, typ: "npm", pkg: "server-x", spec: "^1.2.0", floating: "the range ^1.2.0"},
		{name: "npx --package", cmd: "npx", args: []string{"-y", "--package=@a/b@1.0.0", "b-server", "--flag"},
			typ: "npm", pkg: "@a/b", spec: "1.0.0", exact: "1.0.0", pinned: "npx -y --package=@a/b@2026.8.31 b-server …"},
		{name: "npx -p", cmd: "npx", args: []string{"-p", "pkg@2", "bin"}, typ: "npm", pkg: "pkg", spec: "2", floating: "the range 2"},
		{name: "npm exec", cmd: "npm", args: []string{"exec", "--yes", "--", "pkg@1.0.0", "x"}, typ: "npm", pkg: "pkg", spec: "1.0.0", exact: "1.0.0"},
		{name: "pnpm dlx", cmd: "pnpm", args: []string{"dlx", "pkg@next"}, typ: "npm", pkg: "pkg", spec: "next", floating: "the dist-tag next"},
		{name: "bunx", cmd: "bunx", args: []string{"--bun", "pkg@1.0.0"}, typ: "npm", pkg: "pkg", spec: "1.0.0", exact: "1.0.0"},
		{name: "bun x", cmd: "bun", args: []string{"x", "pkg"}, typ: "npm", pkg: "pkg", floating: "no version"},
		{name: "uvx", cmd: "uvx", args: []string{"mcp-server-fetch"}, typ: "pypi", pkg: "mcp-server-fetch", floating: "no version",
			pinned: "uvx mcp-server-fetch@2026.8.31"},
		{name: "uvx at version", cmd: "uvx", args: []string{"mcp-server-fetch@2025.4.7", "--x"}, typ: "pypi", pkg: "mcp-server-fetch", spec: "==2025.4.7", exact: "2025.4.7"},
		{name: "uvx latest", cmd: "uvx", args: []string{"mcp-server-fetch@latest"}, typ: "pypi", pkg: "mcp-server-fetch", spec: "@latest", floating: "latest"},
		{name: "uvx --from", cmd: "uvx", args: []string{"--python", "3.12", "--from", "Mcp_Server.Fetch[cli]>=2025, <2026", "mcp-server-fetch"},
			typ: "pypi", pkg: "mcp-server-fetch", spec: ">=2025,<2026", floating: "the specifier >=2025,<2026",
			pinned: "uvx --python 3.12 --from 'Mcp_Server.Fetch[cli]==2026.8.31' …"},
		{name: "uvx --from= exact", cmd: "uvx", args: []string{"--from=mcp-server-git==1.0", "mcp-server-git"}, typ: "pypi", pkg: "mcp-server-git", spec: "==1.0", exact: "1.0"},
		{name: "uv tool run", cmd: "uv", args: []string{"tool", "run", "ruff@0.6.0"}, typ: "pypi", pkg: "ruff", spec: "==0.6.0", exact: "0.6.0"},
		{name: "pipx run", cmd: "pipx", args: []string{"run", "mcp-server-time==1.0"}, typ: "pypi", pkg: "mcp-server-time", spec: "==1.0", exact: "1.0",
			pinned: "pipx run mcp-server-time==2026.8.31"},
		{name: "pipx run --spec", cmd: "pipx", args: []string{"run", "--spec", "x~=1.2", "app"}, typ: "pypi", pkg: "x", spec: "~=1.2", floating: "the specifier ~=1.2"},
		{name: "docker hub", cmd: "docker", args: []string{"run", "-i", "--rm", "-e", "TOKEN=s3cret", "--env=OTHER=x", "-e", "PASS", "mcp/fetch:1.2", "--arg"},
			typ: "oci", pkg: "docker.io/mcp/fetch", spec: "1.2", floating: "the tag 1.2 without a digest",
			pinned: "docker run -i --rm -e TOKEN=… --env=OTHER=… -e PASS mcp/fetch:1.2@" + digest + " …"},
		{name: "docker official", cmd: "docker", args: []string{"run", "-it", "--name", "x", "-v", "/a:/b", "alpine"}, typ: "oci", pkg: "docker.io/library/alpine", floating: "no tag (latest) and no digest"},
		{name: "docker digest", cmd: "docker", args: []string{"container", "run", "--pull=always", "ghcr.io/github/github-mcp-server:v1@" + digest},
			typ: "oci", pkg: "ghcr.io/github/github-mcp-server", spec: "v1", digest: digest},
		{name: "docker global flags", cmd: "docker", args: []string{"--context", "ci", "run", "-ie", "A=1", "-p8080:80", "localhost:5000/x/y:v1"}, typ: "oci", pkg: "localhost:5000/x/y", spec: "v1", floating: "the tag v1 without a digest"},
		{name: "podman", cmd: "podman", args: []string{"run", "--rm", "-i", "quay.io/org/img@" + digest}, typ: "oci", pkg: "quay.io/org/img", digest: digest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, ok, err := Parse(tc.cmd, tc.args)
			if err != nil || !ok {
				t.Fatalf("Parse = %v, %v", ok, err)
			}
			why := ""
			if ref.Floating {
				why = ref.Why
			}
			if ref.Type != tc.typ || ref.Name != tc.pkg || ref.Spec != tc.spec || ref.Exact != tc.exact || ref.Digest != tc.digest || why != tc.floating {
				t.Errorf("got %s %q spec %q exact %q digest %q floating %q", ref.Type, ref.Name, ref.Spec, ref.Exact, ref.Digest, why)
			}
			if tc.pinned != "" {
				p := lockfile.Package{Type: ref.Type, Name: ref.Name, Version: "2026.8.31", Digest: digest}
				if got := ref.PinnedCommand(p); got != tc.pinned {
					t.Errorf("PinnedCommand = %s\nwant           %s", got, tc.pinned)
				}
			}
		})
	}
}

func TestParseNotAPackage(t *testing.T) {
	for _, c := range [][]string{{"node", "dist/index.js"}, {"python", "-m", "server"}, {"docker", "exec", "-i", "x", "sh"}, {"docker", "compose", "run", "x"}, {"npm", "start"}, {"uv", "run", "x"}, {"pipx", "install", "x"}} {
		if _, ok, err := Parse(c[0], c[1:]); ok || err != nil {
			t.Errorf("Parse(%v) = %v, %v; want not a package runner", c, ok, err)
		}
	}
}

func TestParseUnsupported(t *testing.T) {
	tests := []struct {
		cmd  string
		args []string
		err  string
	}{
		{"npx", []string{"github:user/repo"}, "is not a registry package"},
		{"npx", []string{"-y", "./local"}, "is not a registry package"},
		{"npx", []string{"pkg@npm:other@1"}, "is not a registry package"},
		{"npx", []string{"--weird", "pkg"}, "unknown option --weird"},
		{"npx", []string{"-y"}, "no package named"},
		{"npx", []string{"-p", "a", "-p", "b", "bin"}, "more than one --package"},
		{"npx", []string{"Not A Name"}, "is not an npm package name"},
		{"uvx", []string{"--from", "git+https://github.com/x/y", "tool"}, "is not a registry package"},
		{"uvx", []string{"--mystery", "x"}, "unknown option --mystery"},
		{"docker", []string{"run", "--mystery", "img"}, "unknown option --mystery"},
		{"docker", []string{"run", "-i", "Upper/Case"}, "is not an image reference"},
		{"docker", []string{"run", "img@sha256:abc"}, "the digest is not sha256:"},
		{"docker", []string{"run", "-i"}, "no image named"},
	}
	for _, tc := range tests {
		_, ok, err := Parse(tc.cmd, tc.args)
		if !ok || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%s %v) = %v, %v; want ErrUnsupported with %q", tc.cmd, tc.args, ok, err, tc.err)
		}
	}
}

func TestParseURL(t *testing.T) {
	ref, err := ParseURL("https://user:pw@MCP.Example.com:8443/a%2Fb/mcp?api_key=secret#x")
	if err != nil || ref.URL != "https://mcp.example.com:8443/a%2Fb/mcp" || ref.Type != lockfile.PackageRemote {
		t.Errorf("ParseURL = %+v, %v", ref, err)
	}
	if _, err := ParseURL("ftp://x"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ftp: %v", err)
	}
}

// The ranges and versions of node-semver's own test fixtures (range-include.js and
// range-exclude.js) that npx and npm specs use.
func TestSemverRanges(t *testing.T) {
	tests := []struct {
		rng, v string
		want   bool
	}{
		{"1.0.0 - 2.0.0", "1.2.3", true}, {"1.0.0 - 2.0.0", "2.2.3", false}, {"1.2.3 - 2", "2.9.9", true}, {"1.2 - 2.3", "2.3.9", true}, {"1.2 - 2.3", "2.4.0", false},
		{"^1.2.3", "1.8.1", true}, {"^1.2.3", "2.0.0", false}, {"^1.2.3", "1.2.2", false}, {"^0.1.2", "0.1.9", true}, {"^0.1.2", "0.2.0", false},
		{"^0.0.3", "0.0.3", true}, {"^0.0.3", "0.0.4", false}, {"^1.2", "1.9.0", true}, {"^0", "0.9.9", true}, {"^0.0", "0.0.9", true}, {"^0.0", "0.1.0", false},
		{"~1.2.3", "1.2.9", true}, {"~1.2.3", "1.3.0", false}, {"~1", "1.9.9", true}, {"~1.2", "1.2.0", true}, {"~> 1.2", "1.2.5", true},
		{"1.x", "1.9.9", true}, {"1.x", "2.0.0", false}, {"1.2.*", "1.2.3", true}, {"*", "1.2.3", true}, {"", "1.0.0", true}, {"x", "0.0.1", true},
		{">=1.2.3", "1.2.3", true}, {">1.2.3", "1.2.3", false}, {"<1.2.3", "1.2.2", true}, {"<=1.2", "1.2.9", true}, {"<1.2", "1.1.9", true}, {"<1.2", "1.2.0", false},
		{">1", "2.0.0", true}, {">1", "1.9.9", false}, {">1.2", "1.3.0", true}, {">= 1.2.3 < 2", "1.5.0", true}, {">=1.2.3 <2", "2.0.0", false},
		{"1.2.3 || 2.x", "2.4.0", true}, {"1.2.3 || 2.x", "1.2.4", false}, {"=1.2.3", "1.2.3", true}, {"v1.2.3", "1.2.3", true},
		// Prereleases match only a comparator naming a prerelease of the same version.
		{"^1.2.3", "1.3.0-beta", false}, {"^1.2.3-beta.2", "1.2.3-beta.4", true}, {"^1.2.3-beta.2", "1.2.4-beta.1", false},
		{">=1.0.0-0", "1.0.0-rc.1", true}, {"*", "1.0.0-rc.1", false}, {"<2.0.0", "2.0.0-rc.1", false}, {">1", "2.0.0-beta", false},
	}
	for _, tc := range tests {
		r, ok := parseRange(tc.rng)
		v, vok := parseVersion(tc.v)
		if !ok || !vok {
			t.Errorf("parse %q / %q: %v %v", tc.rng, tc.v, ok, vok)
			continue
		}
		if got := r.satisfies(v); got != tc.want {
			t.Errorf("satisfies(%q, %q) = %v, want %v", tc.v, tc.rng, got, tc.want)
		}
	}
	for _, bad := range []string{"latest", "next", "beta-2", "1.2.3.4", ">=foo", "^01.2.3"} {
		if _, ok := parseRange(bad); ok {
			t.Errorf("parseRange(%q) accepted", bad)
		}
	}
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"}
	for i := 1; i < len(order); i++ {
		a, _ := parseVersion(order[i-1])
		b, _ := parseVersion(order[i])
		if compare(a, b) >= 0 || compare(b, a) <= 0 {
			t.Errorf("%s < %s does not hold", order[i-1], order[i])
		}
	}
}

func TestPySpec(t *testing.T) {
	tests := []struct {
		spec, v string
		want    bool
	}{
		{">=1.2", "1.2.0", true}, {">=1.2", "1.1.9", false}, {">=1,<2", "1.9", true}, {">=1,<2", "2.0", false}, {"~=1.4.2", "1.4.9", true},
		{"~=1.4.2", "1.5.0", false}, {"~=1.4", "1.9", true}, {"~=1.4", "2.0", false}, {"==1.*", "1.7.1", true}, {"==1.*", "2.0", false},
		{"!=1.5", "1.5.0", false}, {"!=1.5", "1.6", true}, {">=1", "1.0rc1", false}, {"===1.0", "1.0", true},
	}
	for _, tc := range tests {
		s, err := parsePySpec(tc.spec)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if got := s.satisfies(tc.v); got != tc.want {
			t.Errorf("%q satisfies %q = %v, want %v", tc.v, tc.spec, got, tc.want)
		}
	}
	if _, err := parsePySpec(">=1.0rc1"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a prerelease bound: %v", err)
	}
}
