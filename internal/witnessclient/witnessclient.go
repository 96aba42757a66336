package witnessclient

import (
	"bytes"
	"context"

	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

var _ checkpoint.Witness = (*Client)(nil)

// MaxResponseBytes bounds a witness's answer (cosignature lines are short).
const MaxResponseBytes = 64 << 10

// Client talks to one witness.
type Client struct {
	prefix string
	http   *http.Client
}

// Config configures New.
type Config struct {
	// URL is the witness's submission prefix (http or https). Required.
	URL string
	// HTTP is the client to use. Default: one with a 30 s timeout.
	HTTP *http.Client
}

// New returns a client of the witness at cfg.URL.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("witness URL %q: want http(s)://host[/prefix]", cfg.URL)
	}
	c := cfg.HTTP
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{prefix: strings.TrimSuffix(cfg.URL, "/"), http: c}, nil
}

func (c *Client) String() string { return c.prefix }

// AddCheckpoint implements checkpoint.Witness.
func (c *Client) AddCheckpoint(ctx context.Context, oldSize int64, proof tlog.TreeProof, note []byte) ([]byte, error) {
	if len(proof) > 63 {
		return nil, fmt.Errorf("%w: a consistency proof of %d hashes (at most 63)", checkpoint.ErrWitnessRefused, len(proof))
	}
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", oldSize)
	for _, h := range proof {
		body.WriteString(h.String() + "\n")
	}
	body.WriteString("\n")
	body.Write(note)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.prefix+"/add-checkpoint", &body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", checkpoint.ErrUnavailable, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", checkpoint.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the answer: %v", checkpoint.ErrUnavailable, err)
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("%w: an answer larger than %d bytes", checkpoint.ErrUnavailable, MaxResponseBytes)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if !bytes.HasPrefix(b, []byte("— ")) || !bytes.HasSuffix(b, []byte("\n")) {
			return nil, fmt.Errorf("%w: a 200 whose body is not signature lines", checkpoint.ErrUnavailable)
		}
		return b, nil
	case resp.StatusCode == http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: a 409 without a tree size", checkpoint.ErrUnavailable)
		}
		return nil, &checkpoint.SizeConflict{Size: n}
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: HTTP %d", checkpoint.ErrUnavailable, resp.StatusCode)
	}
	reason := map[int]string{
		http.StatusBadRequest:          "malformed request",
		http.StatusForbidden:           "it does not trust the checkpoint key for this origin",
		http.StatusNotFound:            "it does not know this log's origin",
		http.StatusUnprocessableEntity: "the checkpoint is not consistent with the one it cosigned before",
	}[resp.StatusCode]
	if reason == "" {
		reason = "unexpected answer"
	}
	return nil, fmt.Errorf("%w: HTTP %d, %s (%s)", checkpoint.ErrWitnessRefused, resp.StatusCode, reason, printable(b))
}

// printable is the witness's own words, one short line, for the message.
func printable(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
