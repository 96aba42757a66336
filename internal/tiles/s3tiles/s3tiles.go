// Package s3tiles is the S3 driver of the tiles.Store port: a c2sp.org/tlog-tiles log under
// one prefix of a bucket, each object with the headers a reader (a browser, CloudFront, a
// monitor) needs to cache it rightly:
//
//	tile/<L>/<N>, tile/entries/<N>   application/octet-stream, Cache-Control: public, max-age=31536000, immutable
//	… .p/<W> (partial)               application/octet-stream, Cache-Control: public, max-age=60
//	checkpoint                       text/plain; charset=utf-8, Cache-Control: public, max-age=5
//
// Tiles and bundles are written once with If-None-Match: * (and a SHA-256 checksum, which
// Object Lock buckets require); a 412 reads the object back: the same bytes are an earlier
// write of ours, other bytes tiles.ErrExists. The checkpoint is a plain PutObject, so a
// versioned bucket keeps every checkpoint ever published. The writer's role needs
// s3:PutObject and s3:GetObject on PREFIX*, and s3:ListBucket on the bucket (S3 answers a
// GET of a missing key with 403 without it, and the first publication looks for the
// checkpoint).
package s3tiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/tiles"
)

// Cache-Control of each kind of object.
const (
	CacheFull       = "public, max-age=31536000, immutable"
	CachePartial    = "public, max-age=60"
	CacheCheckpoint = "public, max-age=5"
)

// Content types.
const (
	TypeTile       = "application/octet-stream"
	TypeCheckpoint = "text/plain; charset=utf-8"
)

// API is the part of the S3 client the driver uses (*s3.Client implements it).
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Store is a tiles.Store under one prefix of an S3 bucket. It is safe for concurrent use.
type Store struct {
	c      API
	bucket string
	prefix string
}

var _ tiles.Store = (*Store)(nil)

// New returns a Store of the log under prefix ("" for the bucket's root, else a key
// prefix; a trailing "/" is added). It makes no call.
func New(c API, bucket, prefix string) (*Store, error) {
	if c == nil || bucket == "" {
		return nil, errors.New("s3tiles: a client and a bucket are required")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := blob.ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("s3tiles: prefix: %w", err)
		}
		prefix += "/"
	}
	return &Store{c: c, bucket: bucket, prefix: prefix}, nil
}

// Key returns the object key of a file of the log.
func (s *Store) Key(name string) string { return s.prefix + name }

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

func (s *Store) String() string { return "s3://" + s.bucket + "/" + s.prefix }

func (s *Store) key(name string) (string, error) {
	if !tiles.ValidName(name) {
		return "", fmt.Errorf("s3tiles: %q is not a tile, entry bundle or checkpoint name: %w", name, blob.ErrInvalid)
	}
	k := s.prefix + name
	if err := blob.ValidateKey(k); err != nil {
		return "", fmt.Errorf("s3tiles: %w", err)
	}
	return k, nil
}

// Put implements tiles.Store.
func (s *Store) Put(ctx context.Context, name string, data []byte, kind tiles.Kind) error {
	k, err := s.key(name)
	if err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ContentType: aws.String(TypeTile), CacheControl: aws.String(CacheFull), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}
	switch kind {
	case tiles.Checkpoint:
		in.ContentType, in.CacheControl = aws.String(TypeCheckpoint), aws.String(CacheCheckpoint)
	case tiles.Partial:
		in.CacheControl, in.IfNoneMatch = aws.String(CachePartial), aws.String("*")
	default:
		in.IfNoneMatch = aws.String("*")
	}
	_, err = s.c.PutObject(ctx, in)
	if err == nil {
		return nil
	}
	if kind == tiles.Checkpoint || !preconditionFailed(err) {
		return classify("put "+k, err)
	}
	old, gerr := s.Get(ctx, name, int64(len(data))+1)
	if gerr != nil {
		return fmt.Errorf("s3tiles: put s3://%s/%s: it exists, and reading it back failed: %w", s.bucket, k, gerr)
	}
	if !bytes.Equal(old, data) {
		return fmt.Errorf("s3tiles: s3://%s/%s: %w", s.bucket, k, tiles.ErrExists)
	}
	return nil
}

// Get implements tiles.Store with one GetObject.
func (s *Store) Get(ctx context.Context, name string, max int64) ([]byte, error) {
	k, err := s.key(name)
	if err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) || awserr.Status(err) == http.StatusNotFound {
			return nil, fmt.Errorf("s3tiles: s3://%s/%s: %w", s.bucket, k, tiles.ErrNotFound)
		}
		if awserr.Status(err) == http.StatusForbidden {
			return nil, fmt.Errorf("s3tiles: get s3://%s/%s: access denied (S3 says so of a missing object too when the caller may not s3:ListBucket the bucket: grant it with s3:GetObject and s3:PutObject on %s*): %v",
				s.bucket, k, s.prefix, err)
		}
		return nil, classify("get "+k, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, classify("read "+k, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("s3tiles: s3://%s/%s is larger than %d bytes", s.bucket, k, max)
	}
	return b, nil
}

func preconditionFailed(err error) bool {
	var ae smithy.APIError
	return awserr.Status(err) == http.StatusPreconditionFailed || errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed"
}

// unavailableCodes are S3 error codes meaning "retry later".
var unavailableCodes = map[string]bool{"SlowDown": true, "ConditionalRequestConflict": true}

// classify wraps an S3 error: blob.ErrUnavailable for throttling, 5xx, a concurrent
// conditional write (409), timeouts and network errors; anything else as text.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("s3tiles: %s: %w", op, err)
	}
	if awserr.Transient(err, unavailableCodes) || awserr.Status(err) == http.StatusConflict {
		return fmt.Errorf("s3tiles: %s: %w: %v", op, blob.ErrUnavailable, err)
	}
	return fmt.Errorf("s3tiles: %s: %v", op, err)
}
