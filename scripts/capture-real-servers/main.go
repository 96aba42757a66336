// Command capture-real-servers captures what real, published MCP servers serve, for the
// false-positive measurement of the first-sight findings (internal/findings, testdata/real).
//
// Each server of the table below is an npm package at an exact version. With -install it
// is installed into its own directory under -modules (npm install --ignore-scripts: no
// install script runs, no browser is downloaded). Each is then started over stdio with
// node, inside a new network namespace (unshare --net --map-root-user: not even loopback
// is up, so a server cannot reach anything), with an environment of PATH, a scratch HOME
// and the dummy values in the table, and listed with internal/mcpclient under each of its
// four built-in client profiles, with prompts and instructions. A server that does not
// answer, or answers differently to two profiles for the same tool, fails the run.
//
// The file written for each, -out/NAME.json, holds the union of the tools over the
// profiles (in the order first served, the generic profile first), the prompts and the
// instructions, each object as the server sent it (re-indented; no character escaped).
//
//	go run ./scripts/capture-real-servers -install -modules /tmp/realservers
//	go run ./scripts/capture-real-servers -modules /tmp/realservers -only memory,github
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/mcpclient"
)

// server is one published package and how to start it without real credentials.
type server struct {
	name    string // the file name and the "server" member
	pkg     string // the npm package
	version string // its exact version
	bin     string // the package's bin entry to run ("" when it has one)
	args    []string
	env     map[string]string // dummy values for what the server reads at start-up
}

// servers are the captured servers. Every credential is a dummy value: these servers
// read them at start-up but use them only when a tool is called.
var servers = []server{
	{name: "everything", pkg: "@modelcontextprotocol/server-everything", version: "2026.8.31", args: []string{"stdio"}},
	{name: "filesystem", pkg: "@modelcontextprotocol/server-filesystem", version: "2026.8.31", args: []string{"{home}"}},
	{name: "memory", pkg: "@modelcontextprotocol/server-memory", version: "2026.8.31",
		env: map[string]string{"MEMORY_FILE_PATH": "{home}/memory.jsonl"}},
	{name: "sequential-thinking", pkg: "@modelcontextprotocol/server-sequential-thinking", version: "2026.8.31"},
	{name: "github", pkg: "@modelcontextprotocol/server-github", version: "2025.4.8",
		env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}},
	{name: "puppeteer", pkg: "@modelcontextprotocol/server-puppeteer", version: "2025.5.12"},
	{name: "brave-search", pkg: "@modelcontextprotocol/server-brave-search", version: "0.6.2",
		env: map[string]string{"BRAVE_API_KEY": "dummy"}},
	{name: "slack", pkg: "@modelcontextprotocol/server-slack", version: "2025.4.25",
		env: map[string]string{"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}},
	{name: "playwright", pkg: "@playwright/mcp", version: "0.0.86"},
	{name: "context7", pkg: "@upstash/context7-mcp", version: "4.1.1"},
	{name: "firecrawl", pkg: "firecrawl-mcp", version: "3.26.0",
		env: map[string]string{"FIRECRAWL_API_KEY": "fc-dummy"}},
	{name: "tavily", pkg: "tavily-mcp", version: "0.2.22",
		env: map[string]string{"TAVILY_API_KEY": "tvly-dummy"}},
	{name: "notion", pkg: "@notionhq/notion-mcp-server", version: "2.5.2",
		env: map[string]string{"NOTION_TOKEN": "ntn_dummy"}},
	{name: "kubernetes", pkg: "mcp-server-kubernetes", version: "4.1.7"},
}

func main() {
	modules := flag.String("modules", "/tmp/realservers", "the scratch directory the packages are installed under, one directory per server")
	out := flag.String("out", filepath.Join("internal", "findings", "testdata", "real"), "where NAME.json is written")
	only := flag.String("only", "", "comma-separated server names (default: all)")
	install := flag.Bool("install", false, "npm install each package at its version first (--ignore-scripts)")
	timeout := flag.Duration("timeout", time.Minute, "bound on one listing (one server, one profile)")
	trace := flag.Bool("strace", false, "run each server under strace -f -e trace=connect and fail a server that tries to connect to any IPv4 or IPv6 address")
	flag.Parse()
	if err := run(context.Background(), *modules, *out, *only, *install, *trace, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "capture-real-servers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, modules, out, only string, install, trace bool, timeout time.Duration) error {
	var errs []error
	for _, s := range servers {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.name) {
			continue
		}
		dir := filepath.Join(modules, s.name)
		if install {
			cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, s.pkg+"@"+s.version,
				"--ignore-scripts", "--no-audit", "--no-fund", "--save-exact")
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				errs = append(errs, fmt.Errorf("%s: npm install: %w", s.name, err))
				continue
			}
		}
		b, err := capture(ctx, s, dir, trace, timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			continue
		}
		if err := os.WriteFile(filepath.Join(out, s.name+".json"), b, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// capture is the file for s: the union of its definitions over the built-in profiles.
func capture(ctx context.Context, s server, dir string, trace bool, timeout time.Duration) ([]byte, error) {
	bin, err := binPath(dir, s)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "capture-"+s.name+"-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(home) }()
	expand := func(v string) string { return strings.ReplaceAll(v, "{home}", home) }
	srv := mcpclient.Server{
		Name:      s.name,
		Transport: mcpclient.TransportStdio,
		Command:   unshare,
		Args:      append([]string{"--net", "--map-root-user", node, bin}, mapSlice(s.args, expand)...),
		Env:       map[string]string{},
		Cwd:       home,
	}
	for k, v := range s.env {
		srv.Env[k] = expand(v)
	}
	f := file{Server: s.name, Package: s.pkg, Version: s.version}
	seenTool := map[string]json.RawMessage{}
	seenPrompt := map[string]json.RawMessage{}
	for _, p := range mcpclient.BuiltinProfiles() {
		srv := srv
		traceFile := filepath.Join(home, "connect-"+p.Name+".trace")
		if trace {
			st, err := exec.LookPath("strace")
			if err != nil {
				return nil, err
			}
			srv.Command, srv.Args = st, append([]string{"-f", "-qq", "-e", "trace=connect", "-o", traceFile, srv.Command}, srv.Args...)
		}
		l, err := mcpclient.ListTools(ctx, srv, mcpclient.Options{
			Timeout:    timeout,
			Environ:    []string{"PATH=" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home},
			Profile:    &p,
			Everything: true,
		})
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		if trace {
			if err := noNetwork(traceFile); err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
		}
		for _, n := range l.Notes {
			fmt.Fprintf(os.Stderr, "%s (%s): %s\n", s.name, p.Name, n)
		}
		fmt.Fprintf(os.Stderr, "%s (%s): %s %s, protocol %s, %d tools, %d prompts, instructions %t\n",
			s.name, p.Name, l.ServerName, l.ServerVersion, l.ProtocolVersion, len(l.Tools), len(l.Prompts), l.Instructions != nil)
		f.Profiles = append(f.Profiles, p.Name)
		switch {
		case f.Instructions == nil:
			f.Instructions = l.Instructions
		case l.Instructions == nil || *l.Instructions != *f.Instructions:
			return nil, fmt.Errorf("profile %s: other instructions than the first profile's", p.Name)
		}
		for _, t := range l.Tools {
			if err := union(&f.Tools, seenTool, t.Name, t.Raw); err != nil {
				return nil, fmt.Errorf("profile %s: tool %w", p.Name, err)
			}
		}
		for _, it := range l.Prompts {
			if err := union(&f.Prompts, seenPrompt, it.Key, it.Raw); err != nil {
				return nil, fmt.Errorf("profile %s: prompt %w", p.Name, err)
			}
		}
	}
	if len(f.Tools) == 0 {
		return nil, errors.New("no tools served")
	}
	return f.encode()
}

// noNetwork fails when the strace log at path records a connect to an IPv4 or IPv6
// address (Unix sockets, which node uses for its own pipes, are not the network).
func noNetwork(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("strace log: %w", err)
	}
	var tries []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "connect(") && (strings.Contains(line, "AF_INET") || strings.Contains(line, "AF_INET6")) {
			tries = append(tries, strings.TrimSpace(line))
		}
	}
	if len(tries) > 0 {
		return fmt.Errorf("tries to reach the network (%d connects, the first: %s)", len(tries), tries[0])
	}
	return nil
}

// file is the stored form, the one internal/findings' real_test.go reads: server,
// package, version, profiles, instructions (when served), tools, prompts (when any).
type file struct {
	Server, Package, Version string
	Profiles                 []string
	Instructions             *string
	Tools, Prompts           []json.RawMessage
}

// encode writes f with one member a line and one tool or prompt a line, each compacted
// (no character escaped that the server did not escape): a few large schemas stay a few
// lines, and a diff after a refresh shows which definitions changed.
func (f file) encode() ([]byte, error) {
	var buf bytes.Buffer
	value := func(v any) error {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		return nil
	}
	list := func(items []json.RawMessage) error {
		buf.WriteString("[")
		for i, it := range items {
			if i > 0 {
				buf.WriteString(",")
			}
			buf.WriteString("\n    ")
			if err := json.Compact(&buf, it); err != nil {
				return err
			}
		}
		buf.WriteString("\n  ]")
		return nil
	}
	buf.WriteString("{")
	members := []struct {
		name string
		v    any
	}{{"server", f.Server}, {"package", f.Package}, {"version", f.Version}, {"profiles", f.Profiles}}
	if f.Instructions != nil {
		members = append(members, struct {
			name string
			v    any
		}{"instructions", *f.Instructions})
	}
	for _, m := range members {
		fmt.Fprintf(&buf, "\n  %q: ", m.name)
		if err := value(m.v); err != nil {
			return nil, err
		}
		buf.WriteString(",")
	}
	buf.WriteString("\n  \"tools\": ")
	if err := list(f.Tools); err != nil {
		return nil, err
	}
	if len(f.Prompts) > 0 {
		buf.WriteString(",\n  \"prompts\": ")
		if err := list(f.Prompts); err != nil {
			return nil, err
		}
	}
	buf.WriteString("\n}\n")
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("encoded file is not JSON")
	}
	return buf.Bytes(), nil
}

// union appends raw under key unless it was seen, and refuses a second, different
// definition under the same key.
func union(list *[]json.RawMessage, seen map[string]json.RawMessage, key string, raw json.RawMessage) error {
	if prev, ok := seen[key]; ok {
		if !bytes.Equal(prev, raw) {
			return fmt.Errorf("%q served differently to two profiles", key)
		}
		return nil
	}
	seen[key] = raw
	*list = append(*list, raw)
	return nil
}

// binPath is the script of the package's bin entry (s.bin, or its only one).
func binPath(dir string, s server) (string, error) {
	root := filepath.Join(dir, "node_modules", filepath.FromSlash(s.pkg))
	b, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err != nil {
		return "", fmt.Errorf("not installed (run with -install): %w", err)
	}
	var pj struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", root, err)
	}
	if pj.Version != s.version {
		return "", fmt.Errorf("installed version %s, want %s", pj.Version, s.version)
	}
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		return filepath.Join(root, filepath.FromSlash(one)), nil
	}
	var bins map[string]string
	if err := json.Unmarshal(pj.Bin, &bins); err != nil || len(bins) == 0 {
		return "", fmt.Errorf("%s has no bin entry", s.pkg)
	}
	if s.bin != "" {
		if p, ok := bins[s.bin]; ok {
			return filepath.Join(root, filepath.FromSlash(p)), nil
		}
		return "", fmt.Errorf("%s has no bin %q", s.pkg, s.bin)
	}
	if len(bins) > 1 {
		return "", fmt.Errorf("%s has %d bin entries: name one", s.pkg, len(bins))
	}
	for _, p := range bins {
		return filepath.Join(root, filepath.FromSlash(p)), nil
	}
	return "", fmt.Errorf("%s has no bin entry", s.pkg)
}

func mapSlice(s []string, f func(string) string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}
