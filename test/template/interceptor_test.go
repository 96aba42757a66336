package template_test

import (
	"slices"
	"strings"
	"testing"
)

// interceptorIDs are the resources EnableAgentCoreInterceptor adds (the gateway needs
// AgentCoreGatewayName as well).
var interceptorIDs = []string{"InterceptorRole", "InterceptorFunctionLogs", "InterceptorFunction", "InterceptorInvokePolicy", "AgentCoreGatewayRole",
	"InterceptorErrorsAlarm", "InterceptorThrottlesAlarm"}

// TestAgentCoreInterceptor: the interceptor exists only with EnableAgentCoreInterceptor; its
// function is built like the others (arm64, provided.al2023, bootstrap, its own log group,
// its own role, no reserved concurrency, no asynchronous trigger); its role may update only
// the SERVERS and AUDIT partitions; the gateway may invoke this function and nothing else,
// through a role that only bedrock-agentcore of this account may assume; the optional
// gateway puts the interceptor at both points; the outputs name the function and the role.
func TestAgentCoreInterceptor(t *testing.T) {
	_, off := defaults(t, nil)
	for id := range off {
		if slices.Contains(interceptorIDs, id) || strings.HasPrefix(id, "Interceptor") || strings.HasPrefix(id, "AgentCore") {
			t.Errorf("without EnableAgentCoreInterceptor the stack has %s", id)
		}
	}
	s, res := defaults(t, map[string]string{"EnableAgentCoreInterceptor": "true"})
	for _, id := range interceptorIDs {
		if _, ok := res[id]; !ok {
			t.Errorf("EnableAgentCoreInterceptor=true: no %s", id)
		}
	}
	if _, ok := res["AgentCoreGateway"]; ok {
		t.Error("a gateway without AgentCoreGatewayName")
	}
	fn := get(res["InterceptorFunction"], "Properties")
	if get(fn, "Runtime") != "provided.al2023" || !equal(get(fn, "Architectures"), []any{"arm64"}) || get(fn, "Handler") != "bootstrap" ||
		!equal(get(fn, "Role"), getAtt("InterceptorRole", "Arn")) || !equal(get(fn, "LoggingConfig", "LogGroup"), ref("InterceptorFunctionLogs")) ||
		get(fn, "ReservedConcurrentExecutions") != nil || get(fn, "LoggingConfig", "SystemLogLevel") != "WARN" {
		t.Errorf("InterceptorFunction = %v", fn)
	}
	if get(fn, "Environment", "Variables", "INTERCEPTOR_SHADOW") == nil || !equal(get(fn, "Environment", "Variables", "INTERCEPTOR_SHADOW"), ref("InterceptorShadow")) {
		t.Errorf("INTERCEPTOR_SHADOW does not come from the InterceptorShadow parameter: %v", get(fn, "Environment", "Variables"))
	}
	if s.str(ref("InterceptorShadow")) != "false" || s.str(ref("EnableAgentCoreInterceptor")) != "true" {
		t.Error("InterceptorShadow does not default to enforcing")
	}
	for _, id := range ofType(res, "AWS::Lambda::EventInvokeConfig") {
		if equal(get(res[id], "Properties", "FunctionName"), ref("InterceptorFunction")) {
			t.Error("the interceptor has an asynchronous invoke configuration: the gateway invokes it synchronously")
		}
	}
	// The role's policy: every update limited to the state partitions, no APPROVALS.
	for _, pol := range asSlice(get(res["InterceptorRole"], "Properties", "Policies")) {
		for _, st := range asSlice(get(pol, "PolicyDocument", "Statement")) {
			for _, a := range asSlice(get(st, "Action")) {
				if a == "dynamodb:UpdateItem" && !equal(get(st, "Condition", "ForAllValues:StringEquals", "dynamodb:LeadingKeys"), []any{"SERVERS", "AUDIT"}) {
					t.Errorf("InterceptorRole's UpdateItem is not limited to SERVERS and AUDIT: %v", st)
				}
				if strings.HasPrefix(a.(string), "kms:") || strings.HasPrefix(a.(string), "sqs:") || strings.HasPrefix(a.(string), "secretsmanager:") || a == "lambda:InvokeFunction" {
					t.Errorf("InterceptorRole grants %s", a)
				}
			}
		}
	}
	// The gateway's permission: lambda:InvokeFunction on this function only.
	invoke := asSlice(get(res["InterceptorInvokePolicy"], "Properties", "PolicyDocument", "Statement"))
	if len(invoke) != 1 || get(invoke[0], "Action") != "lambda:InvokeFunction" || get(invoke[0], "Effect") != "Allow" ||
		!equal(get(invoke[0], "Resource"), getAtt("InterceptorFunction", "Arn")) {
		t.Errorf("InterceptorInvokePolicy = %v, want lambda:InvokeFunction on InterceptorFunction only", invoke)
	}
	gr := get(res["AgentCoreGatewayRole"], "Properties")
	trust := asSlice(get(gr, "AssumeRolePolicyDocument", "Statement"))
	if len(trust) != 1 || get(trust[0], "Principal", "Service") != "bedrock-agentcore.amazonaws.com" || get(trust[0], "Action") != "sts:AssumeRole" ||
		!equal(get(trust[0], "Condition", "StringEquals", "aws:SourceAccount"), ref("AWS::AccountId")) {
		t.Errorf("AgentCoreGatewayRole's trust = %v, want bedrock-agentcore for this account only", trust)
	}
	if !equal(get(gr, "ManagedPolicyArns"), []any{ref("InterceptorInvokePolicy")}) || get(gr, "Policies") != nil {
		t.Errorf("AgentCoreGatewayRole holds %v %v, want the invoke policy only", get(gr, "ManagedPolicyArns"), get(gr, "Policies"))
	}
	// The log key lets the interceptor's role sign, only when it exists.
	signs := func(res map[string]map[string]any) bool {
		for _, st := range asSlice(get(res["LogKey"], "Properties", "KeyPolicy", "Statement")) {
			if slices.ContainsFunc(asSlice(get(st, "Principal", "AWS")), func(p any) bool { return equal(p, getAtt("InterceptorRole", "Arn")) }) {
				return slices.Contains(asSlice(get(st, "Action")), any("kms:Sign"))
			}
		}
		return false
	}
	if !signs(res) || signs(off) {
		t.Errorf("the log key lets InterceptorRole sign: %v with the interceptor, %v without", signs(res), signs(off))
	}
	outputs := asMap(s.tmpl["Outputs"])
	for _, o := range []string{"InterceptorFunctionArn", "AgentCoreGatewayRoleArn", "InterceptorInvokePolicyArn"} {
		if get(outputs, o, "Condition") != "AgentCoreInterceptor" {
			t.Errorf("output %s is missing or not conditional: %v", o, get(outputs, o))
		}
	}
	if !equal(get(outputs, "InterceptorFunctionArn", "Value"), getAtt("InterceptorFunction", "Arn")) || !equal(get(outputs, "AgentCoreGatewayRoleArn", "Value"), getAtt("AgentCoreGatewayRole", "Arn")) {
		t.Error("the outputs do not name the function's and the gateway role's ARNs")
	}

	// The optional gateway: MCP, AWS_IAM, the interceptor at REQUEST and RESPONSE, the role above.
	_, gw := defaults(t, map[string]string{"EnableAgentCoreInterceptor": "true", "AgentCoreGatewayName": "tools"})
	g := get(gw["AgentCoreGateway"], "Properties")
	ic := asSlice(get(g, "InterceptorConfigurations"))
	if get(gw["AgentCoreGateway"], "Type") != "AWS::BedrockAgentCore::Gateway" || get(g, "ProtocolType") != "MCP" || get(g, "AuthorizerType") != "AWS_IAM" ||
		!equal(get(g, "RoleArn"), getAtt("AgentCoreGatewayRole", "Arn")) || len(ic) != 1 ||
		!equal(get(ic[0], "Interceptor", "Lambda", "Arn"), getAtt("InterceptorFunction", "Arn")) || !equal(get(ic[0], "InterceptionPoints"), []any{"REQUEST", "RESPONSE"}) ||
		get(ic[0], "InputConfiguration", "PassRequestHeaders") != false || get(g, "ProtocolConfiguration") != nil {
		t.Errorf("AgentCoreGateway = %v", g)
	}
	_, noGW := defaults(t, map[string]string{"AgentCoreGatewayName": "tools"})
	if _, ok := noGW["AgentCoreGateway"]; ok {
		t.Error("a gateway without the interceptor")
	}
}
