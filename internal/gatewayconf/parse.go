package gatewayconf

import (
	"errors"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// Gateway is what verify-gateway reads from an agentgateway standalone configuration:
// the MCP routes with their targets, processors and authorization rules. Everything
// else in the file is ignored.
type Gateway struct {
	Routes []GatewayRoute
}

// GatewayRoute is one route serving MCP targets.
type GatewayRoute struct {
	// Name is the route's name ("" if unnamed; "mcp" for the top-level mcp shorthand).
	Name string
	// Paths are the route's path matches (prefixes and exact paths).
	Paths []string
	// Targets are the MCP targets of the route's backends.
	Targets []Target
	// Processors are the mcpGuardrails processors in force: the most specific level's list
	// (a backend's replaces the route's), as the gateway resolves them.
	Processors []Processor
	// Rules are the mcpAuthorization rules of the route and its backends combined.
	Rules []Rule
}

// Target is one MCP target.
type Target struct {
	Name string
	// Host is the upstream URL of an mcp target ("" for stdio and other kinds).
	Host string
}

// Processor is one mcpGuardrails processor.
type Processor struct {
	Kind string
	// Host, Backend or Service names the processor (exactly one in a valid config).
	Host, Backend, Service string
	// FailureMode is as written: "failClosed", "failOpen" or "" (the gateway's default,
	// failClosed).
	FailureMode string
	// Methods is the methods map: pattern → off|request|response|full.
	Methods map[string]string
	// RequestTimeout is policies.http.requestTimeout as written ("" when unset).
	RequestTimeout string
}

// Rule is one mcpAuthorization rule.
type Rule struct {
	// Effect is allow, deny or require (a bare CEL string is an allow rule).
	Effect string
	Expr   string
}

// Route returns the route whose only target is named server, or false.
func (g *Gateway) Route(server string) (GatewayRoute, bool) {
	for _, r := range g.Routes {
		if slices.ContainsFunc(r.Targets, func(t Target) bool { return t.Name == server }) {
			return r, true
		}
	}
	return GatewayRoute{}, false
}

type pTarget struct {
	Name string `yaml:"name"`
	MCP  *struct {
		Host string `yaml:"host"`
	} `yaml:"mcp"`
}

type pPolicies struct {
	MCPGuardrails *struct {
		Processors []struct {
			Kind        string            `yaml:"kind"`
			Host        string            `yaml:"host"`
			Backend     string            `yaml:"backend"`
			Service     *yaml.Node        `yaml:"service"`
			FailureMode string            `yaml:"failureMode"`
			Methods     map[string]string `yaml:"methods"`
			Policies    *struct {
				HTTP *struct {
					RequestTimeout string `yaml:"requestTimeout"`
				} `yaml:"http"`
			} `yaml:"policies"`
		} `yaml:"processors"`
	} `yaml:"mcpGuardrails"`
	MCPAuthorization *struct {
		Rules []yaml.Node `yaml:"rules"`
	} `yaml:"mcpAuthorization"`
}

type pMCP struct {
	Targets []pTarget `yaml:"targets"`
}

type pRoute struct {
	Name    string `yaml:"name"`
	Matches []struct {
		Path *struct {
			PathPrefix string `yaml:"pathPrefix"`
			Exact      string `yaml:"exact"`
		} `yaml:"path"`
	} `yaml:"matches"`
	Policies *pPolicies `yaml:"policies"`
	Backends []struct {
		MCP      *pMCP      `yaml:"mcp"`
		Policies *pPolicies `yaml:"policies"`
	} `yaml:"backends"`
}

type pDoc struct {
	Binds []struct {
		Listeners []struct {
			Routes []pRoute `yaml:"routes"`
		} `yaml:"listeners"`
	} `yaml:"binds"`
	MCP *struct {
		Policies *pPolicies `yaml:"policies"`
		Targets  []pTarget  `yaml:"targets"`
	} `yaml:"mcp"`
}

// Parse reads the MCP routes of an agentgateway standalone configuration (the binds →
// listeners → routes form and the top-level mcp shorthand).
func Parse(data []byte) (*Gateway, error) {
	var doc pDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	g := &Gateway{}
	var errs []error
	for _, b := range doc.Binds {
		for _, l := range b.Listeners {
			for _, pr := range l.Routes {
				r := GatewayRoute{Name: pr.Name}
				for _, m := range pr.Matches {
					if m.Path != nil {
						for _, p := range []string{m.Path.PathPrefix, m.Path.Exact} {
							if p != "" {
								r.Paths = append(r.Paths, p)
							}
						}
					}
				}
				errs = append(errs, apply(&r, pr.Policies))
				for _, be := range pr.Backends {
					if be.MCP != nil {
						r.Targets = append(r.Targets, targets(be.MCP.Targets)...)
					}
					if be.Policies != nil && be.Policies.MCPGuardrails != nil {
						r.Processors = nil // the most specific mcpGuardrails wins whole
					}
					errs = append(errs, apply(&r, be.Policies))
				}
				if len(r.Targets) > 0 {
					g.Routes = append(g.Routes, r)
				}
			}
		}
	}
	if doc.MCP != nil {
		r := GatewayRoute{Name: "mcp", Targets: targets(doc.MCP.Targets)}
		errs = append(errs, apply(&r, doc.MCP.Policies))
		g.Routes = append(g.Routes, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	return g, nil
}

func targets(ts []pTarget) []Target {
	out := make([]Target, 0, len(ts))
	for _, t := range ts {
		x := Target{Name: t.Name}
		if t.MCP != nil {
			x.Host = t.MCP.Host
		}
		out = append(out, x)
	}
	return out
}

func apply(r *GatewayRoute, p *pPolicies) error {
	if p == nil {
		return nil
	}
	if p.MCPGuardrails != nil {
		r.Processors = nil
		for _, pp := range p.MCPGuardrails.Processors {
			x := Processor{Kind: pp.Kind, Host: pp.Host, Backend: pp.Backend, FailureMode: pp.FailureMode, Methods: pp.Methods}
			if pp.Service != nil {
				x.Service = "service"
			}
			if pp.Policies != nil && pp.Policies.HTTP != nil {
				x.RequestTimeout = pp.Policies.HTTP.RequestTimeout
			}
			r.Processors = append(r.Processors, x)
		}
	}
	if p.MCPAuthorization != nil {
		for _, n := range p.MCPAuthorization.Rules {
			switch n.Kind {
			case yaml.ScalarNode:
				r.Rules = append(r.Rules, Rule{Effect: "allow", Expr: n.Value})
			case yaml.MappingNode:
				var m map[string]string
				if err := n.Decode(&m); err != nil || len(m) != 1 {
					return fmt.Errorf("line %d: an mcpAuthorization rule is a CEL string or one of allow, deny, require", n.Line)
				}
				for k, v := range m {
					r.Rules = append(r.Rules, Rule{Effect: k, Expr: v})
				}
			default:
				return fmt.Errorf("line %d: an mcpAuthorization rule is a CEL string or one of allow, deny, require", n.Line)
			}
		}
	}
	return nil
}
