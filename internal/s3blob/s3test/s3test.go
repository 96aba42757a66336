// Package s3test creates throwaway S3 buckets for integration tests on the endpoint
// internal/awstest chose, shaped like template.yaml's buckets: CheckpointBucket
// (versioned, with Object Lock in governance mode) and CatalogBlobBucket (versioned).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Client returns a path-style S3 client on cfg (emulators serve no virtual hosts). It does
// not log the responses whose checksum it cannot validate (emulators send none).
func Client(cfg aws.Config, opts ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(o *s3.Options) {
		o.UsePathStyle, o.DisableLogOutputChecksumValidationSkipped = true, true
	}}, opts...)...)
}

// CreateBucket creates a uniquely named bucket with versioning and Object Lock (governance
// mode, one day by default), and returns its name. Locked objects outlive the test: on an
// emulator they vanish with it; in a real account use a throwaway one.
func CreateBucket(t testing.TB, cfg aws.Config) string {
	t.Helper()
	return createBucket(t, cfg, true)
}

// CreateVersionedBucket creates a uniquely named bucket with versioning and no Object
// Lock, shaped like template.yaml's CatalogBlobBucket, and returns its name.
func CreateVersionedBucket(t testing.TB, cfg aws.Config) string {
	t.Helper()
	return createBucket(t, cfg, false)
}

// createBucket creates a uniquely named versioned bucket, with Object Lock (governance
// mode, one day by default) when locked.
func createBucket(t testing.TB, cfg aws.Config, locked bool) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "agentgate-test-" + hex.EncodeToString(b[:])
	c := Client(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if locked {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	if _, err := c.CreateBucket(ctx, in); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatalf("s3test: versioning on %s: %v", name, err)
	}
	if !locked {
		return name
	}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(name),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{Mode: s3types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}}}}); err != nil {
		t.Fatalf("s3test: object lock on %s: %v", name, err)
	}
	return name
}
