package blob_test

import (
	"testing"

	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/blob/blobtest"
)

func TestMemConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return &blob.Mem{} })
}
