package lockerclient

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// TestRequestDeadline: the default client bounds every request, its response included,
// by the request's context (DefaultTimeout), not by http.Client.Timeout, which net/http
// serves with a goroutine per request; a daemon that stalls before its headers or in the
// middle of a binary answer gives a "timeout" error once the deadline passes. A caller's
// own HTTPClient keeps its own bounds.
func TestRequestDeadline(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.hc.Timeout != 0 || c.timeout != DefaultTimeout {
		t.Fatalf("default client: http.Client.Timeout %v, request deadline %v; want 0 and %v", c.hc.Timeout, c.timeout, DefaultTimeout)
	}
	own, err := New(Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if own.timeout != 0 {
		t.Fatalf("a caller's HTTPClient got a request deadline of %v on top of its own", own.timeout)
	}

	manifest := `{"pad_id":"p","state":"sealed","block_count":2,"total_bytes":10,"sealed_at":1,"head_hash":"` + strings.Repeat("0", 64) + `","created_at":1,"expires_at":2}`
	for _, tc := range []struct {
		name string
		h    func(stall func()) http.HandlerFunc
	}{
		{"before the headers", func(stall func()) http.HandlerFunc {
			return func(http.ResponseWriter, *http.Request) { stall() }
		}},
		{"inside a binary answer", func(stall func()) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", padwire.MediaType)
				w.Header().Set("Content-Length", "100000")
				_, _ = w.Write(padwire.AppendHeader(nil, padwire.Header{PadID: "p", Count: 2, To: 1, TotalBlocks: 2, Manifest: []byte(manifest)}))
				w.(http.Flusher).Flush()
				stall()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			c := serve(t, tc.h(func() {
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
			}))
			t.Cleanup(func() { close(release) }) // before the server's Close, which waits for the handler
			c.timeout = 200 * time.Millisecond
			start := time.Now()
			_, err := c.Read(t.Context(), "p", "ticket", ReadOptions{})
			var de *DaemonError
			if !errors.As(err, &de) || de.Status != 0 || !strings.HasSuffix(de.Detail, ": timeout") {
				t.Fatalf("read from a stalled daemon: %v, want a transport error ending in \": timeout\"", err)
			}
			if waited := time.Since(start); waited > 5*time.Second {
				t.Fatalf("the read returned after %v: the request deadline did not end it", waited)
			}
		})
	}
}
