package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/catalogtest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// newCatalog returns a catalog on a fresh table created from template.yaml's CatalogTable.
func newCatalog(t *testing.T, opts ...func(*dynamodb.Options)) *dynamostore.Catalog {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "CatalogTable")
	c, err := dynamostore.NewCatalog(t.Context(), dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(cfg, opts...), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCatalogConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) warrant.Catalog { return newCatalog(t) })
}
