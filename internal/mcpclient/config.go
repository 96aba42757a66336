package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/localfile"
)

// Errors returned by this package. Callers test them with errors.Is.
var (
	// ErrNoConfig means none of the default configuration files exists.
	ErrNoConfig = errors.New("no MCP client configuration found")
	// ErrConfig means a configuration file could not be read or is not a valid MCP client
	// configuration; nothing was started.
	ErrConfig = errors.New("invalid MCP client configuration")
	// ErrUnavailable means a server could not be started or reached, or did not answer in time.
	ErrUnavailable = errors.New("server unavailable")
	// ErrProtocol means a server answered, but not with a valid MCP tool listing.
	ErrProtocol = errors.New("invalid server response")
)

// DefaultConfigNames are the files [FindConfig] looks for, in order, relative to a project
// directory.
var DefaultConfigNames = []string{".mcp.json", "mcp.json", filepath.Join(".vscode", "mcp.json"), filepath.Join(".cursor", "mcp.json")}

// Transport selects how a server is reached.
type Transport string

const (
	// TransportStdio runs Command as a child process and speaks MCP over its stdin/stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks Streamable HTTP to URL and, if the server refuses that the way a
	// legacy HTTP+SSE server does, falls back to SSE. It is the default for URL servers.
	TransportHTTP Transport = "http"
	// TransportSSE speaks only the legacy HTTP+SSE transport (protocol 2024-11-05) to URL.
	TransportSSE Transport = "sse"
)

// Format names the shape of a configuration file.
type Format string

const (
	// FormatMCPServers is the "mcpServers" object of Claude Desktop, Claude Code and Cursor.
	FormatMCPServers Format = "mcpServers"
	// FormatVSCode is the "servers" object of VS Code's mcp.json (or "mcp.servers" in settings).
	FormatVSCode Format = "servers"
)

// Server is one MCP server from a client configuration, with every variable reference
// already resolved.
type Server struct {
	// Name is the key of the server in the configuration.
	Name string
	// Transport is TransportStdio when Command is set, otherwise TransportHTTP or TransportSSE.
	Transport Transport

	// Command is the program to run for a stdio server, looked up on PATH when it has no
	// directory part.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env holds variables added to (or overriding) the inherited environment of the child.
	Env map[string]string
	// Cwd is the child's working directory: the config's "cwd" (relative to the workspace
	// folder), else the workspace folder itself, as editors start servers; empty (the
	// caller's working directory) only for a Server built by hand.
	Cwd string

	// URL is the endpoint of a remote server.
	URL string
	// Headers are added to every HTTP request to URL (for example Authorization). They are
	// never logged or included in errors.
	Headers map[string]string
}

// Config is a parsed MCP client configuration.
type Config struct {
	// Path is the file the configuration was read from.
	Path string
	// Format is the shape the file used.
	Format Format
	// Servers are the enabled servers, sorted by Name.
	Servers []Server
	// Skipped names servers that the file marks "disabled": true; they are not listed.
	Skipped []string
}

// Server returns the server with the given name.
func (c *Config) Server(name string) (Server, bool) {
	for _, s := range c.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// Names returns the names of the configured servers, sorted.
func (c *Config) Names() []string {
	names := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		names[i] = s.Name
	}
	return names
}

// ConfigOptions says how variable references in a configuration are resolved.
type ConfigOptions struct {
	// Getenv resolves ${env:NAME}, ${NAME}, ${NAME:-default} and ${input:ID} (through the
	// variable AGENTGATE_INPUT_<ID>). Nil means no variable is set.
	Getenv func(string) string
	// HomeDir resolves ${userHome}. Empty means Getenv("HOME").
	HomeDir string
}

// FindConfig returns the first of [DefaultConfigNames] that exists in dir, or an error
// wrapping [ErrNoConfig] that names every file it looked for.
func FindConfig(dir string) (string, error) {
	for _, name := range DefaultConfigNames {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: looked for %s in %s; pass --config PATH", ErrNoConfig, strings.Join(DefaultConfigNames, ", "), dir)
}

// MaxConfigBytes bounds a configuration or envFile: larger than any real one.
const MaxConfigBytes = 16 << 20

// LoadConfig reads and parses the configuration file at path, a regular file (localfile:
// no device, FIFO, or symbolic link out of its repository) of at most MaxConfigBytes. See
// [ParseConfig].
func LoadConfig(path string, opts ConfigOptions) (*Config, error) {
	data, err := localfile.Read(path, MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, pathErr(err))
	}
	return ParseConfig(path, data, opts)
}

// ParseConfig parses a configuration read from path. path locates the workspace folder
// (the parent of a .vscode or .cursor directory, otherwise the file's directory), which
// relative cwd values and ${workspaceFolder} refer to.
//
// The file may contain // and /* */ comments and trailing commas, as VS Code allows. Keys
// other than the ones a listing needs (alwaysAllow, autoApprove, timeout, ...) are ignored.
//
// In command, args, env, envFile, cwd, url and headers these references are resolved:
// ${env:NAME} (empty when unset, as VS Code does), ${NAME} and ${NAME:-default} (an error
// when NAME is unset and has no default, as Claude Code does), ${workspaceFolder},
// ${workspaceFolderBasename}, ${userHome}, ${pathSeparator} and ${/}. ${input:ID} — a VS Code
// prompt — is taken from the variable AGENTGATE_INPUT_<ID> (ID upper-cased, other
// characters than letters and digits replaced by _) and refused when that is unset, since
// nothing here can prompt. Any other reference is refused.
//
// Errors wrap [ErrConfig], name the file and the server, and are reported all together.
func ParseConfig(path string, data []byte, opts ConfigOptions) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrConfig, path, jsonErr(err, clean))
	}
	if top == nil {
		return nil, fmt.Errorf("%w: %s: the top level is not a JSON object", ErrConfig, path)
	}
	var (
		format  Format
		servers json.RawMessage
	)
	_, hasMCP := top["mcpServers"]
	_, hasVS := top["servers"]
	switch {
	case hasMCP && hasVS:
		return nil, fmt.Errorf("%w: %s: has both \"mcpServers\" and \"servers\"; keep one", ErrConfig, path)
	case hasMCP:
		format, servers = FormatMCPServers, top["mcpServers"]
	case hasVS:
		format, servers = FormatVSCode, top["servers"]
	default:
		if raw, ok := top["mcp"]; ok {
			var nested map[string]json.RawMessage
			if json.Unmarshal(raw, &nested) == nil && nested["servers"] != nil {
				format, servers = FormatVSCode, nested["servers"]
			}
		}
		if format == "" {
			return nil, fmt.Errorf("%w: %s: no \"mcpServers\" or \"servers\" object; is this an MCP client configuration?", ErrConfig, path)
		}
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(servers, &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%w: %s: %q must be an object of servers", ErrConfig, path, string(format))
	}

	x := &expander{
		getenv:    opts.Getenv,
		home:      opts.HomeDir,
		workspace: workspaceFolder(abs),
	}
	if x.getenv == nil {
		x.getenv = func(string) string { return "" }
	}
	if x.home == "" {
		x.home = x.getenv("HOME")
	}

	cfg := &Config{Path: path, Format: format}
	var errs []error
	for name, raw := range entries {
		s, disabled, err := parseServer(name, raw, x)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: server %q: %v", ErrConfig, path, name, err))
			continue
		}
		if disabled {
			cfg.Skipped = append(cfg.Skipped, name)
			continue
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errors.Join(errs...)
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	sort.Strings(cfg.Skipped)
	return cfg, nil
}

// rawServer is the union of the stdio and remote server shapes of both formats.
type rawServer struct {
	Type     *string            `json:"type"`
	Command  *string            `json:"command"`
	Args     []string           `json:"args"`
	Env      map[string]*string `json:"env"`
	EnvFile  *string            `json:"envFile"`
	Cwd      *string            `json:"cwd"`
	URL      *string            `json:"url"`
	Headers  map[string]string  `json:"headers"`
	Disabled *bool              `json:"disabled"`
}

func parseServer(name string, raw json.RawMessage, x *expander) (s Server, disabled bool, err error) {
	if name == "" {
		return s, false, errors.New("the server name is empty")
	}
	// encoding/json matches keys case-insensitively; MCP configs are case-sensitive, so the
	// exact keys are checked first.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return s, false, errors.New("is not a JSON object")
	}
	var r rawServer
	for k, v := range keys {
		if !knownServerKey(k) {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: v})
		if err := json.Unmarshal(one, &r); err != nil {
			return s, false, fmt.Errorf("%q has the wrong type: %s", k, typeHint(k))
		}
	}
	if r.Disabled != nil && *r.Disabled {
		return s, true, nil
	}
	s.Name = name
	typ := ""
	if r.Type != nil {
		typ = *r.Type
	}
	hasCmd := r.Command != nil
	hasURL := r.URL != nil
	switch {
	case hasCmd && hasURL:
		return s, false, errors.New("has both \"command\" and \"url\"; keep one")
	case !hasCmd && !hasURL:
		return s, false, errors.New("has neither \"command\" (stdio) nor \"url\" (remote)")
	}
	if hasCmd {
		if typ != "" && typ != "stdio" {
			return s, false, fmt.Errorf("\"type\": %q does not fit a \"command\" server (use \"stdio\")", typ)
		}
		s.Transport = TransportStdio
		if s.Command, err = x.expand(*r.Command, "command"); err != nil {
			return s, false, err
		}
		if strings.TrimSpace(s.Command) == "" {
			return s, false, errors.New("\"command\" is empty")
		}
		for i, a := range r.Args {
			v, err := x.expand(a, fmt.Sprintf("args[%d]", i))
			if err != nil {
				return s, false, err
			}
			s.Args = append(s.Args, v)
		}
		env := map[string]string{}
		if r.EnvFile != nil {
			p, err := x.expand(*r.EnvFile, "envFile")
			if err != nil {
				return s, false, err
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(x.workspace, p)
			}
			if err := readEnvFile(p, env); err != nil {
				return s, false, err
			}
		}
		for k, v := range r.Env {
			if v == nil {
				continue
			}
			ev, err := x.expand(*v, "env."+k)
			if err != nil {
				return s, false, err
			}
			env[k] = ev
		}
		if len(env) > 0 {
			s.Env = env
		}
		if r.Cwd != nil {
			cwd, err := x.expand(*r.Cwd, "cwd")
			if err != nil {
				return s, false, err
			}
			if cwd != "" && !filepath.IsAbs(cwd) {
				cwd = filepath.Join(x.workspace, cwd)
			}
			s.Cwd = cwd
		} else {
			// As editors start it: in the project folder, so that a relative command
			// (./bin/server) and relative paths in args mean what they mean there.
			s.Cwd = x.workspace
		}
		return s, false, nil
	}

	switch typ {
	case "", "http", "streamable-http", "streamableHttp", "streamable_http":
		s.Transport = TransportHTTP
	case "sse":
		s.Transport = TransportSSE
	default:
		return s, false, fmt.Errorf("\"type\": %q is not a remote transport (use \"http\" or \"sse\")", typ)
	}
	if s.URL, err = x.expand(*r.URL, "url"); err != nil {
		return s, false, err
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, false, errors.New("\"url\" must be an absolute http:// or https:// URL")
	}
	for k, v := range r.Headers {
		hv, err := x.expand(v, "headers."+k)
		if err != nil {
			return s, false, err
		}
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[k] = hv
	}
	return s, false, nil
}

func knownServerKey(k string) bool {
	switch k {
	case "type", "command", "args", "env", "envFile", "cwd", "url", "headers", "disabled":
		return true
	}
	return false
}

func typeHint(k string) string {
	switch k {
	case "args":
		return "want an array of strings"
	case "env", "headers":
		return "want an object of strings"
	case "disabled":
		return "want true or false"
	}
	return "want a string"
}

// workspaceFolder is the project directory a configuration file belongs to.
func workspaceFolder(absPath string) string {
	dir := filepath.Dir(absPath)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(dir)
	}
	return dir
}

// readEnvFile reads KEY=VALUE lines (with optional "export ", # comments and quotes) into env.
func readEnvFile(path string, env map[string]string) error {
	data, err := localfile.Read(path, MaxConfigBytes)
	if err != nil {
		return fmt.Errorf("envFile: %v", pathErr(err))
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("envFile %s:%d: want KEY=VALUE", path, i+1)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return nil
}

// pathErr drops the "open PATH:" prefix the caller already prints.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// jsonErr turns a decoding error into a message with a line and column.
func jsonErr(err error, data []byte) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, int(se.Offset))
		return fmt.Sprintf("line %d, column %d: %v", line, col, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := lineCol(data, int(te.Offset))
		return fmt.Sprintf("line %d, column %d: %v", line, col, te)
	}
	return err.Error()
}

func lineCol(data []byte, off int) (int, int) {
	off = max(0, min(off, len(data)))
	prefix := data[:off]
	line := bytes.Count(prefix, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

func sortErrors(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}
