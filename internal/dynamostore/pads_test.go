package dynamostore_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/locker/storetest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// newStore returns a PadStore on a fresh table shaped like template.yaml's PadsTable.
// Extra APIOptions (call counters, fault injectors) are installed on its client.
func newStore(t testing.TB, apiOptions ...func(*dynamodb.Options)) *dynamostore.PadStore {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.PadsTable(t, cfg)
	s, err := dynamostore.New(dynamostore.Config{Client: dynamodb.NewFromConfig(cfg, apiOptions...), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) locker.Store { return newStore(t) })
}
