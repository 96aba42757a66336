package httpapi

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t      testing.TB
	h      http.Handler
	clock  *clock
	dbPath string
}

func newHarness(t testing.TB, opts ...func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, locker.Config{}, opts...)
}

// newHarnessWith is newHarness with the Service's configuration (its Store and Now are
// the harness's own).
func newHarnessWith(t testing.TB, lc locker.Config, opts ...func(*Config)) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "locker.db")
	store, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	lc.Store, lc.Now = store, c.Now
	svc, err := locker.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SeedDemo(t.Context()); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Service: svc, Version: "test"}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, h: h, clock: c, dbPath: path}
}

type resp struct {
	status int
	header http.Header
	body   string
}

// do sends one request through the handler. header is "Key: value" lines.
func (hs *harness) do(method, target string, body io.Reader, header ...string) resp {
	hs.t.Helper()
	req := httptest.NewRequestWithContext(hs.t.Context(), method, target, body)
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	if body == nil {
		req.ContentLength = 0
	}
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	return resp{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

type created struct {
	PadID      string `json:"pad_id"`
	WriteKey   string `json:"write_key"`
	ReadTicket string `json:"read_ticket"`
}

func (hs *harness) create(body string) created {
	hs.t.Helper()
	r := hs.do("POST", "/v1/pads", strings.NewReader(body))
	if r.status != 201 {
		hs.t.Fatalf("create: %d %s", r.status, r.body)
	}
	var c created
	if err := json.Unmarshal([]byte(r.body), &c); err != nil {
		hs.t.Fatal(err)
	}
	return c
}

const envelope = `{"schema":"locker.handoff.v1","task_id":"t1","from_agent":"planner","to_agent":"worker","constraints":[],"artifacts":[],"budget_usd":null}`

func (hs *harness) appendBlock(c created, payload []byte) resp {
	hs.t.Helper()
	return hs.do("POST", "/v1/pads/"+c.PadID+"/append", bytes.NewReader(payload), "Authorization: Bearer "+c.WriteKey)
}

func (hs *harness) mustAppend(c created, payload string) {
	hs.t.Helper()
	if r := hs.appendBlock(c, []byte(payload)); r.status != 201 {
		hs.t.Fatalf("append: %d %s", r.status, r.body)
	}
}

// db opens the store file directly, for tests that tamper with it.
func (hs *harness) db() *sql.DB {
	hs.t.Helper()
	db, err := sql.Open("sqlite", "file:"+hs.dbPath)
	if err != nil {
		hs.t.Fatal(err)
	}
	hs.t.Cleanup(func() { db.Close() })
	return db
}
