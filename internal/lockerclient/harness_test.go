package lockerclient

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// clock is a settable test clock for the daemon.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// daemon is a real lockerd handler over SQLite in a temporary directory.
type daemon struct {
	t     testing.TB
	h     http.Handler
	clock *clock
}

func newDaemon(t testing.TB) *daemon {
	t.Helper()
	store, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "locker.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	svc, err := locker.New(locker.Config{Store: store, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SeedDemo(t.Context()); err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Service: svc, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &daemon{t: t, h: h, clock: c}
}

// serve starts h on loopback and returns a client for it.
func serve(t testing.TB, h http.Handler) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

type created struct {
	PadID      string `json:"pad_id"`
	WriteKey   string `json:"write_key"`
	ReadTicket string `json:"read_ticket"`
}

// do sends one request straight to the handler.
func (d *daemon) do(method, target string, body []byte, auth string) (int, []byte) {
	d.t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

const testEnvelope = `{"schema": "locker.handoff.v1", "task_id": "t1", "from_agent": "planner", "to_agent": "worker", "constraints": [], "artifacts": [], "budget_usd": null}`

// pad creates a pad holding payloads (block 0 must be an envelope), sealed when seal is set.
func (d *daemon) pad(payloads [][]byte, seal bool) created {
	d.t.Helper()
	code, body := d.do("POST", "/v1/pads", []byte(`{"max_blocks": 4096}`), "")
	if code != 201 {
		d.t.Fatalf("create: %d %s", code, body)
	}
	var c created
	if err := json.Unmarshal(body, &c); err != nil {
		d.t.Fatal(err)
	}
	for i, p := range payloads {
		if code, body := d.do("POST", "/v1/pads/"+c.PadID+"/append", p, c.WriteKey); code != 201 {
			d.t.Fatalf("append %d: %d %s", i, code, body)
		}
	}
	if seal {
		if code, body := d.do("POST", "/v1/pads/"+c.PadID+"/seal", nil, c.WriteKey); code != 200 {
			d.t.Fatalf("seal: %d %s", code, body)
		}
	}
	return c
}
