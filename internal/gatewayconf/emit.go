package gatewayconf

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
	"gopkg.in/yaml.v3"
)

// Defaults for [Config].
const (
	DefaultPort      = 3000
	DefaultProcessor = "127.0.0.1:9001"
	DefaultTimeout   = 2 * time.Second
	DefaultListener  = "toolwarrant"
)

// Route is one upstream server as emit writes it: its own route, its own processor call
// and one allow rule per approved tool.
type Route struct {
	// Server is the catalog's name of the upstream: the route name, the MCP target name
	// (so the processor's service_names match the catalog) and the path prefix /<Server>/.
	Server string
	// URL is the upstream's Streamable HTTP endpoint.
	URL string
	// Approved are the names of the tools with an approved digest. Empty means nothing is
	// allowed (emit writes a rule that matches no tool, not "no rules", which would allow
	// everything).
	Approved []string
	// Processor overrides Config.Processor for this route (one processor per upstream).
	Processor string
}

// Config is the input of [Emit]. Zero values take the documented defaults.
type Config struct {
	// Port is the gateway's listening port. Default DefaultPort.
	Port int
	// Processor is the host:port of `toolwarrant serve` (h2c). Default DefaultProcessor.
	Processor string
	// Timeout is the gateway's request timeout for one processor call. Default
	// DefaultTimeout (the gateway's own default is 10 s).
	Timeout time.Duration
	// Routes are the upstreams, in any order (emit sorts them by Server).
	Routes []Route
}

// ProcessorMethods is the methods map emit writes and verify-gateway requires: filter
// every tools/list result, gate every tools/call request.
var ProcessorMethods = map[string]string{"tools/call": "request", "tools/list": "response"}

// NoToolRule is the allow rule of a route with no approved tool: it matches nothing, so
// the gateway denies every tool (an empty rule list would allow them all).
const NoToolRule = "false"

// AllowRule returns the CEL allow rule for one tool: mcp.tool.name == "<name>", the name
// written as a CEL string literal.
func AllowRule(tool string) string { return "mcp.tool.name == " + celString(tool) }

// celString quotes s as a CEL double-quoted string literal. strconv.Quote's escapes
// (\a \b \f \n \r \t \v \\ \" \xHH \uHHHH \UHHHHHHHH) are all CEL escapes.
func celString(s string) string { return strconv.Quote(s) }

// PathPrefix is the route's path prefix for a server: clients connect to
// http://GATEWAY:PORT/<server>/mcp.
func PathPrefix(server string) string { return "/" + server + "/" }

// Emit returns the agentgateway standalone configuration for cfg. The output is
// deterministic: the same input gives the same bytes.
func Emit(cfg Config) ([]byte, error) {
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Processor == "" {
		cfg.Processor = DefaultProcessor
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	var errs []error
	if cfg.Port < 1 || cfg.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is not a TCP port", cfg.Port))
	}
	if cfg.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("processor timeout %s is too short", cfg.Timeout))
	}
	routes := slices.Clone(cfg.Routes)
	slices.SortFunc(routes, func(a, b Route) int { return strings.Compare(a.Server, b.Server) })
	for i, r := range routes {
		if warrant.ValidateServerName(r.Server) != nil { // a catalog's server name: a path segment as it is
			errs = append(errs, fmt.Errorf("server name %q cannot name a route", r.Server))
		}
		if i > 0 && routes[i-1].Server == r.Server {
			errs = append(errs, fmt.Errorf("server %q given twice", r.Server))
		}
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("server %q: upstream URL %q is not an http(s) URL", r.Server, r.URL))
		}
		if r.Processor != "" {
			if err := checkHostPort(r.Processor); err != nil {
				errs = append(errs, fmt.Errorf("server %q: processor: %w", r.Server, err))
			}
		}
	}
	if err := checkHostPort(cfg.Processor); err != nil {
		errs = append(errs, fmt.Errorf("processor: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	doc := yDoc{Binds: []yBind{{Port: cfg.Port, Listeners: []yListener{{Name: DefaultListener}}}}}
	for _, r := range routes {
		approved := slices.Clone(r.Approved)
		slices.Sort(approved)
		approved = slices.Compact(approved)
		rules := make([]string, 0, len(approved))
		for _, t := range approved {
			rules = append(rules, AllowRule(t))
		}
		if len(rules) == 0 {
			rules = []string{NoToolRule}
		}
		host := cfg.Processor
		if r.Processor != "" {
			host = r.Processor
		}
		doc.Binds[0].Listeners[0].Routes = append(doc.Binds[0].Listeners[0].Routes, yRoute{
			Name:    r.Server,
			Matches: []yMatch{{Path: yPath{PathPrefix: PathPrefix(r.Server)}}},
			Policies: yPolicies{
				MCPGuardrails: &yGuardrails{Processors: []yProcessor{{
					Kind:           "remote",
					Host:           host,
					FailureMode:    "failClosed",
					Policies:       &yProcPolicies{HTTP: &yHTTP{RequestTimeout: cfg.Timeout.String()}},
					RequestHeaders: &yHeaders{Disallowed: []string{"authorization", "cookie"}},
					Methods:        yMethods{ToolsCall: ProcessorMethods["tools/call"], ToolsList: ProcessorMethods["tools/list"]},
				}}},
				MCPAuthorization: &yAuthz{Rules: rules},
			},
			Backends: []yBackend{{MCP: &yMCP{Targets: []yTarget{{Name: r.Server, MCP: &yTargetMCP{Host: r.URL}}}}}},
		})
	}
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode gateway config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

const header = `# agentgateway standalone configuration written by 'toolwarrant emit'. Do not edit by hand:
# re-run emit after every approval, rejection or rollback, then reload the gateway.
#
# One route per upstream server. Each route's mcpGuardrails processor is toolwarrant serve
# (failClosed: if it cannot be reached the gateway denies), called on every tools/list
# response (unapproved definitions are removed) and every tools/call request (denied unless
# the listing and the last crawl both match the approval). Each route's mcpAuthorization
# allows exactly the approved tools by name, so the gateway itself drops anything else even
# if the processor were misconfigured. Clients connect to http://HOST:PORT/<server>/mcp.
`

func checkHostPort(hp string) error {
	host, port, err := splitHostPort(hp)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", hp)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has no valid port", hp)
	}
	return nil
}

func splitHostPort(hp string) (string, string, error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 || strings.Contains(hp, "/") {
		return "", "", errors.New("no port")
	}
	return strings.Trim(hp[:i], "[]"), hp[i+1:], nil
}

// The YAML document, field order as written.
type yDoc struct {
	Binds []yBind `yaml:"binds"`
}

type yBind struct {
	Port      int         `yaml:"port"`
	Listeners []yListener `yaml:"listeners"`
}

type yListener struct {
	Name   string   `yaml:"name"`
	Routes []yRoute `yaml:"routes"`
}

type yRoute struct {
	Name     string     `yaml:"name"`
	Matches  []yMatch   `yaml:"matches"`
	Policies yPolicies  `yaml:"policies"`
	Backends []yBackend `yaml:"backends"`
}

type yMatch struct {
	Path yPath `yaml:"path"`
}

type yPath struct {
	PathPrefix string `yaml:"pathPrefix"`
}

type yPolicies struct {
	MCPGuardrails    *yGuardrails `yaml:"mcpGuardrails,omitempty"`
	MCPAuthorization *yAuthz      `yaml:"mcpAuthorization,omitempty"`
}

type yGuardrails struct {
	Processors []yProcessor `yaml:"processors"`
}

type yProcessor struct {
	Kind           string         `yaml:"kind"`
	Host           string         `yaml:"host"`
	FailureMode    string         `yaml:"failureMode"`
	Policies       *yProcPolicies `yaml:"policies,omitempty"`
	RequestHeaders *yHeaders      `yaml:"requestHeaders,omitempty"`
	Methods        yMethods       `yaml:"methods"`
}

type yProcPolicies struct {
	HTTP *yHTTP `yaml:"http,omitempty"`
}

type yHTTP struct {
	RequestTimeout string `yaml:"requestTimeout"`
}

type yHeaders struct {
	Disallowed []string `yaml:"disallowed"`
}

type yMethods struct {
	ToolsCall string `yaml:"tools/call"`
	ToolsList string `yaml:"tools/list"`
}

type yAuthz struct {
	Rules []string `yaml:"rules"`
}

type yBackend struct {
	MCP *yMCP `yaml:"mcp"`
}

type yMCP struct {
	Targets []yTarget `yaml:"targets"`
}

type yTarget struct {
	Name string      `yaml:"name"`
	MCP  *yTargetMCP `yaml:"mcp"`
}

type yTargetMCP struct {
	Host string `yaml:"host"`
}
