package mcpclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	env := map[string]string{
		"HOME":                   "/home/u",
		"TOKEN":                  "s3cret",
		"AGENTGATE_INPUT_GH_PAT": "pat-value",
	}
	opts := ConfigOptions{Getenv: func(k string) string { return env[k] }}
	tests := []struct {
		name   string
		path   string
		data   string
		want   *Config
		errHas []string // substrings of the error; nil means success
	}{
		{
			name: "claude desktop stdio with env and cwd",
			path: "/proj/.mcp.json",
			data: `{"mcpServers":{
				"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","${workspaceFolder}/docs"],"env":{"DEBUG":"1"},"cwd":"sub"},
				"api":{"type":"http","url":"https://example.test/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}},
				"old":{"url":"https://example.test/sse","type":"sse"},
				"off":{"command":"x","disabled":true}
			}}`,
			want: &Config{
				Path: "/proj/.mcp.json", Format: FormatMCPServers,
				Servers: []Server{
					{Name: "api", Transport: TransportHTTP, URL: "https://example.test/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
					{Name: "fs", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/proj/docs"}, Env: map[string]string{"DEBUG": "1"}, Cwd: "/proj/sub"},
					{Name: "old", Transport: TransportSSE, URL: "https://example.test/sse"},
				},
				Skipped: []string{"off"},
			},
		},
		{
			name: "vscode servers with comments, trailing commas, inputs and env refs",
			path: "/proj/.vscode/mcp.json",
			data: `{
				// VS Code allows comments
				"inputs": [{"type": "promptString", "id": "gh-pat", "password": true}],
				"servers": {
					"github": {
						"type": "http",
						"url": "https://api.example.test/mcp/",
						"headers": {"Authorization": "Bearer ${input:gh-pat}"}, /* trailing comma next */
					},
					"local": {"type": "stdio", "command": "${userHome}/bin/srv", "args": ["--home=${env:HOME}", "${env:UNSET}x"], "cwd": "${workspaceFolder}"},
				},
			}`,
			want: &Config{
				Path: "/proj/.vscode/mcp.json", Format: FormatVSCode,
				Servers: []Server{
					{Name: "github", Transport: TransportHTTP, URL: "https://api.example.test/mcp/", Headers: map[string]string{"Authorization": "Bearer pat-value"}},
					{Name: "local", Transport: TransportStdio, Command: "/home/u/bin/srv", Args: []string{"--home=/home/u", "x"}, Cwd: "/proj"},
				},
			},
		},
		{
			name: "vscode settings nest servers under mcp",
			path: "/proj/.vscode/settings.json",
			data: `{"editor.tabSize": 2, "mcp": {"servers": {"a": {"command": "a"}}}}`,
			want: &Config{Path: "/proj/.vscode/settings.json", Format: FormatVSCode, Servers: []Server{{Name: "a", Transport: TransportStdio, Command: "a", Cwd: "/proj"}}},
		},
		{
			name: "defaults in claude code references",
			path: "/p/.mcp.json",
			data: `{"mcpServers":{"a":{"command":"${BIN:-node}","args":["${PORT:-8080}"]}}}`,
			want: &Config{Path: "/p/.mcp.json", Format: FormatMCPServers, Servers: []Server{{Name: "a", Transport: TransportStdio, Command: "node", Args: []string{"8080"}, Cwd: "/p"}}},
		},
		{
			name: "strings with comment markers are kept",
			path: "/p/mcp.json",
			data: `{"mcpServers":{"a":{"url":"https://x.test/a//b/*c*/","headers":{"X":"a,}"}}}}`,
			want: &Config{Path: "/p/mcp.json", Format: FormatMCPServers, Servers: []Server{{Name: "a", Transport: TransportHTTP, URL: "https://x.test/a//b/*c*/", Headers: map[string]string{"X": "a,}"}}}},
		},
		{name: "unresolvable input", path: "/p/.vscode/mcp.json", data: `{"servers":{"g":{"url":"https://x.test","headers":{"A":"${input:api-key}"}}}}`,
			errHas: []string{`server "g"`, "${input:api-key}", "AGENTGATE_INPUT_API_KEY"}},
		{name: "unset variable without default", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"command":"x","env":{"K":"${NOPE}"}}}}`,
			errHas: []string{`server "a"`, "env.K", "${NOPE} is not set"}},
		{name: "unsupported reference", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"command":"${command:pick}"}}}`,
			errHas: []string{"unsupported reference ${command:pick}"}},
		{name: "command and url", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"command":"x","url":"https://x.test"}}}`,
			errHas: []string{`server "a"`, `both "command" and "url"`}},
		{name: "neither command nor url", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"args":[]}}}`,
			errHas: []string{`neither "command"`}},
		{name: "bad url", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"url":"ftp://x"}}}`,
			errHas: []string{`"url" must be an absolute http`}},
		{name: "stdio type on url", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"type":"stdio","url":"https://x.test"}}}`,
			errHas: []string{`"type": "stdio" is not a remote transport`}},
		{name: "args of the wrong type", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"command":"x","args":"-v"}}}`,
			errHas: []string{`"args" has the wrong type`}},
		{name: "every bad server reported", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{},"b":{}}}`,
			errHas: []string{`server "a"`, `server "b"`}},
		{name: "not a client config", path: "/p/.mcp.json", data: `{"name":"x"}`,
			errHas: []string{`no "mcpServers" or "servers" object`}},
		{name: "both shapes", path: "/p/.mcp.json", data: `{"mcpServers":{},"servers":{}}`,
			errHas: []string{`both "mcpServers" and "servers"`}},
		{name: "syntax error has a line", path: "/p/.mcp.json", data: "{\n\"mcpServers\": {\n\"a\": {\"command\": \"x\"\n}\n",
			errHas: []string{"/p/.mcp.json", "line "}},
		{name: "exact keys only", path: "/p/.mcp.json", data: `{"mcpServers":{"a":{"Command":"x"}}}`,
			errHas: []string{`neither "command"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.path, []byte(tc.data), opts)
			if tc.errHas != nil {
				if err == nil {
					t.Fatalf("ParseConfig succeeded, want an error containing %q", tc.errHas)
				}
				if !errors.Is(err, ErrConfig) {
					t.Errorf("error %v does not wrap ErrConfig", err)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("# comment\nexport A=1\nB=\"two words\"\n\nC='x=y'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(filepath.Join(dir, "mcp.json"), []byte(`{"servers":{"s":{"command":"x","envFile":".env","env":{"A":"override"}}}}`), ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "override", "B": "two words", "C": "x=y"}
	if diff := cmp.Diff(want, cfg.Servers[0].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestFindConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindConfig(dir); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("FindConfig in an empty dir: %v, want ErrNoConfig", err)
	}
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Added from last to first preference; each addition must win.
	for _, rel := range []string{".cursor/mcp.json", ".vscode/mcp.json", "mcp.json", ".mcp.json"} {
		write(rel)
		got, err := FindConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, filepath.FromSlash(rel)); got != want {
			t.Errorf("FindConfig = %s, want %s", got, want)
		}
	}
}

func TestInputVariable(t *testing.T) {
	for in, want := range map[string]string{"gh-pat": "AGENTGATE_INPUT_GH_PAT", "apiKey": "AGENTGATE_INPUT_APIKEY", "a.b c9": "AGENTGATE_INPUT_A_B_C9"} {
		if got := InputVariable(in); got != want {
			t.Errorf("InputVariable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripJSONC(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a":"//not a comment","b":"/*nor this*/"}`, `{"a":"//not a comment","b":"/*nor this*/"}`},
		{`{"a":"\"//x"}`, `{"a":"\"//x"}`},
		{"{\"a\":1, // c\n}", "{\"a\":1      \n}"},
		{`[1,2,/* c */]`, `[1,2   ]`},
	}
	for _, tc := range tests {
		got, err := stripJSONC([]byte(tc.in))
		if err != nil {
			t.Fatalf("stripJSONC(%q): %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("stripJSONC(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := stripJSONC([]byte(`{/* open`)); err == nil {
		t.Error("unterminated comment accepted")
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["${HOME}"],"env":{"K":"${env:K}"}}}}`))
	f.Add([]byte("{\"servers\":{\"b\":{\"type\":\"http\",\"url\":\"https://x.test\",}},/* c */}"))
	f.Add([]byte(`{"mcp":{"servers":{"c":{"url":"${input:x}"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("/p/.mcp.json", data, ConfigOptions{Getenv: func(k string) string { return "v" }})
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		for i, s := range cfg.Servers {
			if i > 0 && cfg.Servers[i-1].Name >= s.Name {
				t.Fatal("servers not sorted and unique")
			}
			if (s.Transport == TransportStdio) == (s.URL != "") || (s.Command == "") == (s.Transport == TransportStdio) {
				t.Fatalf("inconsistent server %+v", s)
			}
		}
	})
}

// A config's relative stdio command and paths mean what they mean in its project folder,
// as editors start servers there, whatever directory agentgate runs in (issue 34, item 3).
func TestRelativeCommandResolvesInTheProjectFolder(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(project, "bin", "srv")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(project, ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgText := fmt.Sprintf(`{"servers":{"f":{"command":"./bin/srv","env":{%q:"ok"}}}}`, fakeServerEnv)
	if err := os.WriteFile(path, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers[0].Cwd != project {
		t.Fatalf("cwd = %q, want the project folder %q", cfg.Servers[0].Cwd, project)
	}
	l, err := ListTools(t.Context(), cfg.Servers[0], Options{Timeout: 10 * time.Second})
	if err != nil || len(l.Tools) != 3 {
		t.Fatalf("listing ./bin/srv from %s: %v", project, err)
	}
}
