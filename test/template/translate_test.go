package template_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
)

// defaults is a stack of the template with every parameter at its default, in us-east-1.
func defaults(t *testing.T, params map[string]string) (*stack, map[string]map[string]any) {
	t.Helper()
	tr := translate(t)
	s := newStack(t, tr, region{Name: "us-east-1", Partition: "aws", DNSSuffix: "amazonaws.com"}, "agentgate", params)
	return s, s.resources()
}

// alarmOn returns the alarms on metric (namespace, name) whose only dimension is dim=value.
func alarmOn(res map[string]map[string]any, namespace, metric, dim string, value any) []string {
	var ids []string
	for _, id := range ofType(res, "AWS::CloudWatch::Alarm") {
		p := res[id]["Properties"]
		if get(p, "Namespace") == namespace && get(p, "MetricName") == metric &&
			equal(get(p, "Dimensions"), []any{map[string]any{"Name": dim, "Value": value}}) {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestAlarms: an Errors and a Throttles alarm on every function; the crawl-failure and
// checkpoint-mismatch alarms on exactly the metrics the Go code emits (awsapp's constants);
// a depth alarm on every dead-letter queue; every alarm notifies the one SNS topic, whose
// email subscription exists only when AlarmEmail is set.
func TestAlarms(t *testing.T) {
	_, res := defaults(t, nil)
	fns := ofType(res, "AWS::Lambda::Function")
	if len(fns) < 4 {
		t.Fatalf("functions %v, want the pads, crawl, approvals and checkpoint functions", fns)
	}
	// With the interceptor, its function and the audit queue's sweep too.
	_, withInterceptor := defaults(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	if n := len(ofType(withInterceptor, "AWS::Lambda::Function")); n != len(fns)+2 {
		t.Errorf("EnableAgentCoreInterceptor=true: %d functions, want %d", n, len(fns)+2)
	}
	for _, stack := range []map[string]map[string]any{res, withInterceptor} {
		for _, fn := range ofType(stack, "AWS::Lambda::Function") {
			for _, metric := range []string{"Errors", "Throttles"} {
				if ids := alarmOn(stack, "AWS/Lambda", metric, "FunctionName", ref(fn)); len(ids) != 1 {
					t.Errorf("%s: %d alarms on %s, want 1", fn, len(ids), metric)
				}
			}
		}
	}
	emitted := map[string]bool{}
	for _, m := range []string{awsapp.MetricServersCrawled, awsapp.MetricServersFailed, awsapp.MetricCheckpointMismatch, awsapp.MetricCheckpointUnavailable} {
		emitted[m] = true
	}
	for _, want := range []struct{ metric, function string }{
		{awsapp.MetricServersFailed, "CrawlFunction"},
		{awsapp.MetricCheckpointMismatch, "CheckpointFunction"},
	} {
		ids := alarmOn(res, awsapp.MetricsNamespace, want.metric, awsapp.MetricDimension, ref(want.function))
		if len(ids) != 1 {
			t.Errorf("%d alarms on %s/%s for %s, want 1", len(ids), awsapp.MetricsNamespace, want.metric, want.function)
			continue
		}
		p := res[ids[0]]["Properties"]
		if get(p, "ComparisonOperator") != "GreaterThanOrEqualToThreshold" || get(p, "Threshold") != 1.0 {
			t.Errorf("%s fires at %v %v, want >= 1 (one failed server, one mismatch)", ids[0], get(p, "ComparisonOperator"), get(p, "Threshold"))
		}
	}
	topics := ofType(res, "AWS::SNS::Topic")
	if len(topics) != 1 {
		t.Fatalf("SNS topics %v, want one for every alarm", topics)
	}
	for _, id := range ofType(res, "AWS::CloudWatch::Alarm") {
		p := res[id]["Properties"]
		if !equal(get(p, "AlarmActions"), []any{ref(topics[0])}) {
			t.Errorf("%s: AlarmActions %v, want [%s]", id, get(p, "AlarmActions"), topics[0])
		}
		if get(p, "AlarmDescription") == nil {
			t.Errorf("%s has no description", id)
		}
		// An alarm in our namespace must watch a metric the functions emit, under the
		// dimension they emit it with.
		if get(p, "Namespace") == awsapp.MetricsNamespace {
			if m := get(p, "MetricName").(string); !emitted[m] {
				t.Errorf("%s watches %s, which no function emits", id, m)
			}
			if d := get(p, "Dimensions").([]any); len(d) != 1 || get(d[0], "Name") != awsapp.MetricDimension {
				t.Errorf("%s: dimensions %v, want only %s", id, d, awsapp.MetricDimension)
			}
		}
	}
	// A dead-letter or parked queue alarms on its depth; a work queue (one with a redrive
	// policy: messages are meant to be there) on the age of its oldest message, and its
	// redrive target is one of the former.
	for _, q := range ofType(res, "AWS::SQS::Queue") {
		if rp := get(res[q], "Properties", "RedrivePolicy"); rp != nil {
			if ids := alarmOn(res, "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", getAtt(q, "QueueName")); len(ids) != 1 {
				t.Errorf("work queue %s: %d age alarms, want 1", q, len(ids))
			}
			if att, _ := get(rp, "deadLetterTargetArn", "Fn::GetAtt").([]any); len(att) != 2 || res[fmt.Sprint(att[0])]["Type"] != "AWS::SQS::Queue" || get(res[fmt.Sprint(att[0])], "Properties", "RedrivePolicy") != nil {
				t.Errorf("work queue %s redrives to %v, want a queue of this stack without a redrive policy", q, get(rp, "deadLetterTargetArn"))
			}
			continue
		}
		if ids := alarmOn(res, "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", getAtt(q, "QueueName")); len(ids) != 1 {
			t.Errorf("queue %s: %d depth alarms, want 1", q, len(ids))
		}
	}
	subscriptions := func(res map[string]map[string]any) []string { return ofType(res, "AWS::SNS::Subscription") }
	if subs := subscriptions(res); len(subs) != 0 {
		t.Errorf("subscriptions without AlarmEmail: %v", subs)
	}
	_, withEmail := defaults(t, map[string]string{"AlarmEmail": "ops@example.com"})
	subs := subscriptions(withEmail)
	if len(subs) != 1 || !equal(get(withEmail[subs[0]], "Properties"), map[string]any{"TopicArn": ref(topics[0]), "Protocol": "email", "Endpoint": ref("AlarmEmail")}) {
		t.Errorf("with AlarmEmail: subscriptions %v", subs)
	}
}

// TestAsyncTriggers: every EventBridge rule's targets retry for a bounded time and then
// dead-letter into an SQS queue that lets EventBridge in for those rules only; every
// function they invoke has an EventInvokeConfig (bounded retries and age, OnFailure to an
// SQS queue) and a role that may send to exactly that queue. The only other SQS grants are
// a work queue's: its one sender's SendMessage, and its consumer's receive, delete and
// attributes (Lambda's poller).
func TestAsyncTriggers(t *testing.T) {
	_, res := defaults(t, nil)
	rules := ofType(res, "AWS::Events::Rule")
	if len(rules) != 3 {
		t.Errorf("rules %v, want the crawl's schedule and manual rule and the checkpoint's schedule", rules)
	}
	queueAllowsRule := func(queue, rule string) bool {
		for _, id := range ofType(res, "AWS::SQS::QueuePolicy") {
			p := res[id]["Properties"]
			if !slices.ContainsFunc(get(p, "Queues").([]any), func(q any) bool { return equal(q, ref(queue)) }) {
				continue
			}
			for _, st := range get(p, "PolicyDocument", "Statement").([]any) {
				src := get(st, "Condition", "ArnEquals", "aws:SourceArn")
				srcs, ok := src.([]any)
				if !ok {
					srcs = []any{src}
				}
				if get(st, "Effect") == "Allow" && get(st, "Principal", "Service") == "events.amazonaws.com" && get(st, "Action") == "sqs:SendMessage" &&
					equal(get(st, "Resource"), getAtt(queue, "Arn")) && slices.ContainsFunc(srcs, func(a any) bool { return equal(a, getAtt(rule, "Arn")) }) {
					return true
				}
			}
		}
		return false
	}
	asyncFns := map[string]string{} // function → its rules' dead-letter queue
	for _, rule := range rules {
		for _, tg := range get(res[rule], "Properties", "Targets").([]any) {
			rp := get(tg, "RetryPolicy")
			if n, ok := get(rp, "MaximumRetryAttempts").(float64); !ok || n < 1 {
				t.Errorf("%s: target retry policy %v", rule, rp)
			}
			if age, ok := get(rp, "MaximumEventAgeInSeconds").(float64); !ok || age < 60 || age > 86400 {
				t.Errorf("%s: target event age %v", rule, rp)
			}
			dlq := get(tg, "DeadLetterConfig", "Arn")
			att, _ := get(dlq, "Fn::GetAtt").([]any)
			if len(att) != 2 || att[1] != "Arn" || res[att[0].(string)]["Type"] != "AWS::SQS::Queue" {
				t.Errorf("%s: dead-letter config %v is not an SQS queue of this stack", rule, dlq)
				continue
			}
			queue := att[0].(string)
			if !queueAllowsRule(queue, rule) {
				t.Errorf("%s: queue %s does not let events.amazonaws.com send for this rule", rule, queue)
			}
			fn, _ := get(tg, "Arn", "Fn::GetAtt").([]any)
			if len(fn) != 2 || res[fn[0].(string)]["Type"] != "AWS::Lambda::Function" {
				t.Errorf("%s: target %v is not a function of this stack", rule, get(tg, "Arn"))
				continue
			}
			if q, ok := asyncFns[fn[0].(string)]; ok && q != queue {
				t.Errorf("%s dead-letters to %s and %s: one queue per function", fn[0], q, queue)
			}
			asyncFns[fn[0].(string)] = queue
		}
	}
	if len(asyncFns) != 2 {
		t.Errorf("asynchronously invoked functions %v, want the crawl and the checkpoint", asyncFns)
	}
	// Work queues are the queues of SQS event sources. The consuming function reports
	// partial batch failures, and its role may do exactly what Lambda's poller does as it
	// (receive, delete, read the queue's attributes) on that queue; one role may send to it.
	consumerOf, producers := map[string]string{}, map[string][]string{} // role → its work queue; work queue → roles sending to it
	for _, id := range ofType(res, "AWS::Lambda::EventSourceMapping") {
		p := res[id]["Properties"]
		att, _ := get(p, "EventSourceArn", "Fn::GetAtt").([]any)
		fn, _ := get(p, "FunctionName", "Ref").(string)
		role, _ := get(res[fn], "Properties", "Role", "Fn::GetAtt").([]any)
		if len(att) != 2 || res[fmt.Sprint(att[0])]["Type"] != "AWS::SQS::Queue" || len(role) != 2 {
			t.Errorf("%s: event source %v of %q is not a queue and function of this stack", id, get(p, "EventSourceArn"), fn)
			continue
		}
		if !equal(get(p, "FunctionResponseTypes"), []any{"ReportBatchItemFailures"}) {
			t.Errorf("%s: FunctionResponseTypes %v, want [ReportBatchItemFailures]: a failed server must not fail its batch", id, get(p, "FunctionResponseTypes"))
		}
		consumerOf[fmt.Sprint(role[0])] = fmt.Sprint(att[0])
		producers[fmt.Sprint(att[0])] = nil
	}
	if len(consumerOf) == 0 {
		t.Error("no SQS event source: the crawl queue's workers")
	}
	sqsGrants := map[string][]any{} // role → resources of its sqs:SendMessage statements to other than a work queue
	for _, role := range ofType(res, "AWS::IAM::Role") {
		for _, pol := range asSlice(get(res[role], "Properties", "Policies")) {
			for _, st := range asSlice(get(pol, "PolicyDocument", "Statement")) {
				for _, a := range asSlice(get(st, "Action")) {
					if !strings.HasPrefix(fmt.Sprint(a), "sqs:") {
						continue
					}
					if get(st, "Effect") != "Allow" {
						t.Errorf("%s: %v %v", role, get(st, "Effect"), a)
					}
					att, _ := get(st, "Resource", "Fn::GetAtt").([]any)
					queue := ""
					if len(att) == 2 {
						queue = fmt.Sprint(att[0])
					}
					switch _, work := producers[queue]; {
					case a == "sqs:ReceiveMessage" || a == "sqs:DeleteMessage" || a == "sqs:GetQueueAttributes":
						if consumerOf[role] == "" || queue != consumerOf[role] {
							t.Errorf("%s: %v on %v, but its function consumes %q", role, a, get(st, "Resource"), consumerOf[role])
						}
					case a != "sqs:SendMessage":
						t.Errorf("%s: %v %v", role, get(st, "Effect"), a)
					case work:
						producers[queue] = append(producers[queue], role)
					default:
						sqsGrants[role] = append(sqsGrants[role], get(st, "Resource"))
					}
				}
			}
		}
		if len(asSlice(get(res[role], "Properties", "ManagedPolicyArns"))) > 2 {
			t.Errorf("%s has managed policies %v", role, get(res[role], "Properties", "ManagedPolicyArns"))
		}
	}
	for fn, queue := range asyncFns {
		var cfg map[string]any
		for _, id := range ofType(res, "AWS::Lambda::EventInvokeConfig") {
			if equal(get(res[id], "Properties", "FunctionName"), ref(fn)) {
				cfg = asMap(res[id]["Properties"])
			}
		}
		if cfg == nil {
			t.Errorf("%s has no EventInvokeConfig", fn)
			continue
		}
		if n, ok := cfg["MaximumRetryAttempts"].(float64); !ok || n > 2 {
			t.Errorf("%s: MaximumRetryAttempts %v", fn, cfg["MaximumRetryAttempts"])
		}
		if age, ok := cfg["MaximumEventAgeInSeconds"].(float64); !ok || age < 60 || age > 21600 {
			t.Errorf("%s: MaximumEventAgeInSeconds %v", fn, cfg["MaximumEventAgeInSeconds"])
		}
		if got := get(cfg, "DestinationConfig", "OnFailure", "Destination"); !equal(got, getAtt(queue, "Arn")) {
			t.Errorf("%s: OnFailure %v, want %s", fn, got, queue)
		}
		role, _ := get(res[fn], "Properties", "Role", "Fn::GetAtt").([]any)
		if len(role) != 2 {
			t.Errorf("%s has no role of this stack", fn)
			continue
		}
		if got := sqsGrants[role[0].(string)]; !equal(got, []any{getAtt(queue, "Arn")}) {
			t.Errorf("%s (role %s) may sqs:SendMessage to %v, want exactly %s", fn, role[0], got, queue)
		}
		delete(sqsGrants, role[0].(string))
	}
	if len(sqsGrants) != 0 {
		t.Errorf("roles of synchronous functions may use SQS: %v", sqsGrants)
	}
	for q, roles := range producers {
		if len(roles) != 1 {
			t.Errorf("work queue %s: roles sending to it %v, want one (the dispatcher's)", q, roles)
		}
	}
}

func asSlice(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// accessLogVars are the $context variables an access log line may hold: none of them can
// carry a write key or a read ticket (those travel in the Authorization header or, for
// tickets, the query string, which $context.path does not include).
var accessLogVars = map[string]bool{
	"requestId": true, "requestTime": true, "requestTimeEpoch": true, "identity.sourceIp": true, "identity.userAgent": true,
	"routeKey": true, "path": true, "httpMethod": true, "protocol": true, "status": true, "responseLatency": true,
	"integrationLatency": true, "integrationStatus": true, "responseLength": true, "identity.userArn": true,
	"identity.caller": true, "identity.accountId": true, "error.message": true, "integrationErrorMessage": true,
	"domainName": true, "stage": true, "apiId": true,
}

// TestAPIStage: the HTTP API's stage is throttled from the parameters (pad creation more
// tightly than the rest), and logs every request as one JSON object of safe fields.
func TestAPIStage(t *testing.T) {
	s, res := defaults(t, nil)
	stages := ofType(res, "AWS::ApiGatewayV2::Stage")
	if len(stages) != 1 {
		t.Fatalf("stages %v", stages)
	}
	p := res[stages[0]]["Properties"]
	num := func(v any) float64 {
		t.Helper()
		f, err := strconv.ParseFloat(s.str(v), 64)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		return f
	}
	for _, c := range []struct {
		path        []string
		rate, burst string
	}{
		{[]string{"DefaultRouteSettings"}, "ApiThrottleRate", "ApiThrottleBurst"},
		{[]string{"RouteSettings", "POST /v1/pads"}, "PadCreateThrottleRate", "PadCreateThrottleBurst"},
	} {
		st := get(p, c.path...)
		if !equal(get(st, "ThrottlingRateLimit"), ref(c.rate)) || !equal(get(st, "ThrottlingBurstLimit"), ref(c.burst)) {
			t.Errorf("%v = %v, want the %s/%s parameters", c.path, st, c.rate, c.burst)
		}
		if num(ref(c.rate)) <= 0 || num(ref(c.burst)) < num(ref(c.rate)) {
			t.Errorf("%v: defaults rate %s, burst %s", c.path, s.str(ref(c.rate)), s.str(ref(c.burst)))
		}
	}
	if num(ref("PadCreateThrottleRate")) > num(ref("ApiThrottleRate")) {
		t.Error("pad creation is throttled less than the other routes")
	}
	if got := len(asMap(get(p, "RouteSettings"))); got != 1 {
		t.Errorf("%d route settings, want only POST /v1/pads", got)
	}

	dest, _ := get(p, "AccessLogSettings", "DestinationArn", "Fn::GetAtt").([]any)
	if len(dest) != 2 || res[dest[0].(string)]["Type"] != "AWS::Logs::LogGroup" {
		t.Errorf("access logs go to %v, not a log group of this stack", get(p, "AccessLogSettings", "DestinationArn"))
	}
	format, _ := get(p, "AccessLogSettings", "Format").(string)
	var fields map[string]string
	if err := json.Unmarshal([]byte(format), &fields); err != nil {
		t.Fatalf("the access log format is not one JSON object of strings: %v\n%s", err, format)
	}
	for _, want := range []string{"requestId", "ip", "routeKey", "status", "latencyMs", "principal"} {
		if fields[want] == "" {
			t.Errorf("the access log has no %s", want)
		}
	}
	one := regexp.MustCompile(`^\$context\.([A-Za-z.]+)$`)
	for k, v := range fields {
		m := one.FindStringSubmatch(v)
		if m == nil || !accessLogVars[m[1]] {
			t.Errorf("access log field %s = %q: not one of the $context variables that cannot carry a secret", k, v)
		}
	}
	if strings.Contains(format, "$request") || strings.Contains(format, "$input") {
		t.Errorf("the access log format reads the request itself: %s", format)
	}
}

// security returns each route's security requirement in the stack's API body.
func security(t *testing.T, res map[string]map[string]any) map[string]any {
	t.Helper()
	apis := ofType(res, "AWS::ApiGatewayV2::Api")
	if len(apis) != 1 {
		t.Fatalf("HTTP APIs %v", apis)
	}
	out := map[string]any{}
	for path, ops := range asMap(get(res[apis[0]], "Properties", "Body", "paths")) {
		for method, op := range asMap(ops) {
			out[strings.ToUpper(method)+" "+path] = get(op, "security")
		}
	}
	return out
}

// TestPadCreation: PadCreation=iam puts the AWS_IAM authorizer on POST /v1/pads and on no
// other route, and adds the policy that lets a principal call it; public leaves the pad
// routes open, as the Padlock contract says.
func TestPadCreation(t *testing.T) {
	iamAuth := []any{map[string]any{"AWS_IAM": []any{}}}
	_, public := defaults(t, nil)
	_, private := defaults(t, map[string]string{"PadCreation": "iam"})
	pub, priv := security(t, public), security(t, private)
	if len(pub) < 10 {
		t.Fatalf("routes %v", pub)
	}
	for route, sec := range pub {
		want := sec
		if route == "POST /v1/pads" {
			if sec != nil {
				t.Errorf("public: POST /v1/pads has security %v", sec)
			}
			want = iamAuth
		}
		if !equal(priv[route], want) {
			t.Errorf("iam: %s security %v, want %v", route, priv[route], want)
		}
		if strings.Contains(route, "/v1/pads") || strings.Contains(route, "/health") || strings.Contains(route, "$default") {
			if sec != nil {
				t.Errorf("public: pad route %s has security %v", route, sec)
			}
		} else if !equal(sec, iamAuth) {
			t.Errorf("approvals route %s has security %v, want AWS_IAM", route, sec)
		}
	}
	if got := ofType(public, "AWS::IAM::ManagedPolicy"); slices.Contains(got, "PadCreatorPolicy") {
		t.Error("public: PadCreatorPolicy exists")
	}
	if _, ok := private["PadCreatorPolicy"]; !ok {
		t.Fatal("iam: no PadCreatorPolicy")
	}
	st := get(private["PadCreatorPolicy"], "Properties", "PolicyDocument", "Statement").([]any)
	if len(st) != 1 || get(st[0], "Action") != "execute-api:Invoke" || !strings.HasSuffix(fmt.Sprint(get(st[0], "Resource", "Fn::Sub")), "/*/POST/v1/pads") {
		t.Errorf("PadCreatorPolicy = %v, want execute-api:Invoke on POST /v1/pads only", st)
	}
}

// stateful are the resource types that hold data or history and outlive the stack.
var stateful = map[string]string{
	"AWS::DynamoDB::Table": "TableName",
	"AWS::Logs::LogGroup":  "LogGroupName",
	"AWS::S3::Bucket":      "BucketName",
	"AWS::KMS::Key":        "",
}

// TestRetention: stateful resources are RetainExceptOnCreate (deleted by a failed first
// create's rollback, kept otherwise) and Retain on replacement; by default they have no fixed
// name, so deploying the same Stage after a stack delete does not collide with what the last
// one left; ResourceNames=legacy gives back exactly the names stacks had before, so updating
// one does not replace its tables. Table deletion protection follows its parameter, and is on
// for legacy stacks, which had it.
func TestRetention(t *testing.T) {
	s, res := defaults(t, nil)
	n := 0
	for id, r := range res {
		nameProp, ok := stateful[r["Type"].(string)]
		if !ok {
			continue
		}
		n++
		if r["DeletionPolicy"] != "RetainExceptOnCreate" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v; want RetainExceptOnCreate, Retain", id, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
		if nameProp != "" && get(r, "Properties", nameProp) != nil {
			t.Errorf("%s has the fixed name %s; a retained copy would block the next stack", id, s.str(get(r, "Properties", nameProp)))
		}
	}
	if n < 8 {
		t.Errorf("%d stateful resources, want the two tables, five log groups, the bucket and the key", n)
	}
	for id, r := range res {
		if _, ok := stateful[r["Type"].(string)]; !ok && r["DeletionPolicy"] != nil && r["DeletionPolicy"] != "Delete" {
			t.Errorf("%s (%s) is retained: a stack delete would leave it, and its name, behind", id, r["Type"])
		}
	}
	for _, id := range ofType(res, "AWS::DynamoDB::Table") {
		if get(res[id], "Properties", "DeletionProtectionEnabled") != false {
			t.Errorf("%s is deletion-protected on a first deploy, which a failed create could not roll back", id)
		}
	}

	// The names every stack had before ResourceNames (git show before issue 14).
	legacy, lres := defaults(t, map[string]string{"ResourceNames": "legacy", "Stage": "dev"})
	want := map[string]string{
		"PadsTable":              "dev-agentgate-pads",
		"CatalogTable":           "dev-toolwarrant-catalog",
		"CheckpointBucket":       "dev-toolwarrant-checkpoints-123456789012-us-east-1",
		"PadsFunctionLogs":       "/aws/lambda/dev-agentgate-pads",
		"CrawlFunctionLogs":      "/aws/lambda/dev-toolwarrant-crawl",
		"ApprovalsFunctionLogs":  "/aws/lambda/dev-toolwarrant-approvals",
		"CheckpointFunctionLogs": "/aws/lambda/dev-toolwarrant-checkpoint",
	}
	for id, name := range want {
		prop := stateful[lres[id]["Type"].(string)]
		if got := get(lres[id], "Properties", prop); got == nil || legacy.str(got) != name {
			t.Errorf("legacy %s = %v, want %s", id, got, name)
		}
	}
	for _, c := range []struct {
		params map[string]string
		want   bool
	}{
		{map[string]string{"TableDeletionProtection": "true"}, true},
		{map[string]string{"ResourceNames": "legacy"}, true},
		{map[string]string{"ResourceNames": "legacy", "TableDeletionProtection": "false"}, true},
	} {
		_, r := defaults(t, c.params)
		for _, id := range ofType(r, "AWS::DynamoDB::Table") {
			if got := get(r[id], "Properties", "DeletionProtectionEnabled"); got != c.want {
				t.Errorf("%v: %s DeletionProtectionEnabled = %v", c.params, id, got)
			}
		}
	}
}

// nameLimits are the name properties of the resource types the template makes, with each
// service's limit; a type absent from here and from unnamed fails TestNameLengths, so a new
// kind of resource gets its limit written down.
var nameLimits = map[string]struct {
	prop  string
	limit int
}{
	"AWS::Lambda::Function":           {"FunctionName", 64},
	"AWS::KMS::Alias":                 {"AliasName", 256},
	"AWS::CloudWatch::Alarm":          {"AlarmName", 255},
	"AWS::S3::Bucket":                 {"BucketName", 63},
	"AWS::DynamoDB::Table":            {"TableName", 255},
	"AWS::Logs::LogGroup":             {"LogGroupName", 512},
	"AWS::IAM::Role":                  {"RoleName", 64},
	"AWS::IAM::ManagedPolicy":         {"ManagedPolicyName", 128},
	"AWS::SQS::Queue":                 {"QueueName", 80},
	"AWS::SNS::Topic":                 {"TopicName", 256},
	"AWS::Events::Rule":               {"Name", 64},
	"AWS::ApiGatewayV2::Stage":        {"StageName", 128},
	"AWS::ApiGatewayV2::Api":          {"Name", 128},
	"AWS::KMS::Key":                   {"", 0},
	"AWS::SNS::Subscription":          {"", 0},
	"AWS::SQS::QueuePolicy":           {"", 0},
	"AWS::S3::BucketPolicy":           {"", 0},
	"AWS::Lambda::Permission":         {"", 0},
	"AWS::Lambda::EventInvokeConfig":  {"", 0},
	"AWS::Lambda::EventSourceMapping": {"", 0},
	"AWS::BedrockAgentCore::Gateway":  {"Name", 100},
	// The distribution is unnamed; the origin access control's name is nested
	// (OriginAccessControlConfig.Name, 64) and checked in TestNameLengths.
	"AWS::CloudFront::Distribution":        {"", 0},
	"AWS::CloudFront::OriginAccessControl": {"", 0},
}

// longest returns the longest string the pattern accepts (CloudFormation anchors
// AllowedPattern at both ends), up to 256 characters.
func longest(t *testing.T, pattern string) int {
	t.Helper()
	re := regexp.MustCompile(`^(?:` + pattern + `)$`)
	n := 0
	for l := 1; l <= 256; l++ {
		if re.MatchString(strings.Repeat("a", l)) {
			n = l
		}
	}
	if n == 0 || n == 256 {
		t.Fatalf("pattern %s: longest match %d", pattern, n)
	}
	return n
}

// TestNameLengths: every name the template builds stays within its service's limit with
// the longest Stage its pattern allows, the longest stack name CloudFormation allows (128)
// and the longest region name botocore knows — every region, in fact. Resources without a
// name are named by CloudFormation, which keeps to the limits.
func TestNameLengths(t *testing.T) {
	tr := translate(t)
	stageLen := longest(t, asMap(get(tr.template, "Parameters", "Stage"))["AllowedPattern"].(string))
	if stageLen < 16 {
		t.Errorf("the longest Stage is %d characters; existing stacks use up to 16", stageLen)
	}
	stage := strings.Repeat("s", stageLen)
	stackName := "ab" + strings.Repeat("-b", 63) // 128 characters, [a-zA-Z][-a-zA-Z0-9]*
	longestRegion := ""
	for _, r := range tr.regions {
		if len(r.Name) > len(longestRegion) {
			longestRegion = r.Name
		}
	}
	if len(longestRegion) < len("ap-southeast-2") {
		t.Fatalf("regions %v: botocore's list looks wrong", tr.regions)
	}
	t.Logf("Stage of %d characters, stack name of %d, regions up to %q", stageLen, len(stackName), longestRegion)
	checked := 0
	for _, reg := range tr.regions {
		// Every optional resource on: the interceptor, its gateway with the longest name.
		s := newStack(t, tr, reg, stackName, map[string]string{"Stage": stage, "EnableAgentCoreInterceptor": "true", "AgentCoreGatewayName": strings.Repeat("g", 100),
			"TilesCdn": "true"})
		for id, r := range s.resources() {
			typ := r["Type"].(string)
			if typ == "AWS::CloudFront::OriginAccessControl" {
				name := s.str(get(r, "Properties", "OriginAccessControlConfig", "Name"))
				checked++
				if len(name) > 64 || len(name) < len("toolwarrant-tiles-")+36 {
					t.Errorf("%s in %s: OriginAccessControlConfig.Name %q is %d characters (limit 64)", id, reg.Name, name, len(name))
				}
			}
			lim, ok := nameLimits[typ]
			if !ok {
				t.Errorf("%s: no name limit known for %s; add it to nameLimits", id, typ)
				continue
			}
			if lim.prop == "" {
				continue
			}
			v := get(r, "Properties", lim.prop)
			if typ == "AWS::ApiGatewayV2::Api" && v == nil {
				v = get(r, "Properties", "Body", "info", "title") // an imported API is named by its title
			}
			if v == nil {
				continue
			}
			name := s.str(v)
			checked++
			if len(name) > lim.limit {
				t.Errorf("%s in %s: %s %q is %d characters, over %d", id, reg.Name, lim.prop, name, len(name), lim.limit)
			}
		}
	}
	if checked == 0 {
		t.Error("no name checked")
	}
}
