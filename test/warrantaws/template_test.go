package warrantaws_test

import (
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

// tree turns a YAML node into plain values; a short-form intrinsic (!Ref X, !GetAtt X.Arn,
// !Sub "…") becomes the string "!Ref X" etc., so tests can compare references.
func tree(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		return tree(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = tree(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		var l []any
		for _, c := range n.Content {
			l = append(l, tree(c))
		}
		if n.Tag == "!If" {
			return map[string]any{"Fn::If": l} // a conditional value: statements() checks its branch
		}
		if strings.HasPrefix(n.Tag, "!") && n.Tag != "!!seq" {
			return fmt.Sprintf("%s %v", n.Tag, l)
		}
		return l
	default:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			return n.Tag + " " + n.Value
		}
		return n.Value
	}
}

func template(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return tree(&doc).(map[string]any)
}

func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// statements returns every policy statement in the template with where it is: role
// inline policies, function Policies, managed policies, the key policy, bucket policies.
func statements(res map[string]any) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	add := func(where string, doc any) {
		for _, s := range get(doc, "Statement").([]any) {
			out[where] = append(out[where], s.(map[string]any))
		}
	}
	for name, r := range res {
		props := get(r, "Properties")
		switch get(r, "Type") {
		case "AWS::IAM::Role":
			pols, _ := get(props, "Policies").([]any) // AgentCoreGatewayRole has managed policies only
			for _, p := range pols {
				if branches, ok := get(p, "Fn::If").([]any); ok {
					p = branches[1] // the policy the condition adds (the other branch is AWS::NoValue)
				}
				add(name, get(p, "PolicyDocument"))
			}
		case "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy":
			add(name, get(props, "PolicyDocument"))
		case "AWS::KMS::Key":
			add(name, get(props, "KeyPolicy"))
		case "AWS::Serverless::Function":
			if ps, ok := get(props, "Policies").([]any); ok {
				for _, p := range ps {
					if _, ok := p.(map[string]any); ok {
						add(name, p)
					}
				}
			}
		}
	}
	return out
}

// TestTemplatePolicies asserts the policy rules on the template as deployed.
func TestTemplatePolicies(t *testing.T) {
	doc := template(t)
	res := doc["Resources"].(map[string]any)
	all := statements(res)
	// The interceptor's role signs only when the stack has it (EnableAgentCoreInterceptor).
	interceptorSigns := fmt.Sprint(map[string]any{"Fn::If": []any{"AgentCoreInterceptor", "!GetAtt InterceptorRole.Arn", "!Ref AWS::NoValue"}})
	sweepSigns := fmt.Sprint(map[string]any{"Fn::If": []any{"AgentCoreInterceptor", "!GetAtt AuditSequencerRole.Arn", "!Ref AWS::NoValue"}})
	signers := []string{"!GetAtt CrawlRole.Arn", "!GetAtt ApprovalsRole.Arn", "!GetAtt CheckpointRole.Arn", interceptorSigns, sweepSigns}
	// The roles that integrate queued audit events (they delete the queue items).
	queueIntegrators := []string{"InterceptorRole", "AuditSequencerRole"}
	for where, sts := range all {
		for _, s := range sts {
			actions := strs(s["Action"])
			for _, a := range actions {
				switch {
				case a == "dynamodb:DeleteItem":
					// Only the audit queue's items, deleted by the transaction integrating them.
					keys := strs(get(s, "Condition", "ForAllValues:StringEquals", "dynamodb:LeadingKeys"))
					if !slices.Equal(keys, []string{"AUDITQ"}) || !slices.Contains(queueIntegrators, where) {
						t.Errorf("%s grants DeleteItem on %v; only %v may, and only on AUDITQ", where, keys, queueIntegrators)
					}
				case a == "dynamodb:*" || a == "dynamodb:BatchWriteItem" || a == "dynamodb:Scan":
					t.Errorf("%s grants %s", where, a)
				case a == "kms:*" || a == "*":
					t.Errorf("%s grants %s", where, a)
				case strings.HasPrefix(a, "kms:") && strings.Contains(a, "*"):
					t.Errorf("%s grants the KMS wildcard %s", where, a)
				case a == "kms:Sign" && where == "CheckpointKey":
					if !slices.Equal(strs(get(s, "Principal", "AWS")), []string{"!GetAtt CheckpointRole.Arn"}) {
						t.Errorf("CheckpointKey lets %v sign; only the checkpoint role may", get(s, "Principal"))
					}
				case a == "kms:Sign" && (where != "LogKey" || !slices.Equal(strs(get(s, "Principal", "AWS")), signers)):
					t.Errorf("%s lets %v sign with kms:Sign; only %v may", where, get(s, "Principal"), signers)
				case a == "dynamodb:UpdateItem" && slices.Contains(strs(s["Resource"]), "!GetAtt CatalogTable.Arn"):
					keys := strs(get(s, "Condition", "ForAllValues:StringEquals", "dynamodb:LeadingKeys"))
					if len(keys) == 0 || slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "SRV") }) {
						t.Errorf("%s: UpdateItem is not limited to the state partitions (SERVERS, APPROVALS, AUDIT): %v", where, keys)
					}
				}
				if strings.HasPrefix(a, "s3:Delete") && get(s, "Effect") == "Allow" {
					t.Errorf("%s grants %s", where, a)
				}
			}
			if res := strs(s["Resource"]); slices.ContainsFunc(actions, func(a string) bool { return strings.HasPrefix(a, "secretsmanager:") || strings.HasPrefix(a, "ssm:") }) &&
				(where != "CrawlRole" || !slices.Equal(res, []string{"!Ref CrawlHeaderSecretArns"})) {
				t.Errorf("%s reads secrets (%v on %v); only the crawl role may, and only the CrawlHeaderSecretArns", where, actions, res)
			}
			if where != "LogKey" && where != "CheckpointKey" && where != "CheckpointBucketPolicy" && get(s, "Effect") == "Allow" && slices.Contains(strs(s["Resource"]), "*") {
				t.Errorf("%s allows %v on every resource", where, actions)
			}
		}
	}
	// Roles hold no KMS permission at all: only the key policy grants Sign.
	for _, role := range []string{"CrawlRole", "ApprovalsRole", "CheckpointRole", "InterceptorRole", "AuditSequencerRole"} {
		for _, s := range all[role] {
			for _, a := range strs(s["Action"]) {
				if strings.HasPrefix(a, "kms:") {
					t.Errorf("%s's own policy grants %s", role, a)
				}
			}
		}
	}
	// The asynchronous functions' roles may send to their own OnFailure queue, and the
	// dispatcher's to the crawl queue; the crawl role may do on the crawl queue what
	// Lambda's poller does as it (receive, delete, read attributes); no other role touches
	// SQS. EventBridge may send to a dead-letter queue only for that function's rules
	// (aws:SourceArn), and nothing else is allowed on the queues.
	queueOf := map[string]string{"CrawlDispatchRole": "!GetAtt CrawlDeadLetterQueue.Arn", "CheckpointRole": "!GetAtt CheckpointDeadLetterQueue.Arn"}
	worker := map[string]bool{"sqs:ReceiveMessage": true, "sqs:DeleteMessage": true, "sqs:GetQueueAttributes": true}
	for where, sts := range all {
		for _, s := range sts {
			for _, a := range strs(s["Action"]) {
				if !strings.HasPrefix(a, "sqs:") || get(s, "Effect") != "Allow" {
					continue
				}
				switch {
				case get(res, where, "Type") == "AWS::SQS::QueuePolicy":
					if get(s, "Principal", "Service") != "events.amazonaws.com" || a != "sqs:SendMessage" || get(s, "Condition", "ArnEquals", "aws:SourceArn") == nil {
						t.Errorf("%s allows %s to %v without naming the rules (aws:SourceArn)", where, a, get(s, "Principal"))
					}
				case where == "CrawlRole" && worker[a] && slices.Equal(strs(s["Resource"]), []string{"!GetAtt CrawlQueue.Arn"}):
				case where == "CrawlDispatchRole" && a == "sqs:SendMessage" && slices.Equal(strs(s["Resource"]), []string{"!GetAtt CrawlQueue.Arn"}):
				case queueOf[where] == "":
					t.Errorf("%s grants %s on %v", where, a, s["Resource"])
				case a != "sqs:SendMessage" || !slices.Equal(strs(s["Resource"]), []string{queueOf[where]}):
					t.Errorf("%s grants %s on %v; want sqs:SendMessage on %s only", where, a, s["Resource"], queueOf[where])
				}
			}
		}
	}
	key := get(res, "LogKey", "Properties")
	if get(key, "KeySpec") != "ECC_NIST_P256" || get(key, "KeyUsage") != "SIGN_VERIFY" {
		t.Errorf("LogKey is %v/%v", get(key, "KeySpec"), get(key, "KeyUsage"))
	}
	// The checkpoint key signs C2SP notes: pure Ed25519 (issue 18).
	if ck := get(res, "CheckpointKey", "Properties"); get(ck, "KeySpec") != "ECC_NIST_EDWARDS25519" || get(ck, "KeyUsage") != "SIGN_VERIFY" {
		t.Errorf("CheckpointKey is %v/%v, want ECC_NIST_EDWARDS25519/SIGN_VERIFY", get(ck, "KeySpec"), get(ck, "KeyUsage"))
	}
	var pub bool
	for _, s := range all["LogKey"] {
		if get(s, "Principal", "AWS") == "*" {
			pub = slices.Equal(strs(s["Action"]), []string{"kms:GetPublicKey", "kms:DescribeKey", "kms:Verify"}) &&
				get(s, "Condition", "StringEquals", "kms:CallerAccount") == "!Ref AWS::AccountId"
		}
	}
	if !pub {
		t.Error("the key policy does not let anyone in the account (and only the account) read the public key")
	}
	b := get(res, "CheckpointBucket", "Properties")
	if get(b, "ObjectLockEnabled") != "true" || get(b, "ObjectLockConfiguration", "Rule", "DefaultRetention", "Mode") != "GOVERNANCE" ||
		get(b, "VersioningConfiguration", "Status") != "Enabled" || get(res, "CheckpointBucket", "DeletionPolicy") != "RetainExceptOnCreate" {
		t.Errorf("CheckpointBucket must be versioned, retained, with Object Lock in governance mode: %v", b)
	}
	// The catalog's large objects: a private, encrypted, versioned, retained bucket reached
	// over TLS only; the crawl writes and reads objects under catalog/, the approvals
	// function only reads them, the checkpoint function (audit records only) not at all;
	// nobody lists, deletes or touches another prefix.
	cb := get(res, "CatalogBlobBucket", "Properties")
	if get(res, "CatalogBlobBucket", "Type") != "AWS::S3::Bucket" || get(cb, "VersioningConfiguration", "Status") != "Enabled" ||
		get(res, "CatalogBlobBucket", "DeletionPolicy") != "RetainExceptOnCreate" || get(res, "CatalogBlobBucket", "UpdateReplacePolicy") != "Retain" ||
		get(cb, "BucketName") != nil || get(cb, "BucketEncryption", "ServerSideEncryptionConfiguration") == nil {
		t.Errorf("CatalogBlobBucket must be versioned, encrypted, retained, with a generated name: %v", cb)
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if get(cb, "PublicAccessBlockConfiguration", k) != "true" {
			t.Errorf("CatalogBlobBucket: PublicAccessBlockConfiguration.%s is not true", k)
		}
	}
	tls := false
	for _, st := range all["CatalogBlobBucketPolicy"] {
		tls = tls || get(st, "Effect") == "Deny" && get(st, "Condition", "Bool", "aws:SecureTransport") == "false" &&
			slices.Equal(strs(st["Resource"]), []string{"!GetAtt CatalogBlobBucket.Arn", `!Sub ${CatalogBlobBucket.Arn}/*`})
	}
	if !tls {
		t.Error("CatalogBlobBucketPolicy does not deny requests without TLS on the bucket and its objects")
	}
	objects := map[string][]string{}
	for where, sts := range all {
		for _, st := range sts {
			if get(st, "Effect") != "Allow" {
				continue
			}
			for _, r := range strs(st["Resource"]) {
				if !strings.Contains(r, "CatalogBlobBucket") {
					continue
				}
				if r != `!Sub ${CatalogBlobBucket.Arn}/catalog/*` {
					t.Errorf("%s is allowed %v on %s; only objects under catalog/ may be reached", where, strs(st["Action"]), r)
				}
				objects[where] = append(objects[where], strs(st["Action"])...)
			}
		}
	}
	for role, want := range map[string][]string{"CrawlRole": {"s3:GetObject", "s3:PutObject"}, "ApprovalsRole": {"s3:GetObject"},
		"InterceptorRole": {"s3:GetObject", "s3:PutObject"}} {
		got := slices.Sorted(slices.Values(objects[role]))
		if !slices.Equal(got, want) {
			t.Errorf("%s's actions on the catalog's objects = %v, want exactly %v", role, got, want)
		}
		delete(objects, role)
	}
	if len(objects) > 0 {
		t.Errorf("other policies reach the catalog's objects: %v", objects)
	}
	// Routes: approvals behind AWS_IAM, pads public.
	for name, r := range res {
		if get(r, "Type") != "AWS::Serverless::Function" {
			continue
		}
		evs, _ := get(r, "Properties", "Events").(map[string]any)
		for en, ev := range evs {
			if get(ev, "Type") != "HttpApi" {
				continue
			}
			auth := get(ev, "Properties", "Auth", "Authorizer")
			switch name {
			case "ApprovalsFunction":
				if auth != "AWS_IAM" {
					t.Errorf("approval route %s is not AWS_IAM-authorized", en)
				}
			case "PadsFunction":
				if auth != nil {
					t.Errorf("pad route %s has an authorizer", en)
				}
			}
		}
	}
	// Every approvals route is callable with ApproverPolicy; AuditorPolicy reaches every
	// GET route and no other.
	allows := func(policy, method, route string) bool {
		arn := "/stage/" + method + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(route, "x")
		for _, st := range statements(res)[policy] {
			for _, r := range strs(st["Resource"]) {
				_, glob, ok := strings.Cut(r, "${PadsApi}")
				if !ok {
					continue
				}
				re := "^" + strings.ReplaceAll(regexp.QuoteMeta(glob), `\*`, ".*") + "$"
				if regexp.MustCompile(re).MatchString(arn) {
					return true
				}
			}
		}
		return false
	}
	routes := 0
	for en, ev := range get(res, "ApprovalsFunction", "Properties", "Events").(map[string]any) {
		method, route := fmt.Sprint(get(ev, "Properties", "Method")), fmt.Sprint(get(ev, "Properties", "Path"))
		routes++
		// Registering servers is the catalog administrators' (CatalogAdminPolicy), and
		// only theirs; every other route the approvers'.
		admin := method == "POST" && route == "/v1/servers"
		if got := allows("ApproverPolicy", method, route); got == admin {
			t.Errorf("ApproverPolicy allows route %s (%s %s): %v, want %v", en, method, route, got, !admin)
		}
		if got := allows("CatalogAdminPolicy", method, route); got != admin {
			t.Errorf("CatalogAdminPolicy allows route %s (%s %s): %v, want %v", en, method, route, got, admin)
		}
		if got := allows("AuditorPolicy", method, route); got != (method == "GET") {
			t.Errorf("AuditorPolicy allows %s %s: %v, want %v (reads only)", method, route, got, method == "GET")
		}
	}
	if routes < 5 {
		t.Errorf("ApprovalsFunction has %d routes, want tools, proposals, diff, decisions and audit", routes)
	}
	if get(res, "CrawlDispatchFunction", "Properties", "Events", "Schedule", "Properties", "Schedule") != "!Ref CrawlRate" {
		t.Error("the crawl schedule does not use the CrawlRate parameter")
	}
	if get(res, "CrawlDispatchFunction", "Properties", "Events", "Manual", "Type") != "EventBridgeRule" {
		t.Error("the crawl dispatcher has no manual EventBridge trigger")
	}
	// The crawl function is the crawl queue's worker: a failed server fails its message, not
	// the batch; the queue hides a message for longer than an invocation may run (else SQS
	// would deliver it again while it is being crawled: CloudFormation refuses the mapping).
	q := get(res, "CrawlFunction", "Properties", "Events", "Queue")
	if get(q, "Type") != "SQS" || get(q, "Properties", "Queue") != "!GetAtt CrawlQueue.Arn" || fmt.Sprint(get(q, "Properties", "FunctionResponseTypes")) != "[ReportBatchItemFailures]" {
		t.Errorf("the crawl function's queue trigger %v", q)
	}
	vis, _ := strconv.Atoi(fmt.Sprint(get(res, "CrawlQueue", "Properties", "VisibilityTimeout")))
	timeout, _ := strconv.Atoi(fmt.Sprint(get(res, "CrawlFunction", "Properties", "Timeout")))
	if timeout == 0 || timeout > 120 || vis < 6*timeout {
		t.Errorf("crawl function timeout %d s (want at most 120), crawl queue visibility %d s (want at least 6× the timeout)", timeout, vis)
	}
	// Environment variables are the ones internal/config reads.
	env := func(fn string) []string {
		var out []string
		for k := range get(res, fn, "Properties", "Environment", "Variables").(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for fn, want := range map[string][]string{
		"CrawlFunction": {"AUDIT_KMS_KEY", "CATALOG_BLOB_BUCKET", "CATALOG_TABLE", "CRAWL_DEADLINE_MARGIN", "CRAWL_HEADER_SECRETS", "CRAWL_ROLE_ARN", "TOOLWARRANT_CRAWL_CONCURRENCY",
			"TOOLWARRANT_CRAWL_TIMEOUT", "TOOLWARRANT_SERVERS"},
		"ApprovalsFunction":     {"AUDIT_KMS_KEY", "CATALOG_BLOB_BUCKET", "CATALOG_TABLE", "CRAWL_HEADER_SECRETS", "CRAWL_ROLE_ARN"},
		"CrawlDispatchFunction": {"CATALOG_TABLE", "CRAWL_QUEUE_URL", "CRAWL_SERVERS_PER_MESSAGE", "TOOLWARRANT_SERVERS"},
		"CheckpointFunction":    {"AUDIT_KMS_KEY", "CATALOG_TABLE", "CHECKPOINT_BUCKET", "CHECKPOINT_KMS_KEY", "CHECKPOINT_ORIGIN", "TOOLWARRANT_TILES_BUCKET", "TOOLWARRANT_TILES_PREFIX"},
		"InterceptorFunction": {"AUDIT_KMS_KEY", "CATALOG_BLOB_BUCKET", "CATALOG_TABLE", "INTERCEPTOR_RECORD_EVERY", "INTERCEPTOR_REFRESH", "INTERCEPTOR_ROLE_ARN",
			"INTERCEPTOR_SERVERS", "INTERCEPTOR_SHADOW", "INTERCEPTOR_STALENESS"},
	} {
		if got := env(fn); !slices.Equal(got, want) {
			t.Errorf("%s environment = %v, want %v", fn, got, want)
		}
	}
	for _, fn := range []string{"CrawlFunction", "ApprovalsFunction", "InterceptorFunction"} {
		if v := get(res, fn, "Properties", "Environment", "Variables", "CATALOG_BLOB_BUCKET"); v != "!Ref CatalogBlobBucket" {
			t.Errorf("%s: CATALOG_BLOB_BUCKET = %v, want !Ref CatalogBlobBucket", fn, v)
		}
	}
	if get(res, "CrawlFunction", "Properties", "Role") != "!GetAtt CrawlRole.Arn" || get(res, "ApprovalsFunction", "Properties", "Role") != "!GetAtt ApprovalsRole.Arn" ||
		get(res, "InterceptorFunction", "Properties", "Role") != "!GetAtt InterceptorRole.Arn" {
		t.Error("a function does not run as its own role")
	}
}

// TestOutputsDocumented keeps docs/aws.md's "Stack outputs" table equal to the template's
// outputs: every output has a row, every row an output, and the condition it names.
func TestOutputsDocumented(t *testing.T) {
	outputs, _ := template(t)["Outputs"].(map[string]any)
	if len(outputs) == 0 {
		t.Fatal("template.yaml has no Outputs")
	}
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Stack outputs\n")
	if start < 0 {
		t.Fatal(`docs/aws.md has no "## Stack outputs" section`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	rowRE := regexp.MustCompile("(?m)^\\| `([A-Za-z0-9]+)` \\| ([^|]+) \\|")
	rows := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(section, -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	for name, o := range outputs {
		when, ok := rows[name]
		switch cond, _ := get(o, "Condition").(string); {
		case !ok:
			t.Errorf("output %s is not in docs/aws.md's Stack outputs table", name)
		case cond == "" && when != "always":
			t.Errorf("output %s: the table says %q, the template has no condition", name, when)
		case cond != "" && when == "always":
			t.Errorf("output %s: the table says always, the template's condition is %s", name, cond)
		}
	}
	for name := range rows {
		if _, ok := outputs[name]; !ok {
			t.Errorf("docs/aws.md's Stack outputs table names %s, which template.yaml does not output", name)
		}
	}
}
