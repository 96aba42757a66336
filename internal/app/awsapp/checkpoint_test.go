package awsapp

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestCheckpointSourceURLs(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1"}
	for _, ok := range []string{"s3://dev-toolwarrant-checkpoints-1-us-east-1", "s3://b-1/checkpoints/"} {
		if _, err := CheckpointSource(t.Context(), cfg, ok, false); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"s3://", "https://b/", "s3://b/other/", "/tmp/dir"} {
		if _, err := CheckpointSource(t.Context(), cfg, bad, false); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
