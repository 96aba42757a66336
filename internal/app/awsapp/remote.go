package awsapp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
)

// This file is what the toolwarrant CLI needs on AWS and nothing else: SigV4-signed calls
// to the approvals API (`approve --remote URL`) and reading checkpoints from s3://. It
// links the AWS SDK; cmd/toolwarrant should reach it only from its --remote and s3://
// paths (keep it out of the embedded path: test/arch).

// MaxRemoteBody bounds a request body the signer buffers.
const MaxRemoteBody = 1 << 20

// SignedClient returns an HTTP client whose requests are signed with SigV4 for
// execute-api in cfg.Region, with cfg's credentials (the operator's: profile, SSO,
// environment). The approvals API's AWS_IAM authorizer then names the operator's
// principal as the approver.
func SignedClient(cfg aws.Config) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &sigv4{base: http.DefaultTransport, cfg: cfg, signer: v4.NewSigner()}}
}

type sigv4 struct {
	base   http.RoundTripper
	cfg    aws.Config
	signer *v4.Signer
}

func (s *sigv4) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxRemoteBody+1))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sign request: read body: %w", err)
		}
		if len(b) > MaxRemoteBody {
			return nil, fmt.Errorf("sign request: body larger than %d bytes", MaxRemoteBody)
		}
		body = b
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	creds, err := s.cfg.Credentials.Retrieve(req.Context())
	if err != nil {
		return nil, fmt.Errorf("sign request: AWS credentials: %w", err)
	}
	if err := s.signer.SignHTTP(req.Context(), creds, r, hex.EncodeToString(sum[:]), "execute-api", s.cfg.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign request: %w", err)
	}
	return s.base.RoundTrip(r)
}

// CheckpointSource opens s3://BUCKET (checkpoints under checkpoints/) for
// checkpoint.Verify, with cfg's credentials. pathStyle addresses emulators.
func CheckpointSource(ctx context.Context, cfg aws.Config, rawURL string, pathStyle bool) (checkpoint.Source, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" || strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "checkpoints" {
		return nil, fmt.Errorf("--checkpoints %q: want s3://BUCKET (the stack's CheckpointBucketName output) or a directory", rawURL)
	}
	st, err := s3blob.New(s3blob.Config{Client: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }), Bucket: u.Host})
	if err != nil {
		return nil, err
	}
	return checkpoint.Store{Blobs: st, Name: "s3://" + u.Host + "/" + checkpoint.Prefix}, nil
}
