package awstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// Account is the AWS account ID moto serves (and the in-process KMS is set to).
const Account = "123456789012"

// Resources names, for one test, the physical resources standing in for template.yaml's
// logical IDs: a table's name, a bucket's name, a key's ARN, a role's ARN, a queue's URL,
// or a parameter's value. Intrinsics that name a logical ID missing here resolve to a
// placeholder ARN that matches nothing, so a statement about a resource the test did not
// create grants nothing.
type Resources map[string]string

// Template is template.yaml decoded into plain values, short-form intrinsics (!Ref, !Sub,
// !GetAtt, !If …) turned into their long forms ({"Ref": …}, {"Fn::Sub": …}).
type Template struct {
	Parameters map[string]any
	Conditions map[string]any
	Resources  map[string]any
}

// LoadTemplate reads the repository's template.yaml.
func LoadTemplate(t testing.TB) *Template {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	tpl, err := ParseTemplate(raw)
	if err != nil {
		t.Fatalf("awstest: template.yaml: %v", err)
	}
	return tpl
}

// ParseTemplate decodes a CloudFormation/SAM template in YAML.
func ParseTemplate(raw []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("not a YAML document")
	}
	m, ok := plain(doc.Content[0]).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the template is not a mapping")
	}
	tpl := &Template{}
	tpl.Parameters, _ = m["Parameters"].(map[string]any)
	tpl.Conditions, _ = m["Conditions"].(map[string]any)
	tpl.Resources, _ = m["Resources"].(map[string]any)
	if tpl.Resources == nil {
		return nil, fmt.Errorf("no Resources")
	}
	return tpl, nil
}

// plain converts a YAML node to maps, lists and strings, expanding short-form tags.
func plain(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(n.Content[0])
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, plain(c))
		}
		v = l
	default:
		v = n.Value
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			a, b, _ := strings.Cut(s, ".")
			return map[string]any{"Fn::GetAtt": []any{a, b}}
		}
	}
	return map[string]any{"Fn::" + name: v}
}

// resolver evaluates intrinsics against one test's resources.
type resolver struct {
	tpl *Template
	res Resources
}

func (r resolver) unresolved(id string) string { return "arn:aws:unresolved:::" + id }

// ref resolves Ref of a logical ID, parameter or pseudo parameter.
func (r resolver) ref(id string) (any, error) {
	switch id {
	case "AWS::Region":
		return CurrentRegion(), nil
	case "AWS::AccountId":
		return Account, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return "agentgate-test", nil
	case "AWS::NoValue":
		return noValue{}, nil
	}
	if p, ok := r.tpl.Parameters[id].(map[string]any); ok {
		v, given := r.res[id]
		if !given {
			v = fmt.Sprint(p["Default"])
			if p["Default"] == nil {
				v = ""
			}
		}
		if t, _ := p["Type"].(string); t == "CommaDelimitedList" || strings.HasPrefix(t, "List<") {
			if v == "" {
				return []any{}, nil
			}
			var l []any
			for _, e := range strings.Split(v, ",") {
				l = append(l, strings.TrimSpace(e))
			}
			return l, nil
		}
		return v, nil
	}
	rs, ok := r.tpl.Resources[id].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("reference to unknown %q", id)
	}
	phys, ok := r.res[id]
	if !ok {
		return r.unresolved(id), nil
	}
	switch rs["Type"] {
	case "AWS::IAM::Role":
		return phys[strings.LastIndexByte(phys, '/')+1:], nil
	case "AWS::KMS::Key":
		return phys[strings.LastIndexByte(phys, '/')+1:], nil
	}
	return phys, nil
}

// getAtt resolves Fn::GetAtt id.attr (Arn, mostly).
func (r resolver) getAtt(id, attr string) (string, error) {
	rs, ok := r.tpl.Resources[id].(map[string]any)
	if !ok {
		return "", fmt.Errorf("GetAtt of unknown resource %q", id)
	}
	phys, ok := r.res[id]
	if !ok {
		return r.unresolved(id + "." + attr), nil
	}
	typ, _ := rs["Type"].(string)
	switch typ + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", CurrentRegion(), Account, phys), nil
	case "AWS::S3::Bucket.Arn":
		return "arn:aws:s3:::" + phys, nil
	case "AWS::IAM::Role.Arn", "AWS::KMS::Key.Arn", "AWS::SNS::Topic.TopicArn":
		return phys, nil
	case "AWS::SQS::Queue.Arn":
		return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", CurrentRegion(), Account, phys[strings.LastIndexByte(phys, '/')+1:]), nil
	case "AWS::SQS::Queue.QueueName":
		return phys[strings.LastIndexByte(phys, '/')+1:], nil
	}
	return "", fmt.Errorf("GetAtt %s.%s (%s) is not modelled by awstest", id, attr, typ)
}

// noValue is AWS::NoValue: the property or list element is dropped.
type noValue struct{}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// eval resolves every intrinsic in v.
func (r resolver) eval(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, e := range x {
			ev, err := r.eval(e)
			if err != nil {
				return nil, err
			}
			if _, drop := ev.(noValue); !drop {
				out = append(out, ev)
			}
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			ev, err := r.eval(e)
			if err != nil {
				return nil, err
			}
			if _, drop := ev.(noValue); !drop {
				out[k] = ev
			}
		}
		return out, nil
	}
	return v, nil
}

func (r resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		id, _ := arg.(string)
		return r.ref(id)
	case "Condition":
		id, _ := arg.(string)
		return r.condition(id)
	case "Fn::GetAtt":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v", arg)
		}
		return r.getAtt(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
	case "Fn::Sub":
		text, vars := "", map[string]any{}
		switch a := arg.(type) {
		case string:
			text = a
		case []any:
			if len(a) != 2 {
				return nil, fmt.Errorf("Fn::Sub %v", arg)
			}
			text, _ = a[0].(string)
			m, _ := a[1].(map[string]any)
			for k, e := range m {
				ev, err := r.eval(e)
				if err != nil {
					return nil, err
				}
				vars[k] = ev
			}
		}
		var err error
		out := subVar.ReplaceAllStringFunc(text, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := vars[name]; ok {
				return fmt.Sprint(v)
			}
			var v any
			var e error
			if id, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
				v, e = r.getAtt(id, attr)
			} else {
				v, e = r.ref(name)
			}
			if e != nil {
				err = e
			}
			return fmt.Sprint(v)
		})
		return out, err
	case "Fn::If":
		l, ok := arg.([]any)
		if !ok || len(l) != 3 {
			return nil, fmt.Errorf("Fn::If %v", arg)
		}
		c, err := r.condition(fmt.Sprint(l[0]))
		if err != nil {
			return nil, err
		}
		if c {
			return r.eval(l[1])
		}
		return r.eval(l[2])
	case "Fn::Equals":
		l, err := r.evalList(arg, 2)
		if err != nil {
			return nil, err
		}
		return fmt.Sprint(l[0]) == fmt.Sprint(l[1]), nil
	case "Fn::Not":
		l, err := r.evalList(arg, 1)
		if err != nil {
			return nil, err
		}
		b, ok := l[0].(bool)
		if !ok {
			return nil, fmt.Errorf("Fn::Not of %v", l[0])
		}
		return !b, nil
	case "Fn::And", "Fn::Or":
		l, err := r.evalList(arg, -1)
		if err != nil {
			return nil, err
		}
		and := fn == "Fn::And"
		for _, e := range l {
			b, ok := e.(bool)
			if !ok {
				return nil, fmt.Errorf("%s of %v", fn, e)
			}
			if b != and {
				return !and, nil
			}
		}
		return and, nil
	case "Fn::Join":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::Join %v", arg)
		}
		parts, err := r.eval(l[1])
		if err != nil {
			return nil, err
		}
		var ss []string
		for _, p := range parts.([]any) {
			ss = append(ss, fmt.Sprint(p))
		}
		return strings.Join(ss, fmt.Sprint(l[0])), nil
	case "Fn::Split":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::Split %v", arg)
		}
		s, err := r.eval(l[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(fmt.Sprint(s), fmt.Sprint(l[0])) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		l, ok := arg.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("Fn::Select %v", arg)
		}
		i, err := strconv.Atoi(fmt.Sprint(l[0]))
		if err != nil {
			return nil, fmt.Errorf("Fn::Select index: %w", err)
		}
		list, err := r.eval(l[1])
		if err != nil {
			return nil, err
		}
		ll, _ := list.([]any)
		if i < 0 || i >= len(ll) {
			return nil, fmt.Errorf("Fn::Select %d of %d", i, len(ll))
		}
		return ll[i], nil
	}
	return nil, fmt.Errorf("intrinsic %s is not modelled by awstest", fn)
}

func (r resolver) evalList(arg any, n int) ([]any, error) {
	v, err := r.eval(arg)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok || n >= 0 && len(l) != n {
		return nil, fmt.Errorf("want %d arguments, got %v", n, v)
	}
	return l, nil
}

func (r resolver) condition(id string) (bool, error) {
	c, ok := r.tpl.Conditions[id]
	if !ok {
		return false, fmt.Errorf("unknown condition %q", id)
	}
	v, err := r.eval(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", id, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is %v, not a boolean", id, v)
	}
	return b, nil
}

// statements resolves a policy document's statements.
func (r resolver) statements(doc any) ([]Statement, error) {
	ev, err := r.eval(doc)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(b)
}

// managedPolicies are the AWS-managed policies the template attaches, with the statements
// that matter here (none of them touches a service the tests call).
var managedPolicies = map[string][]Statement{
	"service-role/AWSLambdaBasicExecutionRole": {{Effect: "Allow", Action: []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resource: []string{"*"}}},
	"AWSXRayDaemonWriteAccess": {{Effect: "Allow", Action: []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
		"xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}, Resource: []string{"*"}}},
}

// RoleStatements returns the identity-policy statements of a role in the template, with
// res resolving its references: an AWS::IAM::Role's inline and attached policies (the
// template's own managed policies and the AWS-managed ones in managedPolicies), or the
// inline Policies of an AWS::Serverless::Function (the role SAM creates for it).
func (tpl *Template) RoleStatements(logicalID string, res Resources) ([]Statement, error) {
	r := resolver{tpl: tpl, res: res}
	rs, ok := tpl.Resources[logicalID].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no resource %s", logicalID)
	}
	props, _ := rs["Properties"].(map[string]any)
	var out []Statement
	add := func(doc any) error {
		st, err := r.statements(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", logicalID, err)
		}
		out = append(out, st...)
		return nil
	}
	switch rs["Type"] {
	case "AWS::IAM::Role":
		pols, _ := r.eval(props["Policies"])
		for _, p := range asList(pols) {
			if err := add(asMap(p)["PolicyDocument"]); err != nil {
				return nil, err
			}
		}
		arns, err := r.eval(props["ManagedPolicyArns"])
		if err != nil {
			return nil, err
		}
		for _, a := range asList(arns) {
			s := fmt.Sprint(a)
			if _, name, ok := strings.Cut(s, ":iam::aws:policy/"); ok {
				st, known := managedPolicies[name]
				if !known {
					return nil, fmt.Errorf("%s attaches the AWS-managed policy %s, which awstest does not model", logicalID, name)
				}
				out = append(out, st...)
				continue
			}
			found := false
			for id, other := range tpl.Resources {
				if asMap(other)["Type"] == "AWS::IAM::ManagedPolicy" && res[id] == s {
					if err := add(asMap(asMap(other)["Properties"])["PolicyDocument"]); err != nil {
						return nil, err
					}
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("%s attaches %s, which is not in the test's resources", logicalID, s)
			}
		}
	case "AWS::Serverless::Function":
		pols, err := r.eval(props["Policies"])
		if err != nil {
			return nil, err
		}
		for _, p := range asList(pols) {
			m, ok := p.(map[string]any)
			if !ok || m["Statement"] == nil {
				return nil, fmt.Errorf("%s: SAM policy %v is not an inline policy document (awstest models only those)", logicalID, p)
			}
			if err := add(m); err != nil {
				return nil, err
			}
		}
		out = append(out, managedPolicies["service-role/AWSLambdaBasicExecutionRole"]...)
	default:
		return nil, fmt.Errorf("%s is a %v, not a role or a function", logicalID, rs["Type"])
	}
	return out, nil
}

// KeyPolicy returns the resolved key policy of an AWS::KMS::Key.
func (tpl *Template) KeyPolicy(logicalID string, res Resources) ([]Statement, error) {
	rs := asMap(tpl.Resources[logicalID])
	if rs["Type"] != "AWS::KMS::Key" {
		return nil, fmt.Errorf("%s is not an AWS::KMS::Key", logicalID)
	}
	return resolver{tpl: tpl, res: res}.statements(asMap(rs["Properties"])["KeyPolicy"])
}

// PolicyFile reads a JSON policy document outside the template (infra/ecs), replacing
// ${NAME} placeholders from vars; an unknown placeholder is an error.
func PolicyFile(t testing.TB, rel string, vars map[string]string) []Statement {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	var missing []string
	doc := subVar.ReplaceAllStringFunc(string(raw), func(m string) string {
		v, ok := vars[m[2:len(m)-1]]
		if !ok {
			missing = append(missing, m)
		}
		return v
	})
	if len(missing) > 0 {
		t.Fatalf("awstest: %s: no value for %v", rel, slices.Compact(missing))
	}
	st, err := ParsePolicy([]byte(doc))
	if err != nil {
		t.Fatalf("awstest: %s: %v", rel, err)
	}
	return st
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
