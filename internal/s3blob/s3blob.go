// Package s3blob is the S3 driver of the blob.Store port: write-once objects in one bucket
// (toolwarrant's audit checkpoints, template.yaml's CheckpointBucket: versioned, Object Lock
// in governance mode; and the DynamoDB catalog's large objects, CatalogBlobBucket, whose
// MaxObjectBytes must cover them: dynamostore.DefaultMaxBlobBytes). See README.md for the
// key layout and the write algorithm.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/blob"
)

var _ blob.Store = (*Store)(nil)

// API is the part of the S3 client the driver uses (*s3.Client implements it).
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Defaults for Config.
const (
	DefaultMaxObjectBytes = 1 << 20
	// maxListPages bounds List: 1,000 pages of 1,000 keys.
	maxListPages = 1000
)

// Config configures New.
type Config struct {
	// Client is the S3 client, built by the caller (path-style for emulators). Required.
	Client API
	// Bucket is the bucket name. Required.
	Bucket string
	// MaxObjectBytes bounds what Get reads. Default 1 MiB.
	MaxObjectBytes int64
}

// Store is a blob.Store over one S3 bucket. It is safe for concurrent use.
type Store struct {
	c      API
	bucket string
	max    int64
}

// New returns a Store. It makes no call.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil || cfg.Bucket == "" {
		return nil, errors.New("s3blob: Config.Client and Config.Bucket are required")
	}
	if cfg.MaxObjectBytes <= 0 {
		cfg.MaxObjectBytes = DefaultMaxObjectBytes
	}
	return &Store{c: cfg.Client, bucket: cfg.Bucket, max: cfg.MaxObjectBytes}, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// PutIfAbsent implements blob.Store with one PutObject carrying If-None-Match: * (and a
// SHA-256 checksum, which Object Lock buckets require). On 412 Precondition Failed it reads
// the stored object: the same bytes are our own earlier write (nil), others ErrConflict.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ContentType: aws.String("application/json"), IfNoneMatch: aws.String("*"), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	})
	if err == nil {
		return nil
	}
	if !preconditionFailed(err) {
		return classify("put "+key, err)
	}
	old, gerr := s.Get(ctx, key)
	if gerr != nil {
		return fmt.Errorf("put %s: it exists, and reading it back failed: %w", key, gerr)
	}
	if bytes.Equal(old, data) {
		return nil
	}
	return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, blob.ErrConflict)
}

// Get implements blob.Store with one GetObject, reading at most MaxObjectBytes.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) || awserr.Status(err) == http.StatusNotFound {
			return nil, fmt.Errorf("get s3://%s/%s: %w", s.bucket, key, blob.ErrNotFound)
		}
		return nil, classify("get "+key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, s.max+1))
	if err != nil {
		return nil, classify("read "+key, err)
	}
	if int64(len(b)) > s.max {
		return nil, fmt.Errorf("get s3://%s/%s: larger than %d bytes", s.bucket, key, s.max)
	}
	return b, nil
}

// List implements blob.Store with ListObjectsV2 pages (at most 1,000 of them).
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	out := []string{}
	for range maxListPages {
		page, err := s.c.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, classify("list "+prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return out, nil
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	return nil, fmt.Errorf("list s3://%s/%s: more than %d pages", s.bucket, prefix, maxListPages)
}

func preconditionFailed(err error) bool {
	var ae smithy.APIError
	return awserr.Status(err) == http.StatusPreconditionFailed || errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed"
}

// unavailableCodes are S3 error codes meaning "retry later": throttling, and a concurrent
// conditional write.
var unavailableCodes = map[string]bool{"SlowDown": true, "ConditionalRequestConflict": true}

// classify wraps an S3 error: blob.ErrUnavailable for throttling (SlowDown, 503), 5xx,
// a concurrent conditional write (409 ConditionalRequestConflict: retry), exhausted retries,
// timeouts and network errors; anything else (access denied, no such bucket) as text.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("s3blob: %s: %w", op, err)
	}
	if awserr.Transient(err, unavailableCodes) || awserr.Status(err) == http.StatusConflict {
		return fmt.Errorf("s3blob: %s: %w: %v", op, blob.ErrUnavailable, err)
	}
	return fmt.Errorf("s3blob: %s: %v", op, err)
}
