package lockerclient

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// serve starts h on loopback and returns a client for it.
func serve(t testing.TB, h http.Handler) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: lockertest.Serve(t, h)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wireBody is d's binary answer for the whole pad, straight from its handler.
func wireBody(t testing.TB, d *lockertest.Daemon, padID, ticket string) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/pads/"+padID+"/blocks?from=0&to=4095", nil)
	req.Header.Set("Accept", padwire.MediaType)
	req.Header.Set("Authorization", "Bearer "+ticket)
	rec := httptest.NewRecorder()
	d.Handler.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Type") != padwire.MediaType {
		t.Fatalf("no binary answer: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// getSHA256 GETs url (with ctx) and hashes the body with SHA-256 as it is read, through
// buf: the floor the read benchmarks compare with.
func getSHA256(ctx context.Context, b *testing.B, hc *http.Client, url string, buf []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, resp.Body, buf); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	h.Sum(nil)
}
