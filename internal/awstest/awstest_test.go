package awstest

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestTemplatePadsTable(t *testing.T) {
	spec := TemplateTable(t, "PadsTable")
	if len(spec.KeySchema) != 2 || spec.KeySchema[0].AttributeName != "pk" || spec.KeySchema[0].KeyType != "HASH" ||
		spec.KeySchema[1].AttributeName != "sk" || spec.KeySchema[1].KeyType != "RANGE" {
		t.Errorf("KeySchema = %+v, want pk HASH, sk RANGE", spec.KeySchema)
	}
	if spec.BillingMode != "PAY_PER_REQUEST" || !spec.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled || !spec.SSESpecification.SSEEnabled {
		t.Errorf("PadsTable must be pay-per-request with PITR and SSE: %+v", spec)
	}
	if spec.TimeToLiveSpecification != nil && spec.TimeToLiveSpecification.Enabled {
		t.Errorf("PadsTable enables TTL; nothing may be deleted")
	}
}

func TestParseTableTags(t *testing.T) {
	raw := []byte("Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      TableName: !Sub \"${Stage}-x\"\n" +
		"      KeySchema:\n        - {AttributeName: id, KeyType: HASH}\n      Tags:\n        - {Key: a, Value: !Ref Stage}\n")
	spec, err := parseTable(raw, "T")
	if err != nil || len(spec.KeySchema) != 1 || spec.KeySchema[0].AttributeName != "id" {
		t.Errorf("parseTable = %+v, %v", spec, err)
	}
	for _, bad := range []string{"Resources: {}\n", "Resources:\n  T:\n    Type: AWS::S3::Bucket\n", "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties: {}\n"} {
		if _, err := parseTable([]byte(bad), "T"); err == nil {
			t.Errorf("parseTable(%q) succeeded", bad)
		}
	}
}

func TestCreateTable(t *testing.T) {
	cfg := Config(t)
	name := PadsTable(t, cfg)
	calls := NewCalls()
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) })
	out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Table.KeySchema[0].AttributeName); got != "pk" {
		t.Errorf("hash key = %s", got)
	}
	if got := calls.Take(); got["DescribeTable"] != 1 || len(got) != 1 {
		t.Errorf("calls = %v, want one DescribeTable", got)
	}
}
