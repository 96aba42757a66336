package gatewayconf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func kinds(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+":"+f.Tool)
	}
	return out
}

func TestVerify(t *testing.T) {
	emitted, _ := Emit(Config{Routes: []Route{{Server: "s", URL: "http://127.0.0.1:1/mcp", Approved: []string{"a", "b"}}}})
	good, _ := Parse(emitted)
	approved := map[string]string{"a": "sha256:a", "b": "sha256:b"}
	parse := func(y string) *Gateway {
		g, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tests := []struct {
		name   string
		listed []Listed
		config *Gateway
		want   []string
	}{
		{name: "all good", listed: []Listed{{Name: "a", Digest: "sha256:a"}, {Name: "b", Digest: "sha256:b"}}, config: good},
		{name: "served but not approved", listed: []Listed{{Name: "a", Digest: "sha256:a"}, {Name: "b", Digest: "sha256:b"}, {Name: "c", Digest: "sha256:c"}}, config: good,
			want: []string{"served_not_allowed:c", "served_unapproved:c"}},
		{name: "drifted and missing", listed: []Listed{{Name: "a", Digest: "sha256:x"}}, config: good,
			want: []string{"approved_missing:b", "served_drifted:a"}},
		{name: "undigestable", listed: []Listed{{Name: "a", Refused: "lone surrogate"}, {Name: "b", Digest: "sha256:b"}}, want: []string{"served_drifted:a"}},
		{name: "failOpen and allow rule missing", listed: []Listed{{Name: "a", Digest: "sha256:a"}, {Name: "b", Digest: "sha256:b"}}, config: parse(`
binds:
- port: 3000
  listeners:
  - routes:
    - name: s
      policies:
        mcpGuardrails:
          processors:
          - kind: remote
            host: 127.0.0.1:9001
            failureMode: failOpen
            methods: {"tools/*": full}
        mcpAuthorization:
          rules:
          - 'mcp.tool.name == "a"'
      backends:
      - mcp:
          targets:
          - name: s
            mcp: {host: "http://127.0.0.1:1/mcp"}
`), want: []string{"allow_rule_missing:b", "processor_not_failclosed:", "served_not_allowed:b"}},
		{name: "no processor, no rules, wrong methods elsewhere", config: parse(`
mcp:
  port: 3000
  targets:
  - name: s
    mcp: {host: "http://127.0.0.1:1/mcp"}
`), want: []string{"allow_rule_missing:", "allow_rule_missing:a", "allow_rule_missing:b", "processor_missing:"}},
		{name: "methods do not gate", config: parse(`
mcp:
  policies:
    mcpGuardrails:
      processors:
      - {kind: remote, host: "127.0.0.1:9001", failureMode: failClosed, methods: {"tools/list": request, "tools/call": response}}
    mcpAuthorization:
      rules: ['mcp.tool.name == "a"', {allow: 'mcp.tool.name == "b"'}, 'true', {deny: 'false'}]
  targets:
  - name: s
`), want: []string{"processor_methods:", "rule_unverifiable:"}},
		{name: "no route", config: parse(`binds: []`), want: []string{"route_missing:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := kinds(Verify(Expectation{Server: "s", Approved: approved, Listed: tc.listed, Config: tc.config}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveMethod(t *testing.T) {
	m := map[string]string{"*": "off", "tools/*": "full", "*/list": "response", "tools/call": "request", "t*": "x"}
	tests := map[string]string{"tools/call": "request", "tools/list": "full", "prompts/list": "response", "initialize": "off"}
	for method, want := range tests {
		if got := ResolveMethod(m, method); got != want {
			t.Errorf("%s: %q, want %q", method, got, want)
		}
	}
	if got := ResolveMethod(map[string]string{"tools/*": "full", "tools/c*": "x"}, "tools/call"); got != "full" {
		t.Errorf("non-pattern treated as pattern: %q", got)
	}
	if got := ResolveMethod(nil, "tools/call"); got != "" {
		t.Errorf("empty map: %q", got)
	}
}

func FuzzParse(f *testing.F) {
	out, _ := Emit(exampleConfig())
	f.Add(out)
	f.Add([]byte("mcp: {targets: [{name: a}], policies: {mcpAuthorization: {rules: [{allow: x}]}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err == nil {
			for _, r := range g.Routes {
				_ = Verify(Expectation{Server: "a", Config: g, Listed: []Listed{{Name: "x"}}})
				_ = r
			}
		}
	})
}
