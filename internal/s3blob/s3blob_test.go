package s3blob_test

import (
	"os"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/blob/blobtest"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func TestConformance(t *testing.T) {
	cfg := awstest.Config(t)
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := s3blob.New(s3blob.Config{Client: s3test.Client(cfg), Bucket: s3test.CreateBucket(t, cfg)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestObjectLock checks what the checkpoint bucket promises: an object put through the
// driver has a governance-mode retention, and a plain overwrite cannot replace it.
func TestObjectLock(t *testing.T) {
	cfg := awstest.Config(t)
	c := s3test.Client(cfg)
	bucket := s3test.CreateBucket(t, cfg)
	s, _ := s3blob.New(s3blob.Config{Client: c, Bucket: bucket})
	if err := s.PutIfAbsent(t.Context(), "checkpoints/1.json", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(t.Context(), headInput(bucket, "checkpoints/1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockMode != "GOVERNANCE" || head.ObjectLockRetainUntilDate == nil {
		t.Errorf("object lock = %q until %v, want GOVERNANCE with a date", head.ObjectLockMode, head.ObjectLockRetainUntilDate)
	}
}
