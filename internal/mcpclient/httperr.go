package mcpclient

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// maxErrorBody bounds how much of an HTTP error body is read and kept; maxErrorExcerpt how
// much of it an error message shows.
const (
	maxErrorBody    = 8 * 1024
	maxErrorExcerpt = 300
)

// httpError is the last HTTP error response a remote server sent: its status and the start
// of its body, which often says why (a 403's "token lacks scope repo:read"). The SDK keeps
// only the status text, so headerTransport keeps the body here.
type httpError struct {
	status int
	body   string // already redacted and shortened
}

func (e *httpError) String() string {
	s := strings.TrimSpace("HTTP " + strconv.Itoa(e.status) + " " + http.StatusText(e.status))
	if e.body != "" {
		s += ": " + e.body
	}
	return s
}

// captureError keeps the start of an error response's body and hands the SDK a body that
// still reads in full, so that it can decode a JSON-RPC error from it as before.
func captureError(resp *http.Response, secrets []string, t *tap) {
	if resp.StatusCode < 400 || resp.Body == nil {
		return
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	t.setHTTPError(&httpError{status: resp.StatusCode, body: redact(string(head), secrets)})
}

type readCloser struct {
	io.Reader
	io.Closer
}

// secretsOf lists the values a server's configuration holds that must never be echoed: every
// header value (and its credential after a scheme such as "Bearer "), the URL's password and
// query values.
func secretsOf(s Server) []string {
	var out []string
	for _, v := range s.Headers {
		out = append(out, v)
		if _, cred, ok := strings.Cut(v, " "); ok {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	if u, err := url.Parse(s.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

var (
	// secretAssignment matches a credential named as such: "token": "…", api_key=…,
	// Authorization: Bearer …; the name is kept, the value replaced.
	secretAssignment = regexp.MustCompile(`(?i)((?:bearer|basic|token|api[-_]?key|apikey|secret|password|passwd|pwd|authorization|auth|credential|access[-_]?token|refresh[-_]?token|client[-_]?secret|session|cookie|signature|sig)["']?\s*(?:[:=]|\s)\s*["']?)(?:bearer\s+|basic\s+)?([^\s"',;&<>]{4,})`)
	// secretShaped matches values that look like credentials whatever they are called: JWTs,
	// well-known token prefixes, and long runs of base64 or hex.
	secretShaped = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*|\b(?:gh[pousr]_|github_pat_|sk-|xox[abposr]-|AKIA|ASIA|AIza)[A-Za-z0-9_\-]{8,}|[A-Za-z0-9+/_=-]{32,}`)
)

// redact shortens an error body to one line and removes every known secret and anything
// shaped like one.
func redact(body string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			body = strings.ReplaceAll(body, s, "[redacted]")
		}
	}
	body = secretAssignment.ReplaceAllString(body, "${1}[redacted]")
	body = secretShaped.ReplaceAllStringFunc(body, func(m string) string {
		if strings.Contains(m, "[redacted]") {
			return m
		}
		return "[redacted]"
	})
	body = strings.Join(strings.Fields(body), " ")
	return excerpt(body, maxErrorExcerpt)
}
