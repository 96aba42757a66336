package awstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Statement is one IAM policy statement, resolved (no CloudFormation intrinsics left).
// Principal is set only in resource policies (key policies); identity policies have none.
type Statement struct {
	Sid         string
	Effect      string   // Allow or Deny
	Principal   []string // AWS principals: "*", an account ID or an ARN; nil in identity policies
	Action      []string
	NotAction   []string
	Resource    []string
	NotResource []string
	// Condition is operator → condition key → values, as written.
	Condition map[string]map[string][]string
}

// Request is one authorization question: may Principal do Action on Resource, given the
// request's condition keys (e.g. dynamodb:LeadingKeys → the partition keys touched).
type Request struct {
	Principal string // the caller's ARN (an assumed-role session or a user)
	Action    string // service:Operation, e.g. dynamodb:PutItem
	Resource  string // ARN
	Context   map[string][]string
}

// Decision is the outcome of evaluating statements against a request.
type Decision int

// The outcomes: no statement applies, one allows, or one explicitly denies (which wins).
const (
	NotApplicable Decision = iota
	Allowed
	Denied
)

func (d Decision) String() string {
	return [...]string{"not applicable", "allowed", "denied"}[d]
}

// Evaluate applies AWS's rules for one policy: an explicit Deny wins, then any Allow; a
// statement applies when its action, resource, principal (resource policies) and every
// condition match. A statement that cannot be evaluated (an operator this evaluator does
// not know) is an error: the caller denies, as the point is to be at least as strict as AWS.
func Evaluate(stmts []Statement, r Request) (Decision, error) {
	out := NotApplicable
	for _, s := range stmts {
		ok, err := s.applies(r)
		if err != nil {
			return Denied, fmt.Errorf("statement %q: %w", s.Sid, err)
		}
		if !ok {
			continue
		}
		if s.Effect == "Deny" {
			return Denied, nil
		}
		out = Allowed
	}
	return out, nil
}

func (s Statement) applies(r Request) (bool, error) {
	if s.Effect != "Allow" && s.Effect != "Deny" {
		return false, fmt.Errorf("effect %q is neither Allow nor Deny", s.Effect)
	}
	if s.NotAction != nil {
		if matchAny(s.NotAction, r.Action, true) {
			return false, nil
		}
	} else if !matchAny(s.Action, r.Action, true) {
		return false, nil
	}
	if s.NotResource != nil {
		if matchAny(s.NotResource, r.Resource, false) {
			return false, nil
		}
	} else if s.Resource != nil && !matchAny(s.Resource, r.Resource, false) {
		return false, nil
	}
	if s.Principal != nil && !principalMatches(s.Principal, r.Principal) {
		return false, nil
	}
	for op, keys := range s.Condition {
		for key, want := range keys {
			ok, err := condition(op, want, r.Context[key], hasKey(r.Context, key))
			if err != nil {
				return false, fmt.Errorf("condition %s %s: %w", op, key, err)
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}

func hasKey(ctx map[string][]string, key string) bool {
	_, ok := ctx[key]
	return ok
}

// matchAny reports whether value matches any IAM pattern (* and ? wildcards). Actions
// compare case-insensitively, as IAM does; ARNs case-sensitively.
func matchAny(patterns []string, value string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			p, value = strings.ToLower(p), strings.ToLower(value)
		}
		if glob(p, value) {
			return true
		}
	}
	return false
}

// glob matches IAM wildcards: * (any run, '/' included, unlike path.Match) and ? (any one
// byte). Patterns are short; the backtracking is bounded by their few stars.
func glob(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			p = p[1:]
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if glob(p, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}

// principalMatches reports whether a resource policy's principal list names the caller:
// "*", the caller's ARN, or — for an assumed-role session — the role's ARN. Account
// principals (an account ID or arn:…:root) do not match here: they delegate to the
// caller's identity policies, which KMSAuthorize evaluates.
func principalMatches(list []string, caller string) bool {
	role := roleOfSession(caller)
	for _, p := range list {
		if len(p) == 12 && strings.Trim(p, "0123456789") == "" {
			p = "arn:aws:iam::" + p + ":root" // an account ID names the account
		}
		if p == "*" || p == caller || role != "" && p == role {
			return true
		}
	}
	return false
}

// roleOfSession returns arn:aws:iam::ACCT:role/NAME for arn:aws:sts::ACCT:assumed-role/NAME/SESSION.
func roleOfSession(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" || !strings.HasPrefix(parts[5], "assumed-role/") {
		return ""
	}
	seg := strings.Split(strings.TrimPrefix(parts[5], "assumed-role/"), "/")
	if len(seg) < 2 {
		return ""
	}
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", parts[1], parts[4], strings.Join(seg[:len(seg)-1], "/"))
}

// condition evaluates one operator on one key. Supported: String{Equals,NotEquals,Like,
// NotLike,EqualsIgnoreCase}, Arn{Equals,Like,NotEquals,NotLike}, Bool, Null, each with the
// ForAllValues:/ForAnyValue: set prefixes and the IfExists suffix. For a single-valued
// operator on a key with several request values, any matching value satisfies it (for
// Not operators, every value must satisfy it).
func condition(op string, want, got []string, present bool) (bool, error) {
	set := ""
	if s, rest, ok := strings.Cut(op, ":"); ok {
		set, op = s, rest
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")
	if op == "Null" {
		if len(want) != 1 || (want[0] != "true" && want[0] != "false") {
			return false, fmt.Errorf("operator Null takes true or false, got %v", want)
		}
		return (want[0] == "true") == (!present || len(got) == 0), nil
	}
	match, negated, err := operator(op)
	if err != nil {
		return false, err
	}
	one := func(v string) bool {
		hit := slices.ContainsFunc(want, func(w string) bool { return match(w, v) })
		return hit != negated
	}
	switch set {
	case "ForAllValues":
		// True when the key is absent or empty: every (no) value matches. AWS warns of this.
		for _, v := range got {
			if !one(v) {
				return false, nil
			}
		}
		return true, nil
	case "ForAnyValue":
		return slices.ContainsFunc(got, one), nil
	case "":
		if !present || len(got) == 0 {
			return ifExists, nil
		}
		if negated {
			for _, v := range got {
				if !one(v) {
					return false, nil
				}
			}
			return true, nil
		}
		return slices.ContainsFunc(got, one), nil
	default:
		return false, fmt.Errorf("unknown set operator %q", set)
	}
}

// operator returns the value comparison of a condition operator and whether it is negated.
func operator(op string) (func(want, got string) bool, bool, error) {
	eq := func(w, g string) bool { return w == g }
	like := func(w, g string) bool { return glob(w, g) }
	switch op {
	case "StringEquals", "ArnEquals":
		return eq, false, nil
	case "StringNotEquals", "ArnNotEquals":
		return eq, true, nil
	case "StringEqualsIgnoreCase":
		return strings.EqualFold, false, nil
	case "StringNotEqualsIgnoreCase":
		return strings.EqualFold, true, nil
	case "StringLike", "ArnLike":
		return like, false, nil
	case "StringNotLike", "ArnNotLike":
		return like, true, nil
	case "Bool":
		return func(w, g string) bool { return strings.EqualFold(w, g) }, false, nil
	}
	return nil, false, fmt.Errorf("operator %q is not supported by this evaluator", op)
}

// ParsePolicy reads a JSON policy document (as IAM stores it) into statements.
func ParsePolicy(doc []byte) ([]Statement, error) {
	var raw struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw.Statement, &list); err != nil {
		var one map[string]any
		if err2 := json.Unmarshal(raw.Statement, &one); err2 != nil {
			return nil, fmt.Errorf("policy Statement: %w", err)
		}
		list = []map[string]any{one}
	}
	var out []Statement
	for i, m := range list {
		s, err := statementOf(m)
		if err != nil {
			return nil, fmt.Errorf("statement %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// statementOf converts a plain decoded statement (strings, lists, maps) to a Statement.
func statementOf(m map[string]any) (Statement, error) {
	s := Statement{}
	for k, v := range m {
		var err error
		switch k {
		case "Sid":
			s.Sid, _ = v.(string)
		case "Effect":
			s.Effect, _ = v.(string)
		case "Action":
			s.Action, err = stringList(v)
		case "NotAction":
			s.NotAction, err = stringList(v)
		case "Resource":
			s.Resource, err = stringList(v)
		case "NotResource":
			s.NotResource, err = stringList(v)
		case "Principal":
			switch p := v.(type) {
			case string:
				s.Principal = []string{p}
			case map[string]any:
				for kind, who := range p {
					if kind != "AWS" {
						continue // Service principals never match a caller here
					}
					l, err := stringList(who)
					if err != nil {
						return s, fmt.Errorf("Principal.AWS: %w", err)
					}
					s.Principal = append(s.Principal, l...)
				}
				if s.Principal == nil {
					s.Principal = []string{}
				}
			default:
				return s, fmt.Errorf("Principal of type %T", v)
			}
		case "Condition":
			cm, ok := v.(map[string]any)
			if !ok {
				return s, fmt.Errorf("condition of type %T", v)
			}
			s.Condition = map[string]map[string][]string{}
			for op, keys := range cm {
				km, ok := keys.(map[string]any)
				if !ok {
					return s, fmt.Errorf("condition %s of type %T", op, keys)
				}
				s.Condition[op] = map[string][]string{}
				for key, vals := range km {
					l, err := stringList(vals)
					if err != nil {
						return s, fmt.Errorf("condition %s %s: %w", op, key, err)
					}
					s.Condition[op][key] = l
				}
			}
		default:
			return s, fmt.Errorf("unknown statement element %q", k)
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", k, err)
		}
	}
	if s.Action == nil && s.NotAction == nil {
		return s, fmt.Errorf("no Action")
	}
	return s, nil
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case bool:
		return []string{fmt.Sprint(x)}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			switch s := e.(type) {
			case string:
				out = append(out, s)
			case bool:
				out = append(out, fmt.Sprint(s))
			default:
				return nil, fmt.Errorf("element of type %T", e)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("value of type %T", v)
}

// policyJSON renders statements as an IAM policy document (for moto's PutRolePolicy).
func policyJSON(stmts []Statement) string {
	var list []map[string]any
	for _, s := range stmts {
		m := map[string]any{"Effect": s.Effect}
		if s.Sid != "" {
			m["Sid"] = s.Sid
		}
		for k, v := range map[string][]string{"Action": s.Action, "NotAction": s.NotAction, "Resource": s.Resource, "NotResource": s.NotResource} {
			if v != nil {
				m[k] = v
			}
		}
		if s.Condition != nil {
			m["Condition"] = s.Condition
		}
		list = append(list, m)
	}
	b, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": list})
	return string(b)
}
