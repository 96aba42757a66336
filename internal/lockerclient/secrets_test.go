package lockerclient

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// TestSecretsNeverInErrorsOrLogs: in query transport the ticket is in the URL; neither a
// daemon echoing the URL and the secrets back, nor a transport failure, nor the log may
// show them.
func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	const ticket = "-tIcKeT_with+odd/chars-0123456789abcdefghijk"
	const key = "wRiTeKeY-0123456789abcdefghijklmnopqrstuvw"
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"unauthorized","detail":"bad ticket in http://` + r.Host + r.URL.RequestURI() + ` (` + r.Header.Get("Authorization") + `)"}`))
	})
	srv := httptest.NewServer(echo)
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	for _, tc := range []struct {
		name string
		url  string
	}{{"echoing daemon", srv.URL}, {"unreachable daemon", deadURL}} {
		for _, tr := range []config.TicketTransport{config.TicketQuery, config.TicketHeader} {
			t.Run(tc.name+"/"+string(tr), func(t *testing.T) {
				c, err := New(Config{BaseURL: tc.url, TicketTransport: tr, Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.page(t.Context(), "pad", ticket, 0, 0, c.getBuf())
				var de *DaemonError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v", err)
				}
				_, aerr := c.Append(t.Context(), "pad", key, "text/plain", []byte("x"))
				for _, e := range []error{err, aerr} {
					msg := e.Error()
					for _, secret := range []string{ticket, key, "tIcKeT", "wRiTeKeY", "ticket="} {
						if strings.Contains(msg, secret) {
							t.Errorf("error %q shows %q", msg, secret)
						}
					}
				}
			})
		}
	}
	if s := logs.String(); strings.Contains(s, "tIcKeT") || strings.Contains(s, "wRiTeKeY") || strings.Contains(s, "?") {
		t.Errorf("logs show a secret or a query: %s", s)
	}
	if !strings.Contains(logs.String(), "route=/v1/pads/{pad_id}/blocks") {
		t.Errorf("logs lack the route template: %s", logs.String())
	}
}

// TestTicketTransports: header mode sends Authorization and no query ticket; query mode the
// reverse. Both read the pad.
func TestTicketTransports(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	p := d.Pad([][]byte{[]byte(lockertest.Envelope)}, true)
	for _, tr := range []config.TicketTransport{config.TicketHeader, config.TicketQuery} {
		var sawHeader, sawQuery bool
		spy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/blocks") {
				sawHeader = r.Header.Get("Authorization") == "Bearer "+p.ReadTicket
				sawQuery = r.URL.Query().Get("ticket") == p.ReadTicket
			}
			d.Handler.ServeHTTP(w, r)
		})
		c, err := New(Config{BaseURL: lockertest.Serve(t, spy), TicketTransport: tr})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{}); err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		if sawHeader != (tr == config.TicketHeader) || sawQuery != (tr == config.TicketQuery) {
			t.Errorf("%s: header=%v query=%v", tr, sawHeader, sawQuery)
		}
	}
}

// TestCapabilitiesNeverPrinted: capabilities format and log redacted.
func TestCapabilitiesNeverPrinted(t *testing.T) {
	c := Capabilities{PadID: "p", WriteKey: "SECRETKEY", ReadTicket: "SECRETTICKET"}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", slog.Any("caps", c), slog.Any("err", &DepositError{Cause: "c", Partial: Partial{Capabilities: &c}}))
	for _, s := range []string{logs.String(), c.String(), (&DepositError{Cause: "c", Detail: "d", Partial: Partial{Capabilities: &c}}).Error()} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("secret shown: %s", s)
		}
	}
}
