package approvalproof

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/localfile"
	"github.com/agentgate-dev/agentgate/internal/tiles"
)

// Source is where a tiled log is read from: a directory ([Dir]) or an http(s) prefix
// ([HTTP]). tiles.Store satisfies it too.
type Source interface {
	// Get returns the file at name (a tlog-tiles path such as "checkpoint" or
	// "tile/entries/000.p/7"), at most max bytes of it (a larger file is an error); an
	// error wrapping tiles.ErrNotFound when there is none.
	Get(ctx context.Context, name string, max int64) ([]byte, error)
}

// Dir is a directory holding a tiled log, as `toolwarrant tlog tiles --out DIR` writes it.
// Its files are read as untrusted input (internal/localfile): regular files only (never a
// FIFO or a device, and without blocking on one), through a symbolic link only when it
// stays inside the repository, bounded.
type Dir string

var _ Source = Dir("")

// Get implements Source.
func (d Dir) Get(ctx context.Context, name string, max int64) ([]byte, error) {
	if !tiles.ValidName(name) {
		return nil, fmt.Errorf("%s: %q is not a tile, entry bundle or checkpoint name: %w", string(d), name, fs.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := filepath.Join(string(d), filepath.FromSlash(name))
	b, err := localfile.Read(p, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, tiles.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (d Dir) String() string { return string(d) }

// DefaultTimeout bounds one HTTP request of [HTTP] when its client sets no timeout.
const DefaultTimeout = 30 * time.Second

// maxRedirects bounds the redirects one GET follows (all on the prefix's own host).
const maxRedirects = 5

// HTTPSource reads a tiled log served over http(s): every GET bounded by the client's
// timeout and by the size its caller allows, redirects followed only on the same host.
type HTTPSource struct {
	prefix *url.URL
	client *http.Client
}

var _ Source = (*HTTPSource)(nil)

// HTTP returns the Source of the log served at prefix (http:// or https://; the files are
// prefix + name). timeout bounds each request (zero: DefaultTimeout).
func HTTP(prefix string, timeout time.Duration) (*HTTPSource, error) {
	u, err := url.Parse(prefix)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not a log URL: want http(s)://host/path/ (the prefix the tiles are served under, without user, query or fragment)", prefix)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	host := u.Host
	c := &http.Client{
		Timeout: timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Host != host || (req.URL.Scheme != "https" && u.Scheme == "https") {
				return fmt.Errorf("a redirect to %s, off the log's host %s", req.URL.Redacted(), host)
			}
			return nil
		},
	}
	return &HTTPSource{prefix: u, client: c}, nil
}

func (h *HTTPSource) String() string { return h.prefix.String() }

// Get implements Source: 200 is the file, 404 and 410 are tiles.ErrNotFound, anything else
// is an error naming the status.
func (h *HTTPSource) Get(ctx context.Context, name string, max int64) ([]byte, error) {
	if !tiles.ValidName(name) {
		return nil, fmt.Errorf("%q is not a tile, entry bundle or checkpoint name: %w", name, fs.ErrInvalid)
	}
	u := h.prefix.JoinPath(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), unwrapURL(err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("GET %s: %s: %w", u.Redacted(), resp.Status, tiles.ErrNotFound)
	default:
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	if resp.ContentLength > max {
		return nil, fmt.Errorf("GET %s: %d bytes, more than the %d this file may have", u.Redacted(), resp.ContentLength, max)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), unwrapURL(err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("GET %s: more than the %d bytes this file may have", u.Redacted(), max)
	}
	return b, nil
}

// unwrapURL drops url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
