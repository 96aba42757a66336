package lockerclient

import (
	"net/http"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
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
