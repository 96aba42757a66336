package gatewayconf

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Finding kinds, stable names used in verify-gateway's --json output.
const (
	// KindServedUnapproved: the gateway lists a tool that has no approved digest.
	KindServedUnapproved = "served_unapproved"
	// KindServedDrifted: the gateway lists a tool with a definition other than the
	// approved one (or one that cannot be digested).
	KindServedDrifted = "served_drifted"
	// KindApprovedMissing: an approved tool is not in the gateway's listing (it drifted
	// upstream and the processor dropped it, or the upstream no longer serves it).
	KindApprovedMissing = "approved_missing"
	// KindServedNotAllowed: the gateway lists a tool that the configuration's allow rules
	// do not allow: the gateway is not running this configuration.
	KindServedNotAllowed = "served_not_allowed"
	// KindRouteMissing: the configuration has no route for the server.
	KindRouteMissing = "route_missing"
	// KindProcessorMissing: the server's route calls no mcpGuardrails processor.
	KindProcessorMissing = "processor_missing"
	// KindNotFailClosed: a processor of the route is not explicitly failClosed.
	KindNotFailClosed = "processor_not_failclosed"
	// KindMethods: no processor filters tools/list responses and gates tools/call requests.
	KindMethods = "processor_methods"
	// KindAllowRuleMissing: an approved tool has no allow rule on the route.
	KindAllowRuleMissing = "allow_rule_missing"
	// KindAllowRuleUnapproved: the route allows a tool that is not approved.
	KindAllowRuleUnapproved = "allow_rule_unapproved"
	// KindRuleUnverifiable: a rule is not of the form emit writes, so what it allows
	// cannot be checked.
	KindRuleUnverifiable = "rule_unverifiable"
)

// Finding is one mismatch between the live gateway, the catalog and the configuration.
type Finding struct {
	Kind   string `json:"kind"`
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	Detail string `json:"detail"`
}

// Listed is one tool as the live gateway listed it.
type Listed struct {
	Name string
	// Digest is its live digest; "" when it could not be digested (Refused says why).
	Digest  string
	Refused string
}

// Expectation is what [Verify] compares.
type Expectation struct {
	// Server is the catalog's (and the gateway target's) name.
	Server string
	// Approved maps each approved tool to its approved digest (the catalog's approved set).
	Approved map[string]string
	// Listed is what tools/list through the gateway returned (nil: not listed).
	Listed []Listed
	// Config is the gateway's configuration (nil: not checked).
	Config *Gateway
}

// Verify returns every mismatch, sorted by kind then tool.
func Verify(e Expectation) []Finding {
	var out []Finding
	add := func(kind, tool, format string, a ...any) {
		out = append(out, Finding{Kind: kind, Server: e.Server, Tool: tool, Detail: fmt.Sprintf(format, a...)})
	}
	if e.Listed != nil {
		seen := map[string]bool{}
		for _, l := range e.Listed {
			seen[l.Name] = true
			want, ok := e.Approved[l.Name]
			switch {
			case !ok:
				add(KindServedUnapproved, l.Name, "the gateway serves %q, which has no approved definition", l.Name)
			case l.Digest == "":
				add(KindServedDrifted, l.Name, "the gateway serves %q with a definition that cannot be digested (%s)", l.Name, l.Refused)
			case l.Digest != want:
				add(KindServedDrifted, l.Name, "the gateway serves %q as %s, approved is %s", l.Name, l.Digest, want)
			}
		}
		for tool := range e.Approved {
			if !seen[tool] {
				add(KindApprovedMissing, tool, "approved tool %q is not in the gateway's listing (drifted upstream, removed, or filtered)", tool)
			}
		}
	}
	if e.Config != nil {
		r, ok := e.Config.Route(e.Server)
		if !ok {
			add(KindRouteMissing, "", "the gateway configuration has no route with a target named %q", e.Server)
		} else {
			out = append(out, checkRoute(e, r)...)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Tool, b.Tool))
	})
	return out
}

func checkRoute(e Expectation, r GatewayRoute) []Finding {
	var out []Finding
	add := func(kind, tool, format string, a ...any) {
		out = append(out, Finding{Kind: kind, Server: e.Server, Tool: tool, Detail: fmt.Sprintf(format, a...)})
	}
	if len(r.Targets) != 1 {
		add(KindRouteMissing, "", "route %q multiplexes %d targets; emit writes one route per server", r.Name, len(r.Targets))
	}
	if len(r.Processors) == 0 {
		add(KindProcessorMissing, "", "route %q calls no mcpGuardrails processor: unapproved definitions are not filtered", r.Name)
	}
	gates := false
	for i, p := range r.Processors {
		if p.FailureMode != "failClosed" {
			mode := p.FailureMode
			if mode == "" {
				mode = "unset (the gateway's default)"
			}
			add(KindNotFailClosed, "", "route %q processor %d (%s) has failureMode %s; set failureMode: failClosed", r.Name, i+1, p.Host+p.Backend+p.Service, mode)
		}
		list, call := ResolveMethod(p.Methods, "tools/list"), ResolveMethod(p.Methods, "tools/call")
		if (list == "response" || list == "full") && (call == "request" || call == "full") {
			gates = true
		}
	}
	if len(r.Processors) > 0 && !gates {
		add(KindMethods, "", "no processor of route %q has methods tools/list: response and tools/call: request", r.Name)
	}

	allowed := map[string]bool{}
	unverifiable := false
	for _, rule := range r.Rules {
		if rule.Effect != "allow" {
			continue // deny and require rules only narrow what is allowed
		}
		if rule.Expr == NoToolRule {
			continue
		}
		if tool, ok := ParseAllowRule(rule.Expr); ok {
			allowed[tool] = true
			continue
		}
		unverifiable = true
		add(KindRuleUnverifiable, "", "route %q allow rule %q is not of the form mcp.tool.name == \"TOOL\"", r.Name, rule.Expr)
	}
	if len(r.Rules) == 0 {
		add(KindAllowRuleMissing, "", "route %q has no mcpAuthorization rules: the gateway allows every tool", r.Name)
	}
	for tool := range e.Approved {
		if !allowed[tool] {
			add(KindAllowRuleMissing, tool, "approved tool %q has no allow rule on route %q (re-run emit)", tool, r.Name)
		}
	}
	for tool := range allowed {
		if _, ok := e.Approved[tool]; !ok {
			add(KindAllowRuleUnapproved, tool, "route %q allows %q, which is not approved (re-run emit)", r.Name, tool)
		}
	}
	if !unverifiable && len(r.Rules) > 0 {
		for _, l := range e.Listed {
			if !allowed[l.Name] {
				add(KindServedNotAllowed, l.Name, "the gateway serves %q although route %q does not allow it: is it running this configuration?", l.Name, r.Name)
			}
		}
	}
	return out
}

// ParseAllowRule recognizes the rule [AllowRule] writes and returns the tool it allows.
func ParseAllowRule(expr string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "mcp.tool.name == ")
	if !ok {
		return "", false
	}
	tool, err := strconv.Unquote(rest)
	if err != nil || !strings.HasPrefix(rest, `"`) {
		return "", false
	}
	return tool, true
}

// ResolveMethod returns the phase ("off", "request", "response", "full", or "" when no
// pattern matches) that a methods map gives method, with agentgateway's precedence: an
// exact name, then "prefix/*", then "*/suffix", then "*"; a longer pattern beats a shorter
// one of the same kind; remaining ties go to the alphabetically first.
func ResolveMethod(methods map[string]string, method string) string {
	if v, ok := methods[method]; ok {
		return v
	}
	type cand struct {
		kind int
		pat  string
	}
	var best *cand
	for pat := range methods {
		var c cand
		switch {
		case pat == "*":
			c = cand{3, pat}
		case strings.HasSuffix(pat, "/*") && strings.HasPrefix(method, strings.TrimSuffix(pat, "*")):
			c = cand{1, pat}
		case strings.HasPrefix(pat, "*/") && strings.HasSuffix(method, strings.TrimPrefix(pat, "*")):
			c = cand{2, pat}
		default:
			continue
		}
		if best == nil || c.kind < best.kind || c.kind == best.kind && (len(c.pat) > len(best.pat) || len(c.pat) == len(best.pat) && c.pat < best.pat) {
			best = &c
		}
	}
	if best == nil {
		return ""
	}
	return methods[best.pat]
}
