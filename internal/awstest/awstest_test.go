package awstest

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"gopkg.in/yaml.v3"

	"github.com/agentgate-dev/agentgate/internal/testenv"
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

// TestTemplatePadsPolicy pins the pads function's IAM policy to the calls the driver makes:
// least privilege, and nothing that deletes or scans.
func TestTemplatePadsPolicy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	fn := child(child(doc.Content[0], "Resources"), "PadsFunction")
	var props struct {
		Policies []struct {
			Statement []struct {
				Effect   string    `yaml:"Effect"`
				Action   []string  `yaml:"Action"`
				Resource yaml.Node `yaml:"Resource"`
			} `yaml:"Statement"`
		} `yaml:"Policies"`
		Environment struct {
			Variables map[string]yaml.Node `yaml:"Variables"`
		} `yaml:"Environment"`
	}
	if err := child(fn, "Properties").Decode(&props); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, p := range props.Policies {
		for _, s := range p.Statement {
			if s.Effect != "Allow" || s.Resource.Tag != "!GetAtt" || s.Resource.Value != "PadsTable.Arn" {
				t.Errorf("statement %+v is not an Allow on PadsTable.Arn", s)
			}
			actions = append(actions, s.Action...)
		}
	}
	sort.Strings(actions)
	if want := []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}; !slices.Equal(actions, want) {
		t.Errorf("PadsFunction actions = %v, want exactly %v", actions, want)
	}
	if v := props.Environment.Variables["PADS_TABLE"]; v.Tag != "!Ref" || v.Value != "PadsTable" {
		t.Errorf("PADS_TABLE = %s %s, want !Ref PadsTable", v.Tag, v.Value)
	}
}
