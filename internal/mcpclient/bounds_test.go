package mcpclient

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/mcpclient/hostile"
	"github.com/agentgate-dev/agentgate/internal/readbound"
)

// TestHostileServersAreBounded: every way a remote server can make the client read without
// end is stopped by the bound it crosses, while reading, with an error that names the bound
// and its flag; the server is never asked for the rest.
func TestHostileServersAreBounded(t *testing.T) {
	limits := readbound.Limits{Message: 1 << 20, Listing: 3 << 20, Server: 5 << 20}
	tests := []struct {
		name string
		srv  *hostile.Server
		l    readbound.Limits
		kind readbound.Kind
		what string
	}{
		{"1GiB body", &hostile.Server{Mode: hostile.Body, Size: 1 << 30}, limits, readbound.KindMessage, "an HTTP body"},
		{"a 50MB description as an event", &hostile.Server{Mode: hostile.Body, Size: 50e6, SSE: true}, limits, readbound.KindMessage, "a server-sent event"},
		{"an endless event", &hostile.Server{Mode: hostile.EndlessEvent}, limits, readbound.KindMessage, "a server-sent event"},
		{"endless fat pages", &hostile.Server{Mode: hostile.Pages, Size: 900 << 10}, limits, readbound.KindListing, "the pages of tools/list"},
		{"endless fat pages as events", &hostile.Server{Mode: hostile.Pages, Size: 900 << 10, SSE: true}, limits, readbound.KindListing, "the pages of tools/list"},
		{"endless pages, listing bound above the server's", &hostile.Server{Mode: hostile.Pages, Size: 900 << 10},
			readbound.Limits{Message: 1 << 20, Listing: 1 << 30, Server: 4 << 20}, readbound.KindServer, "everything the server sent"},
		{"an endless stream of small events", &hostile.Server{Mode: hostile.EndlessStream},
			readbound.Limits{Message: 1 << 20, Server: 2 << 20}, readbound.KindServer, "everything the server sent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := httptest.NewServer(tc.srv)
			defer hs.Close()
			_, err := ListTools(t.Context(), Server{Name: "hostile", URL: hs.URL + "/mcp"}, Options{Timeout: 60 * time.Second, Limits: tc.l})
			var be *readbound.Error
			if !errors.As(err, &be) || be.Kind != tc.kind || !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v; want the %s bound", err, tc.kind)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.what) || !strings.Contains(msg, tc.kind.Flag()) || !strings.HasPrefix(msg, `server "hostile": `) {
				t.Errorf("message %q does not name %q and %s", msg, tc.what, tc.kind.Flag())
			}
			hs.CloseClientConnections()
			if sent := tc.srv.Sent(); sent > 64<<20 {
				t.Errorf("the server wrote %d MiB before the client hung up", sent>>20)
			}
		})
	}
}

// TestBoundsAtTheirDefaults: a server under every default bound is listed; the default
// message bound is the one the MCP SDKs buffer for a line or an event.
func TestBoundsAtTheirDefaults(t *testing.T) {
	hs := httptest.NewServer(&hostile.Server{Mode: hostile.Pages, Pages: 3, Size: 4 << 20})
	defer hs.Close()
	l, err := ListTools(t.Context(), Server{Name: "fat", URL: hs.URL + "/mcp"}, Options{Timeout: 60 * time.Second})
	if err != nil || len(l.Tools) != 3 || l.Pages != 3 {
		t.Fatalf("three 4 MiB pages under the defaults: %v", err)
	}
	hs2 := httptest.NewServer(&hostile.Server{Mode: hostile.Body, Size: readbound.DefaultMessageBytes})
	defer hs2.Close()
	_, err = ListTools(t.Context(), Server{Name: "big", URL: hs2.URL + "/mcp"}, Options{Timeout: 60 * time.Second})
	if !errors.Is(err, readbound.ErrExceeded) || !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("a body over 16 MiB under the defaults: %v", err)
	}
}

// TestStdioBounds: a stdio server's lines are messages and its pages a listing, under the
// same bounds.
func TestStdioBounds(t *testing.T) {
	_, err := ListTools(t.Context(), fakeStdio(t, "pad=300000"), Options{Timeout: 30 * time.Second, Limits: readbound.Limits{Message: 256 << 10}})
	var be *readbound.Error
	if !errors.As(err, &be) || be.Kind != readbound.KindMessage || !strings.Contains(err.Error(), "a line on the server's stdout") {
		t.Fatalf("a 300 KB line over a 256 KiB bound: %v", err)
	}
	_, err = ListTools(t.Context(), fakeStdio(t, "pad=100000"), Options{Timeout: 30 * time.Second, Limits: readbound.Limits{Message: 256 << 10, Listing: 1 << 20}})
	if !errors.As(err, &be) || be.Kind != readbound.KindListing {
		t.Fatalf("endless 100 KB pages over a 1 MiB listing bound: %v", err)
	}
	_, err = ListTools(t.Context(), fakeStdio(t, "pad=100000"), Options{Timeout: 30 * time.Second, Limits: readbound.Limits{Message: 256 << 10, Listing: 1 << 30, Server: 1 << 20}})
	if !errors.As(err, &be) || be.Kind != readbound.KindServer {
		t.Fatalf("endless 100 KB pages over a 1 MiB server bound: %v", err)
	}
}
