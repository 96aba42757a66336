package netguard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

var (
	// ErrTooManyRedirects is wrapped when a request is redirected more often than
	// ClientConfig.MaxRedirects allows.
	ErrTooManyRedirects = errors.New("netguard: too many redirects")
	// ErrResponseTooLarge is returned by a limited body (LimitBody, HTTPClient) once the
	// response exceeds its limit, and by the client when Content-Length already does.
	ErrResponseTooLarge = errors.New("netguard: response too large")
)

// ClientConfig bounds an HTTP client built by Guard.HTTPClient.
type ClientConfig struct {
	// Timeout bounds a whole request, redirects and reading the body included, so a
	// long-lived SSE stream ends after it too. Default 30s; negative means none (a proxy
	// relaying streams bounds them itself; connecting and the response headers stay
	// bounded by the transport).
	Timeout time.Duration
	// MaxRedirects is how many redirects one request may follow. Default 5; negative
	// means none are followed (the redirect response itself is returned).
	MaxRedirects int
	// MaxResponseBytes bounds each response body. Default 10 MiB; negative means no limit.
	MaxResponseBytes int64
	// TLSConfig is cloned into the transport, for a private CA or a test server.
	// Default nil: system roots, TLS 1.2 or later.
	TLSConfig *tls.Config
}

// HTTPClient returns an *http.Client whose every connection goes through g.DialContext.
// Its transport ignores proxy environment variables (a proxy would connect on our behalf
// to addresses we never see), checks every request URL, the first and each redirect
// target, with CheckURL, refuses https-to-http redirects and more than MaxRedirects,
// bounds handshake, header and total time, and limits every response body to
// MaxResponseBytes. The transport is not shared with other clients.
func (g *Guard) HTTPClient(cfg ClientConfig) *http.Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Timeout < 0 {
		cfg.Timeout = 0
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = 5
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 10 << 20
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConfig = cfg.TLSConfig.Clone()
		if tlsConfig.MinVersion < tls.VersionTLS12 {
			tlsConfig.MinVersion = tls.VersionTLS12
		}
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  20 * time.Second,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConns:           16,
		MaxResponseHeaderBytes: 1 << 20,
	}
	maxRedirects := cfg.MaxRedirects
	return &http.Client{
		Transport: &guardedTransport{g: g, base: t, max: cfg.MaxResponseBytes},
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedirects < 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, len(via)-1)
			}
			if err := g.CheckURL(req.URL); err != nil {
				return fmt.Errorf("netguard: redirect to %s: %w", req.URL.Redacted(), err)
			}
			if prev := via[len(via)-1].URL; prev.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect from https to %s", ErrInvalidURL, req.URL.Redacted())
			}
			return nil
		},
	}
}

// guardedTransport checks each request's URL and limits each response's body.
type guardedTransport struct {
	g    *Guard
	base http.RoundTripper
	max  int64
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.g.CheckURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || t.max < 0 {
		return resp, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d bytes", ErrResponseTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = LimitBody(resp.Body, t.max)
	return resp, nil
}

// LimitBody returns a ReadCloser that reads rc but fails with ErrResponseTooLarge once
// more than n bytes arrive, instead of silently truncating as io.LimitReader does. Close
// closes rc.
func LimitBody(rc io.ReadCloser, n int64) io.ReadCloser {
	return &limitedBody{rc: rc, left: n, limit: n}
}

type limitedBody struct {
	rc    io.ReadCloser
	left  int64 // bytes still allowed; -1 once the limit was exceeded
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.limit)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the limit tells "exactly n" from "more"
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = -1
		return n, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.limit)
	}
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
