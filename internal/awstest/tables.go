package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TableSpec is the part of an AWS::DynamoDB::Table resource that shapes the data: what the
// tests create. Deployment-only settings (PITR, SSE) are parsed to be checked by tests but
// not applied to throwaway tables. Deletion protection is not parsed: the template sets it
// from a condition (TableDeletionProtection), which test/template evaluates.
type TableSpec struct {
	AttributeDefinitions []struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	} `yaml:"AttributeDefinitions"`
	KeySchema []struct {
		AttributeName string `yaml:"AttributeName"`
		KeyType       string `yaml:"KeyType"`
	} `yaml:"KeySchema"`
	BillingMode                      string `yaml:"BillingMode"`
	PointInTimeRecoverySpecification struct {
		PointInTimeRecoveryEnabled bool `yaml:"PointInTimeRecoveryEnabled"`
	} `yaml:"PointInTimeRecoverySpecification"`
	SSESpecification struct {
		SSEEnabled bool `yaml:"SSEEnabled"`
	} `yaml:"SSESpecification"`
	TimeToLiveSpecification *struct {
		Enabled bool `yaml:"Enabled"`
	} `yaml:"TimeToLiveSpecification"`
}

// TemplateTable reads the Properties of the DynamoDB table resource logicalID from the
// repository's template.yaml. CloudFormation's short-form tags (!Sub, !Ref, !GetAtt) are
// walked as plain nodes, so the template is read as deployed, not from a copy.
func TemplateTable(t testing.TB, logicalID string) TableSpec {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(t), "template.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	spec, err := parseTable(raw, logicalID)
	if err != nil {
		t.Fatalf("awstest: %s: %v", path, err)
	}
	return spec
}

func parseTable(raw []byte, logicalID string) (TableSpec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return TableSpec{}, err
	}
	if len(doc.Content) != 1 {
		return TableSpec{}, fmt.Errorf("not a YAML document")
	}
	res := child(doc.Content[0], "Resources")
	r := child(res, logicalID)
	if r == nil {
		return TableSpec{}, fmt.Errorf("no resource %s", logicalID)
	}
	if typ := child(r, "Type"); typ == nil || typ.Value != "AWS::DynamoDB::Table" {
		return TableSpec{}, fmt.Errorf("resource %s is not an AWS::DynamoDB::Table", logicalID)
	}
	props := child(r, "Properties")
	if props == nil {
		return TableSpec{}, fmt.Errorf("resource %s has no Properties", logicalID)
	}
	var spec TableSpec
	for _, key := range []string{"AttributeDefinitions", "KeySchema", "BillingMode",
		"PointInTimeRecoverySpecification", "SSESpecification", "TimeToLiveSpecification"} {
		n := child(props, key)
		if n == nil {
			continue
		}
		one := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, n}}
		if err := one.Decode(&spec); err != nil {
			return TableSpec{}, fmt.Errorf("%s.Properties.%s: %w", logicalID, key, err)
		}
	}
	if len(spec.KeySchema) == 0 {
		return TableSpec{}, fmt.Errorf("resource %s has no KeySchema", logicalID)
	}
	return spec, nil
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// CreateTable creates a new, uniquely named table from the template's definition of
// logicalID, waits until it is active, and deletes it when the test ends. It returns the
// table's name.
func CreateTable(t testing.TB, cfg aws.Config, logicalID string) string {
	t.Helper()
	spec := TemplateTable(t, logicalID)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "agentgate-test-" + hex.EncodeToString(b[:])
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingMode(spec.BillingMode)}
	for _, a := range spec.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: types.ScalarAttributeType(a.AttributeType)})
	}
	for _, k := range spec.KeySchema {
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: types.KeyType(k.KeyType)})
	}
	if in.BillingMode == "" {
		in.BillingMode = types.BillingModePayPerRequest
	}
	client := dynamodb.NewFromConfig(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := client.CreateTable(ctx, in); err != nil {
		t.Fatalf("awstest: create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Logf("awstest: delete table %s: %v", name, err)
		}
	})
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		t.Fatalf("awstest: wait for table %s: %v", name, err)
	}
	return name
}

// PadsTable creates a table shaped like template.yaml's PadsTable and returns its name.
func PadsTable(t testing.TB, cfg aws.Config) string {
	t.Helper()
	return CreateTable(t, cfg, "PadsTable")
}
