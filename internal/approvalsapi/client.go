package approvalsapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The client half: the approvals API as `toolwarrant --remote URL` calls it, every request
// SigV4-signed with the operator's AWS credentials.

// ErrCredentials means no AWS credentials could be had to sign a request.
var ErrCredentials = errors.New("no usable AWS credentials (set AWS_PROFILE, run 'aws sso login', or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")

// ErrUnreachable means no answer came from the approvals API (connection refused or
// dropped, a timeout). A decision whose answer was lost may have been recorded.
var ErrUnreachable = errors.New("no answer")

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
		return nil, fmt.Errorf("sign request: %w: %w", ErrCredentials, err)
	}
	if err := s.signer.SignHTTP(req.Context(), creds, r, hex.EncodeToString(sum[:]), "execute-api", s.cfg.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign request: %w", err)
	}
	return s.base.RoundTrip(r)
}

// ErrForbidden is a refusal of the approvals API: the caller's credentials were not
// accepted, its role may not call the route, or the rules forbid it this decision (the
// crawl role; an identity that crawled the digest).
var ErrForbidden = warrant.ErrForbidden

// RemoteError is a non-2xx answer of the approvals API. It unwraps to the warrant error
// its status stands for (400 ErrInvalid, 404 ErrNotFound, 409 ErrConflict, 429 and 5xx
// ErrUnavailable, 401 and 403 ErrForbidden), so callers map it like a local failure.
type RemoteError struct {
	Method, Path string
	Status       int
	// Message is the API's error message (or API Gateway's, for a refused signature).
	Message string
	// ByFunction is true when the approvals function itself answered (its {"error"}
	// body), false when API Gateway refused the request before it (a bad signature, a
	// policy that does not allow the route).
	ByFunction bool
}

func (e *RemoteError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("approvals API: %s %s: %d: %s", e.Method, e.Path, e.Status, msg)
}

func (e *RemoteError) Unwrap() error {
	switch {
	case e.Status == http.StatusBadRequest:
		return warrant.ErrInvalid
	case e.Status == http.StatusNotFound:
		return warrant.ErrNotFound
	case e.Status == http.StatusConflict:
		return warrant.ErrConflict
	case e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden:
		return ErrForbidden
	case e.Status == http.StatusTooManyRequests, e.Status >= 500:
		return warrant.ErrUnavailable
	}
	return nil
}

// Remote is the approvals API as the toolwarrant CLI calls it (--remote URL): every
// request SigV4-signed with the operator's credentials.
type Remote struct {
	base string
	hc   *http.Client
}

// NewRemote returns a client of the approvals API at rawURL (the stack's ApprovalsApiUrl
// output; https, or http to a loopback address for emulators and tests). The signing
// region is the one in an execute-api host name, else cfg.Region.
func NewRemote(cfg aws.Config, rawURL string) (*Remote, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("--remote %q: want the stack's ApprovalsApiUrl output, such as https://abc123.execute-api.eu-west-1.amazonaws.com", rawURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("--remote %q: plain http only to a loopback address; the approvals API is https", rawURL)
		}
	default:
		return nil, fmt.Errorf("--remote %q: want an https:// URL", rawURL)
	}
	if parts := strings.Split(u.Hostname(), "."); len(parts) >= 5 && parts[1] == "execute-api" {
		cfg.Region = parts[2]
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("--remote %q: no AWS region to sign for: set AWS_REGION (or a profile's region)", rawURL)
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("--remote: %w", ErrCredentials)
	}
	return &Remote{base: u.String(), hc: SignedClient(cfg)}, nil
}

// maxRemoteAnswer bounds an answer the client reads (an audit page is at most about
// auditPageBytes).
const maxRemoteAnswer = 8 << 20

// do sends one request and reads its answer (headers and body); a non-2xx answer is a
// *RemoteError.
func (c *Remote) do(ctx context.Context, method, path string, query url.Values, body any) (http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if errors.Is(err, ErrCredentials) {
		return nil, nil, fmt.Errorf("approvals API: %s %s: %w", method, path, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("approvals API: %s %s: %w: %w", method, path, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteAnswer+1))
	if err != nil {
		return nil, nil, fmt.Errorf("approvals API: %s %s: reading the answer: %w: %w", method, path, ErrUnreachable, err)
	}
	if len(b) > maxRemoteAnswer {
		return nil, nil, fmt.Errorf("approvals API: %s %s: answer larger than %d bytes", method, path, maxRemoteAnswer)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Message string }
		_ = json.Unmarshal(b, &e)
		re := &RemoteError{Method: method, Path: path, Status: resp.StatusCode, Message: e.Error, ByFunction: e.Error != ""}
		if !re.ByFunction {
			re.Message = e.Message
		}
		return nil, nil, re
	}
	return resp.Header, b, nil
}

func (c *Remote) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	_, b, err := c.do(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("approvals API: GET %s: the answer is not what this toolwarrant expects (is --remote the ApprovalsApiUrl?): %v", path, err)
	}
	return nil
}

// Tools lists every tool, or only the pending ones, with the audit head read before.
func (c *Remote) Tools(ctx context.Context, pending bool) (warrant.AuditHead, []warrant.ToolRow, error) {
	var a ToolsAnswer
	if pending {
		err := c.getJSON(ctx, "/v1/proposals", nil, &a)
		return a.AuditHead, a.Proposals, err
	}
	err := c.getJSON(ctx, "/v1/tools", nil, &a)
	return a.AuditHead, a.Tools, err
}

func toolPath(server, tool, leaf string) string {
	return "/v1/servers/" + url.PathEscape(server) + "/tools/" + url.PathEscape(tool) + "/" + leaf
}

// Diff grades two versions of a tool (from, to: digests or unique prefixes; "" for the
// defaults of `toolwarrant diff`).
func (c *Remote) Diff(ctx context.Context, server, tool, from, to string) (DiffAnswer, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	var d DiffAnswer
	path := toolPath(server, tool, "diff")
	if err := c.getJSON(ctx, path, q, &d); err != nil {
		return d, err
	}
	if d.DefinitionsOmitted {
		for _, side := range []struct {
			digest warrant.Digest
			def    *json.RawMessage
		}{{d.To, &d.ToDefinition}, {d.From, &d.FromDefinition}} {
			if side.digest == "" {
				continue
			}
			v, err := c.Version(ctx, server, tool, string(side.digest))
			if err != nil {
				return DiffAnswer{}, err
			}
			*side.def = v.Definition
		}
	}
	if got := warrant.DigestOf(d.ToDefinition); got != d.To {
		return DiffAnswer{}, fmt.Errorf("approvals API: GET %s: %w: the new definition hashes to %s, not %s", path, errMismatch, got, d.To)
	}
	if d.From != "" {
		if got := warrant.DigestOf(d.FromDefinition); got != d.From {
			return DiffAnswer{}, fmt.Errorf("approvals API: GET %s: %w: the old definition hashes to %s, not %s", path, errMismatch, got, d.From)
		}
	}
	return d, nil
}

// Version reads one version of a tool: a digest or unique prefix, or "" for the current one.
func (c *Remote) Version(ctx context.Context, server, tool, version string) (VersionAnswer, error) {
	if version == "" {
		version = "current"
	}
	var v VersionAnswer
	path := toolPath(server, tool, "versions/"+url.PathEscape(version))
	if err := c.getJSON(ctx, path, nil, &v); err != nil {
		return v, err
	}
	if got := warrant.DigestOf(v.Definition); got != v.Digest {
		return VersionAnswer{}, fmt.Errorf("approvals API: GET %s: %w: the definition hashes to %s, not the digest %s it was answered with", path, errMismatch, got, v.Digest)
	}
	return v, nil
}

// errMismatch is an answer whose bytes do not hash to the digest it names: never shown.
var errMismatch = errors.New("definition and digest disagree")

// Decide records one decision over req.AuditHead, as the caller's IAM principal.
func (c *Remote) Decide(ctx context.Context, server, tool string, req DecisionRequest) (DecisionAnswer, error) {
	path := toolPath(server, tool, "decisions")
	_, b, err := c.do(ctx, http.MethodPost, path, nil, req)
	if err != nil {
		return DecisionAnswer{}, err
	}
	var d DecisionAnswer
	if err := json.Unmarshal(b, &d); err != nil || d.Digest != req.Digest {
		return d, fmt.Errorf("approvals API: POST %s: unexpected answer %q (the decision may have been recorded: check 'toolwarrant list --remote')", path, b)
	}
	return d, nil
}

// BulkCandidates reads what one bulk approval of server may name (GET …/bulk).
func (c *Remote) BulkCandidates(ctx context.Context, server string) (BulkAnswer, error) {
	var a BulkAnswer
	err := c.getJSON(ctx, "/v1/servers/"+url.PathEscape(server)+"/bulk", nil, &a)
	if err == nil && a.Server != server {
		err = fmt.Errorf("approvals API: GET /v1/servers/%s/bulk answered for server %q", server, a.Server)
	}
	return a, err
}

// ApproveAll records one bulk approval of req.Items (at most warrant.MaxBulk) over
// req.AuditHead, as the caller's IAM principal.
func (c *Remote) ApproveAll(ctx context.Context, server string, req BulkRequest) (BulkApproval, error) {
	path := "/v1/servers/" + url.PathEscape(server) + "/bulk"
	_, b, err := c.do(ctx, http.MethodPost, path, nil, req)
	if err != nil {
		return BulkApproval{}, err
	}
	var a BulkApproval
	if err := json.Unmarshal(b, &a); err != nil || a.Server != server || len(a.Approved) != len(req.Items) || a.By == "" {
		return a, fmt.Errorf("approvals API: POST %s: unexpected answer %q (the approvals may have been recorded: check 'toolwarrant list --remote')", path, b)
	}
	return a, nil
}

// AddServer adds a server to the catalog as the caller's IAM principal; false when an
// identical one was already there.
func (c *Remote) AddServer(ctx context.Context, req ServerRequest) (bool, error) {
	_, b, err := c.do(ctx, http.MethodPost, "/v1/servers", nil, req)
	if err != nil {
		return false, err
	}
	var a ServerAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.Server != req.Name {
		return false, fmt.Errorf("approvals API: POST /v1/servers: unexpected answer %q (the server may have been added: check 'toolwarrant server list')", b)
	}
	return a.Added, nil
}

// maxAuditPages bounds one export (at MaxAuditPage entries a page).
const maxAuditPages = 1 << 20

// ExportAudit writes every audit entry after `after`, in order, as export lines (what
// `toolwarrant audit export` writes), page by page. Each page is parsed and must continue
// the sequence exactly; it returns the number of entries written and the last seq.
func (c *Remote) ExportAudit(ctx context.Context, w io.Writer, after int64, progress func(entries int)) (int, int64, error) {
	n := 0
	for range maxAuditPages {
		q := url.Values{"after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(MaxAuditPage)}}
		hdr, b, err := c.do(ctx, http.MethodGet, "/v1/audit", q, nil)
		if err != nil {
			return n, after, err
		}
		recs, err := audit.ParseExport(bytes.NewReader(b))
		if err != nil {
			return n, after, fmt.Errorf("approvals API: GET /v1/audit after %d: %w", after, err)
		}
		for _, r := range recs {
			if r.Seq != after+1 {
				return n, after, fmt.Errorf("approvals API: GET /v1/audit after %d: entry %d out of sequence", after, r.Seq)
			}
			after = r.Seq
		}
		if _, err := w.Write(b); err != nil {
			return n, after, err
		}
		n += len(recs)
		if progress != nil {
			progress(n)
		}
		if len(recs) == 0 || hdr.Get(AuditMoreHeader) != "true" {
			return n, after, nil
		}
	}
	return n, after, fmt.Errorf("approvals API: more than %d pages of audit entries", maxAuditPages)
}
