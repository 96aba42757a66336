package awstest

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"arn:aws:s3:::b/checkpoints/*", "arn:aws:s3:::b/checkpoints/1.json", true},
		{"arn:aws:s3:::b/checkpoints/*", "arn:aws:s3:::b/checkpoints/a/b/c", true},
		{"arn:aws:s3:::b/checkpoints/*", "arn:aws:s3:::b/other/1.json", false},
		{"arn:aws:s3:::b/checkpoints/*", "arn:aws:s3:::b", false},
		{"dynamodb:*", "dynamodb:PutItem", true},
		{"dynamodb:Get?tem", "dynamodb:GetItem", true},
		{"dynamodb:Get?tem", "dynamodb:GetIItem", false},
		{"*", "", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	} {
		if got := glob(c.p, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

const table = "arn:aws:dynamodb:us-east-1:123456789012:table/cat"

// crawlRole mirrors the shape of template.yaml's CrawlRole statements.
var crawlRole = []Statement{
	{Sid: "Read", Effect: "Allow", Action: []string{"dynamodb:GetItem", "dynamodb:Query"}, Resource: []string{table}},
	{Sid: "PutNewItems", Effect: "Allow", Action: []string{"dynamodb:PutItem", "dynamodb:ConditionCheckItem"}, Resource: []string{table}},
	{Sid: "UpdateStateOnly", Effect: "Allow", Action: []string{"dynamodb:UpdateItem"}, Resource: []string{table},
		Condition: map[string]map[string][]string{"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": {"SERVERS", "AUDIT"}}}},
}

func lk(keys ...string) map[string][]string { return map[string][]string{"dynamodb:LeadingKeys": keys} }

// TestEvaluateRefuses shows the evaluator refusing what IAM refuses: another table, an
// action not granted, an update outside the allowed partitions, an explicit deny, and an
// operator it does not know (denied rather than guessed).
func TestEvaluateRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		st   []Statement
		r    Request
		want Decision
	}{
		{"put on its table", crawlRole, Request{Action: "dynamodb:PutItem", Resource: table, Context: lk("SRV#a")}, Allowed},
		{"action names fold case", crawlRole, Request{Action: "DynamoDB:putitem", Resource: table}, Allowed},
		{"put on another table", crawlRole, Request{Action: "dynamodb:PutItem", Resource: table + "2"}, NotApplicable},
		{"delete is not granted", crawlRole, Request{Action: "dynamodb:DeleteItem", Resource: table, Context: lk("SERVERS")}, NotApplicable},
		{"update of a state partition", crawlRole, Request{Action: "dynamodb:UpdateItem", Resource: table, Context: lk("AUDIT")}, Allowed},
		{"update of a history item", crawlRole, Request{Action: "dynamodb:UpdateItem", Resource: table, Context: lk("SRV#weather")}, NotApplicable},
		{"update touching one allowed and one not", crawlRole, Request{Action: "dynamodb:UpdateItem", Resource: table, Context: lk("AUDIT", "APPROVALS")}, NotApplicable},
		// IAM's documented pitfall, modelled faithfully: ForAllValues holds for no values.
		{"ForAllValues with no keys", crawlRole, Request{Action: "dynamodb:UpdateItem", Resource: table}, Allowed},
		{"explicit deny wins", append([]Statement{{Effect: "Deny", Action: []string{"dynamodb:*"}, Resource: []string{"*"}}}, crawlRole...),
			Request{Action: "dynamodb:GetItem", Resource: table}, Denied},
		{"NotAction", []Statement{{Effect: "Allow", NotAction: []string{"dynamodb:DeleteItem"}, Resource: []string{"*"}}},
			Request{Action: "dynamodb:DeleteItem", Resource: table}, NotApplicable},
		{"StringEquals needs the key", []Statement{{Effect: "Allow", Action: []string{"kms:Sign"}, Resource: []string{"*"},
			Condition: map[string]map[string][]string{"StringEquals": {"kms:CallerAccount": {"123456789012"}}}}},
			Request{Action: "kms:Sign", Resource: "k"}, NotApplicable},
		{"StringEquals with the key", []Statement{{Effect: "Allow", Action: []string{"kms:Sign"}, Resource: []string{"*"},
			Condition: map[string]map[string][]string{"StringEquals": {"kms:CallerAccount": {"123456789012"}}}}},
			Request{Action: "kms:Sign", Resource: "k", Context: map[string][]string{"kms:CallerAccount": {"123456789012"}}}, Allowed},
		{"other account", []Statement{{Effect: "Allow", Action: []string{"kms:Sign"}, Resource: []string{"*"},
			Condition: map[string]map[string][]string{"StringEquals": {"kms:CallerAccount": {"123456789012"}}}}},
			Request{Action: "kms:Sign", Resource: "k", Context: map[string][]string{"kms:CallerAccount": {"210987654321"}}}, NotApplicable},
		{"Bool false", []Statement{{Effect: "Deny", Action: []string{"s3:*"}, Resource: []string{"*"},
			Condition: map[string]map[string][]string{"Bool": {"aws:SecureTransport": {"false"}}}}},
			Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/k", Context: map[string][]string{"aws:SecureTransport": {"false"}}}, Denied},
		{"principal by role", []Statement{{Effect: "Allow", Principal: []string{"arn:aws:iam::123456789012:role/crawl"}, Action: []string{"kms:Sign"}, Resource: []string{"*"}}},
			Request{Principal: "arn:aws:sts::123456789012:assumed-role/crawl/s1", Action: "kms:Sign", Resource: "k"}, Allowed},
		{"principal of another role", []Statement{{Effect: "Allow", Principal: []string{"arn:aws:iam::123456789012:role/crawl"}, Action: []string{"kms:Sign"}, Resource: []string{"*"}}},
			Request{Principal: "arn:aws:sts::123456789012:assumed-role/approvals/s1", Action: "kms:Sign", Resource: "k"}, NotApplicable},
	} {
		got, err := Evaluate(c.st, c.r)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	unknown := []Statement{{Effect: "Allow", Action: []string{"*"}, Resource: []string{"*"},
		Condition: map[string]map[string][]string{"DateGreaterThan": {"aws:CurrentTime": {"2020-01-01T00:00:00Z"}}}}}
	if d, err := Evaluate(unknown, Request{Action: "s3:GetObject", Resource: "x"}); d != Denied || err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("an unknown operator: %v, %v; want a denial with a reason", d, err)
	}
}

func TestParsePolicy(t *testing.T) {
	st, err := ParsePolicy([]byte(`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":["arn:aws:s3:::b/*"],
		"Condition":{"StringLike":{"s3:prefix":"a/*"}}}}`))
	if err != nil || len(st) != 1 || st[0].Action[0] != "s3:GetObject" || st[0].Condition["StringLike"]["s3:prefix"][0] != "a/*" {
		t.Fatalf("ParsePolicy = %+v, %v", st, err)
	}
	for _, bad := range []string{`{}`, `{"Statement":[{"Effect":"Allow"}]}`, `{"Statement":[{"Effect":"Allow","Action":"x","Bogus":1}]}`, `not json`} {
		if _, err := ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("ParsePolicy(%s) succeeded", bad)
		}
	}
}

func TestItemSize(t *testing.T) {
	for _, c := range []struct {
		json string
		want int
	}{
		{`{"pk":{"S":"abc"}}`, 2 + 3},
		{`{"n":{"N":"12345"}}`, 1 + 4},
		{`{"n":{"N":"-0.0012300"}}`, 1 + 3},
		{`{"b":{"B":"AAEC"}}`, 1 + 3},
		{`{"t":{"BOOL":true},"z":{"NULL":true}}`, 1 + 1 + 1 + 1},
		{`{"l":{"L":[{"S":"ab"},{"N":"1"}]}}`, 1 + 3 + (1 + 2) + (1 + 2)},
		{`{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + 1 + 1 + 1},
		{`{"ss":{"SS":["a","bb"]}}`, 2 + 3},
	} {
		var item map[string]attr
		if err := json.Unmarshal([]byte(c.json), &item); err != nil {
			t.Fatal(err)
		}
		if got, err := itemSize(item); err != nil || got != c.want {
			t.Errorf("itemSize(%s) = %d, %v; want %d", c.json, got, err, c.want)
		}
	}
}

func TestDynamoLimits(t *testing.T) {
	big := strings.Repeat("x", MaxItemBytes)
	item := func(n int) string { return `{"pk":{"S":"p"},"v":{"S":"` + strings.Repeat("x", n) + `"}}` }
	if e := dynamoLimits("PutItem", []byte(`{"Item":`+item(MaxItemBytes-4)+`}`)); e != nil {
		t.Errorf("an item of exactly 400 KB was refused: %s", e.msg)
	}
	if e := dynamoLimits("PutItem", []byte(`{"Item":`+item(MaxItemBytes-3)+`}`)); e == nil || !strings.Contains(e.typ, "ValidationException") {
		t.Errorf("an item one byte over 400 KB was accepted: %+v", e)
	}
	var tx []string
	for range 11 {
		tx = append(tx, `{"Put":{"TableName":"t","Item":`+item(390*1024)+`}}`)
	}
	if e := dynamoLimits("TransactWriteItems", []byte(`{"TransactItems":[`+strings.Join(tx, ",")+`]}`)); e == nil || !strings.Contains(e.msg, "4 MB") {
		t.Errorf("a 4.2 MB transaction was accepted: %+v", e)
	}
	if e := dynamoLimits("TransactWriteItems", []byte(`{"TransactItems":[`+strings.Join(tx[:10], ",")+`]}`)); e != nil {
		t.Errorf("a 3.9 MB transaction was refused: %s", e.msg)
	}
	if e := dynamoLimits("TransactWriteItems", []byte(`{"TransactItems":[{"Update":{"Key":{"pk":{"S":"a"}}}},{"Put":{"Item":{"pk":{"S":"b"},"v":{"S":"`+big+`"}}}}]}`)); e == nil ||
		!strings.Contains(e.typ, "TransactionCanceledException") || !strings.Contains(e.msg, "[None, ValidationError]") {
		t.Errorf("an oversized item in a transaction: %+v", e)
	}
	many := strings.TrimSuffix(strings.Repeat(`{"ConditionCheck":{"Key":{"pk":{"S":"a"}}}},`, MaxTransactItems+1), ",")
	if e := dynamoLimits("TransactWriteItems", []byte(`{"TransactItems":[`+many+`]}`)); e == nil || !strings.Contains(e.msg, "less than or equal to 100") {
		t.Errorf("101 transaction items were accepted: %+v", e)
	}
	keys := strings.TrimSuffix(strings.Repeat(`{"pk":{"S":"a"}},`, MaxBatchGetKeys+1), ",")
	if e := dynamoLimits("BatchGetItem", []byte(`{"RequestItems":{"t":{"Keys":[`+keys+`]}}}`)); e == nil {
		t.Error("a BatchGetItem of 101 keys was accepted")
	}
}
