package template_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// region is one AWS region as botocore knows it.
type region struct {
	Name      string `json:"name"`
	Partition string `json:"partition"`
	DNSSuffix string `json:"dnsSuffix"`
}

type translation struct {
	template map[string]any
	regions  []region
}

var (
	translateOnce sync.Once
	translated    translation
	translateErr  error
	translateSkip string
)

// translate returns template.yaml translated by samtranslator (translate.py), once per test
// binary: the translation does not depend on parameter values (SAM passes conditions and
// parameter references through), which the tests evaluate themselves with stack().
func translate(t *testing.T) translation {
	t.Helper()
	translateOnce.Do(func() {
		py, err := exec.LookPath("python3")
		if err != nil {
			translateSkip = "python3 is not on PATH"
			return
		}
		root := testenv.RepoRoot(t)
		tmpl := filepath.Join(root, "template.yaml")
		if _, err := os.ReadFile(tmpl); err != nil { // also makes go test's cache notice edits
			translateErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, filepath.Join(root, "test", "template", "translate.py"), tmpl, "us-east-1", "123456789012")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			translateSkip = strings.TrimSpace(stderr.String())
			return
		}
		if err != nil {
			translateErr = fmt.Errorf("translate.py: %v\n%s", err, stderr.String())
			return
		}
		var out struct {
			Template map[string]any `json:"template"`
			Regions  []region       `json:"regions"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			translateErr = fmt.Errorf("translate.py output: %v", err)
			return
		}
		translated = translation{template: out.Template, regions: out.Regions}
	})
	if translateSkip != "" {
		testenv.Missing(t, testenv.External, translateSkip+" (samtranslator comes with cfn-lint: pip install cfn-lint)")
	}
	if translateErr != nil {
		t.Fatal(translateErr)
	}
	return translated
}

// noValue is what AWS::NoValue evaluates to: the key or element is dropped.
type noValue struct{}

// stack evaluates a translated template as CloudFormation would for one set of parameter
// values, as far as the tests need: parameters and pseudo parameters, conditions, Fn::If,
// AWS::NoValue, and (to a string) Ref, Fn::Sub and Fn::Join over those. References to
// resources are left as they are, to be compared by logical ID.
type stack struct {
	t      *testing.T
	params map[string]string
	tmpl   map[string]any
	conds  map[string]bool
}

// newStack evaluates tr's template with the parameters' defaults, overridden by params, in
// region reg under stack name name.
func newStack(t *testing.T, tr translation, reg region, name string, params map[string]string) *stack {
	t.Helper()
	s := &stack{t: t, params: map[string]string{}, tmpl: tr.template, conds: map[string]bool{}}
	for n, p := range asMap(tr.template["Parameters"]) {
		if d, ok := asMap(p)["Default"]; ok {
			s.params[n] = fmt.Sprint(d)
		}
	}
	for n, v := range params {
		if _, ok := asMap(tr.template["Parameters"])[n]; !ok {
			t.Fatalf("no parameter %s", n)
		}
		s.params[n] = v
	}
	s.params["AWS::Region"] = reg.Name
	s.params["AWS::Partition"] = reg.Partition
	s.params["AWS::URLSuffix"] = reg.DNSSuffix
	s.params["AWS::AccountId"] = "123456789012"
	s.params["AWS::StackName"] = name
	s.params["AWS::StackId"] = "arn:" + reg.Partition + ":cloudformation:" + reg.Name + ":123456789012:stack/" + name + "/00000000-0000-0000-0000-000000000000"
	return s
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// cond evaluates the named condition.
func (s *stack) cond(name string) bool {
	s.t.Helper()
	if v, ok := s.conds[name]; ok {
		return v
	}
	def, ok := asMap(s.tmpl["Conditions"])[name]
	if !ok {
		s.t.Fatalf("no condition %s", name)
	}
	v := s.condExpr(def)
	s.conds[name] = v
	return v
}

func (s *stack) condExpr(v any) bool {
	s.t.Helper()
	m := asMap(v)
	if len(m) != 1 {
		s.t.Fatalf("condition %v is not one function", v)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return s.cond(arg.(string))
		case "Fn::Equals":
			return s.str(args[0]) == s.str(args[1])
		case "Fn::Not":
			return !s.condExpr(args[0])
		case "Fn::And", "Fn::Or":
			want := fn == "Fn::Or"
			for _, a := range args {
				if s.condExpr(a) == want {
					return want
				}
			}
			return !want
		}
		s.t.Fatalf("condition function %s is not evaluated here", fn)
	}
	return false
}

// eval resolves Fn::If and AWS::NoValue throughout v; other intrinsics stay.
func (s *stack) eval(v any) any {
	s.t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if ref, ok := x["Ref"].(string); ok && ref == "AWS::NoValue" {
				return noValue{}
			}
			if args, ok := x["Fn::If"].([]any); ok && len(args) == 3 {
				if s.cond(args[0].(string)) {
					return s.eval(args[1])
				}
				return s.eval(args[2])
			}
		}
		out := map[string]any{}
		for k, e := range x {
			if r := s.eval(e); r != (noValue{}) {
				out[k] = r
			}
		}
		return out
	case []any:
		out := []any{}
		for _, e := range x {
			if r := s.eval(e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	}
	return v
}

// resources returns the stack's resources: those whose condition holds, evaluated.
func (s *stack) resources() map[string]map[string]any {
	s.t.Helper()
	out := map[string]map[string]any{}
	for id, r := range asMap(s.tmpl["Resources"]) {
		rm := asMap(r)
		if c, ok := rm["Condition"].(string); ok && !s.cond(c) {
			continue
		}
		out[id] = asMap(s.eval(rm))
	}
	return out
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// str resolves v to the string CloudFormation would make of it, failing the test when it
// depends on a resource.
func (s *stack) str(v any) string {
	s.t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case float64, bool, json.Number:
		return fmt.Sprint(x)
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			p, ok := s.params[ref]
			if !ok {
				s.t.Fatalf("%v depends on resource %s", v, ref)
			}
			return p
		}
		if sub, ok := x["Fn::Sub"]; ok {
			text, vars := sub, map[string]any{}
			if l, ok := sub.([]any); ok {
				text, vars = l[0], asMap(l[1])
			}
			return subVar.ReplaceAllStringFunc(text.(string), func(m string) string {
				name := m[2 : len(m)-1]
				if e, ok := vars[name]; ok {
					return s.str(e)
				}
				return s.str(map[string]any{"Ref": name})
			})
		}
		if sel, ok := x["Fn::Select"].([]any); ok { // [index, Fn::Split [delimiter, string]]
			sp, _ := asMap(sel[1])["Fn::Split"].([]any)
			i, err := strconv.Atoi(s.str(sel[0]))
			if len(sp) == 2 && err == nil {
				if parts := strings.Split(s.str(sp[1]), sp[0].(string)); i >= 0 && i < len(parts) {
					return parts[i]
				}
			}
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			list, isList := j[1].([]any)
			if !isList { // a Ref to a CommaDelimitedList parameter: its items
				return strings.Join(strings.Split(s.str(j[1]), ","), j[0].(string))
			}
			var parts []string
			for _, e := range list {
				parts = append(parts, s.str(e))
			}
			return strings.Join(parts, j[0].(string))
		}
		if r := s.eval(x); !equal(r, x) {
			return s.str(r)
		}
	}
	s.t.Fatalf("cannot make a string of %v", v)
	return ""
}

// ofType returns the logical IDs of the resources of type typ, sorted.
func ofType(res map[string]map[string]any, typ string) []string {
	var ids []string
	for id, r := range res {
		if r["Type"] == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func get(v any, path ...string) any {
	for _, p := range path {
		v = asMap(v)[p]
	}
	return v
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func ref(id string) map[string]any          { return map[string]any{"Ref": id} }
func getAtt(id, attr string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }
