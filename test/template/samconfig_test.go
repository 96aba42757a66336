package template_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// samconfig reads the committed samconfig.toml: the subset of TOML it uses (sections, and
// key = string | boolean | number lines). Anything else fails the test, which then needs a
// real parser.
func samconfig(t *testing.T) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(t), "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	section := ""
	kv := regexp.MustCompile(`^([a-z0-9_]+)\s*=\s*(.+)$`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string]string{}
		default:
			m := kv.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("samconfig.toml:%d: %q is not key = value", n, line)
			}
			v := m[2]
			if strings.HasPrefix(v, `"`) {
				if v, err = strconv.Unquote(v); err != nil {
					t.Fatalf("samconfig.toml:%d: %v", n, err)
				}
			}
			if out[section] == nil {
				out[section] = map[string]string{}
			}
			out[section][m[1]] = v
		}
	}
	return out
}

// TestSamconfig: the committed deploy defaults name a stack, acknowledge exactly the IAM
// capability the template needs, let SAM manage its bucket, confirm change sets (an update
// that would replace a table is shown before it runs), and override only parameters the
// template has, with values it accepts.
func TestSamconfig(t *testing.T) {
	cfg := samconfig(t)
	if cfg["default.global.parameters"]["stack_name"] == "" {
		t.Error("no default stack_name")
	}
	deploy := cfg["default.deploy.parameters"]
	for k, want := range map[string]string{"capabilities": "CAPABILITY_IAM", "resolve_s3": "true", "confirm_changeset": "true"} {
		if deploy[k] != want {
			t.Errorf("deploy %s = %q, want %q", k, deploy[k], want)
		}
	}
	tr := translate(t)
	params := asMap(tr.template["Parameters"])
	overrides := regexp.MustCompile(`([A-Za-z0-9]+)="((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(deploy["parameter_overrides"], -1)
	if len(overrides) == 0 {
		t.Fatalf("parameter_overrides %q names no parameter", deploy["parameter_overrides"])
	}
	set := map[string]string{}
	for _, o := range overrides {
		name, value := o[1], o[2]
		p := asMap(params[name])
		if p == nil {
			t.Errorf("parameter_overrides sets %s, which template.yaml does not have", name)
			continue
		}
		if allowed, ok := p["AllowedValues"].([]any); ok && !slices.Contains(allowed, any(value)) {
			t.Errorf("%s=%q is not one of %v", name, value, allowed)
		}
		if pat, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(`^(?:`+pat+`)$`).MatchString(value) {
			t.Errorf("%s=%q does not match %s", name, value, pat)
		}
		set[name] = value
	}
	// The example deploys a new stack as the runbook says: generated names, public pads.
	if set["ResourceNames"] != "generated" {
		t.Errorf("samconfig deploys ResourceNames=%q; a new stack wants generated", set["ResourceNames"])
	}
	// The stack needs no named IAM resources, so CAPABILITY_IAM suffices.
	_, res := defaults(t, nil)
	for _, typ := range []string{"AWS::IAM::Role", "AWS::IAM::ManagedPolicy"} {
		for _, id := range ofType(res, typ) {
			if get(res[id], "Properties", "RoleName") != nil || get(res[id], "Properties", "ManagedPolicyName") != nil {
				t.Errorf("%s has a fixed IAM name: CAPABILITY_NAMED_IAM would be needed", id)
			}
		}
	}
}
