// Package lockertest runs a real lockerd handler (internal/httpapi over SQLite in a test's
// temporary directory) for tests of Padlock clients, and wraps it in hostile daemons that
// rewrite what it serves.
package lockertest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// Clock is a settable clock for the daemon.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Options tune a Daemon.
type Options struct {
	// LeaseSeconds is the read_once lease window. Default 600.
	LeaseSeconds int
}

// Daemon is a real lockerd handler with the demo pad seeded, on a clock starting at
// 2027-01-15T08:00:00Z.
type Daemon struct {
	t       testing.TB
	Handler http.Handler
	Clock   *Clock
}

// New starts a Daemon; everything is cleaned up with t.
func New(t testing.TB, opt Options) *Daemon {
	t.Helper()
	store, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "locker.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := &Clock{now: time.Unix(1_800_000_000, 0)}
	svc, err := locker.New(locker.Config{Store: store, Now: c.Now, LeaseSeconds: opt.LeaseSeconds})
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
	return &Daemon{t: t, Handler: h, Clock: c}
}

// Serve starts h on a loopback httptest server, closed with t, and returns its URL.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Created is a create response.
type Created struct {
	PadID      string `json:"pad_id"`
	WriteKey   string `json:"write_key"`
	ReadTicket string `json:"read_ticket"`
}

// Do sends one request straight to the handler and returns status and body.
func (d *Daemon) Do(method, target string, body []byte, bearer string) (int, []byte) {
	d.t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	d.Handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// Envelope is a valid locker.handoff.v1 envelope as Python's json.dumps writes it.
const Envelope = `{"schema": "locker.handoff.v1", "task_id": "t1", "from_agent": "planner", "to_agent": "worker", "constraints": [], "artifacts": [], "budget_usd": null}`

// Pad creates a pad holding payloads (payloads[0] must be an envelope), sealed when seal is
// set, and returns its capabilities.
func (d *Daemon) Pad(payloads [][]byte, seal bool) Created {
	d.t.Helper()
	code, body := d.Do("POST", "/v1/pads", []byte(`{"max_blocks": `+strconv.Itoa(max(1, len(payloads)))+`}`), "")
	if code != 201 {
		d.t.Fatalf("create: %d %s", code, body)
	}
	var c Created
	if err := json.Unmarshal(body, &c); err != nil {
		d.t.Fatal(err)
	}
	for i, p := range payloads {
		if code, body := d.Do("POST", "/v1/pads/"+c.PadID+"/append", p, c.WriteKey); code != 201 {
			d.t.Fatalf("append %d: %d %s", i, code, body)
		}
	}
	if seal {
		if code, body := d.Do("POST", "/v1/pads/"+c.PadID+"/seal", nil, c.WriteKey); code != 200 {
			d.t.Fatalf("seal: %d %s", code, body)
		}
	}
	return c
}

// Response is a recorded response a Rewrite may change.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Drop closes the connection without answering (a lost response): the request has
	// already reached the daemon.
	Drop bool
}

// Rewrite changes the daemon's response to req (route is the request path, e.g.
// /v1/pads/ID/blocks). It may also leave it alone.
type Rewrite func(req *http.Request, resp *Response)

// Hostile serves the daemon's responses through rewrite.
func (d *Daemon) Hostile(rewrite Rewrite) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, r)
		resp := &Response{Status: rec.Code, Header: rec.Header().Clone(), Body: rec.Body.Bytes()}
		wire, manifest := asJSON(d.t, resp)
		rewrite(r, resp)
		if wire {
			// The manifest the binary answer carries is served through rewrite as GET
			// /manifest would be; a refused or dropped manifest becomes the answer.
			m := manifestAnswer(r, manifest, rewrite)
			if m.Status != http.StatusOK || m.Drop {
				resp = m
			} else {
				fromJSON(resp, m.Body)
			}
		}
		if resp.Drop {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	})
}

// Page is a decoded /blocks response, for rewrites.
type Page struct {
	PadID       string      `json:"pad_id"`
	From        int         `json:"from"`
	To          int         `json:"to"`
	Count       int         `json:"count"`
	TotalBlocks int         `json:"total_blocks"`
	Blocks      []PageBlock `json:"blocks"`
}

// PageBlock is one block of a Page.
type PageBlock struct {
	Seq         int     `json:"seq"`
	PrevHash    string  `json:"prev_hash"`
	CurrHash    string  `json:"curr_hash"`
	ContentType string  `json:"content_type"`
	PayloadB64  string  `json:"payload_b64"`
	PayloadUTF8 *string `json:"payload_utf8"`
	CreatedAt   int64   `json:"created_at"`
}

// EditJSON decodes resp's body into v, calls edit, and re-encodes it.
func EditJSON[T any](t testing.TB, resp *Response, edit func(*T)) {
	t.Helper()
	var v T
	if err := json.Unmarshal(resp.Body, &v); err != nil {
		t.Errorf("rewrite: %v", err)
		return
	}
	edit(&v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Errorf("rewrite: %v", err)
		return
	}
	resp.Body = b
}

// Rechain recomputes prev/curr hashes of consecutive blocks from prev, keeping
// payload_utf8 equal to the strict decode of the payload: a rewrite a chain check cannot see.
func Rechain(blocks []PageBlock, prev string) string {
	for i := range blocks {
		p := decode(blocks[i].PayloadB64)
		blocks[i].PrevHash = prev
		blocks[i].CurrHash = locker.NextHash(prev, p)
		prev = blocks[i].CurrHash
	}
	return prev
}

// SetPayload replaces a block's payload consistently (base64 and text), leaving hashes.
func SetPayload(b *PageBlock, p []byte) {
	b.PayloadB64 = encodeB64(p)
	b.PayloadUTF8 = nil
	if utf8Valid(p) {
		s := string(p)
		b.PayloadUTF8 = &s
	}
}

// manifestAnswer is the manifest a binary answer to r carries, served through rewrite as
// the daemon's answer to GET /manifest.
func manifestAnswer(r *http.Request, manifest []byte, rewrite Rewrite) *Response {
	mr := r.Clone(r.Context())
	mr.URL.Path = strings.TrimSuffix(r.URL.Path, "/blocks") + "/manifest"
	mr.URL.RawPath, mr.URL.RawQuery = "", ""
	mr.Header.Del("Authorization")
	mr.Header.Set("Accept", "application/json")
	m := &Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: manifest}
	rewrite(mr, m)
	return m
}

// wirePage decodes a binary (padwire) /blocks answer into a Page, payload_utf8 derived as
// the daemon derives it for JSON, and the manifest its header carries.
func wirePage(body []byte) (Page, []byte, error) {
	rd := padwire.NewReader(bytes.NewReader(body), bufio.NewReader(nil))
	h, err := rd.Header()
	if err != nil {
		return Page{}, nil, err
	}
	p := Page{PadID: h.PadID, From: int(h.From), To: int(h.To), Count: int(h.Count), TotalBlocks: int(h.TotalBlocks), Blocks: []PageBlock{}}
	for {
		f, ok, err := rd.Next()
		if err != nil {
			return Page{}, nil, err
		}
		if !ok {
			break
		}
		payload := make([]byte, f.PayloadLen)
		if err := rd.Payload(payload, nil); err != nil {
			return Page{}, nil, err
		}
		b := PageBlock{Seq: int(f.Seq), PrevHash: string(f.PrevHash), CurrHash: string(f.CurrHash), ContentType: string(f.ContentType), CreatedAt: f.CreatedAt}
		SetPayload(&b, payload)
		p.Blocks = append(p.Blocks, b)
	}
	return p, h.Manifest, rd.End()
}

// pageWire encodes a Page in the binary form with manifest in its header; ok is false when
// the form cannot carry it.
func pageWire(p Page, manifest []byte) ([]byte, bool) {
	if p.From < 0 || p.To < 0 || p.Count < 0 || p.TotalBlocks < 0 {
		return nil, false
	}
	hd := padwire.Header{PadID: p.PadID, From: uint32(p.From), To: uint32(p.To), Count: uint32(p.Count), TotalBlocks: uint32(p.TotalBlocks), Manifest: manifest}
	if !hd.Fits() {
		return nil, false
	}
	out := padwire.AppendHeader(nil, hd)
	for _, b := range p.Blocks {
		payload, err := base64.StdEncoding.Strict().DecodeString(b.PayloadB64)
		wb := padwire.Block{Seq: uint32(b.Seq), CreatedAt: b.CreatedAt, PrevHash: b.PrevHash, CurrHash: b.CurrHash, ContentType: b.ContentType}
		if err != nil || b.Seq < 0 || !wb.Fits(len(payload)) {
			return nil, false
		}
		out = padwire.AppendBlock(out, wb, payload)
	}
	return padwire.AppendEnd(out), true
}

// asJSON turns a binary /blocks answer into the JSON a rewrite can edit, and returns the
// manifest its header carried. After the rewrite, fromJSON turns it back into the binary
// form when that carries the edited page exactly (so every JSON tamper is also served to
// binary readers); otherwise the edited JSON is served, as a daemon without the binary
// form would.
func asJSON(t testing.TB, resp *Response) (bool, []byte) {
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != padwire.MediaType {
		return false, nil
	}
	p, manifest, err := wirePage(resp.Body)
	if err != nil {
		t.Errorf("lockertest: the daemon's binary answer does not decode: %v", err)
		return false, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Errorf("lockertest: %v", err)
		return false, nil
	}
	resp.Body = b
	resp.Header.Set("Content-Type", "application/json")
	return true, manifest
}

func fromJSON(resp *Response, manifest []byte) {
	if resp.Status != http.StatusOK || resp.Drop || resp.Header.Get("Content-Type") != "application/json" {
		return
	}
	var p Page
	if json.Unmarshal(resp.Body, &p) != nil {
		return
	}
	b, ok := pageWire(p, manifest)
	if !ok {
		return
	}
	back, _, err := wirePage(b)
	if err != nil {
		return
	}
	if j, err := json.Marshal(back); err != nil || !bytes.Equal(j, resp.Body) {
		return
	}
	resp.Body = b
	resp.Header.Set("Content-Type", padwire.MediaType)
}

// JSONOnly is a Rewrite that makes the daemon answer as one without the binary form does:
// a /blocks request over the JSON slice caps (here: any request that asked for the binary
// form and received it for more than one block) is refused with the contract's 413, and
// a client then pages in JSON.
func JSONOnly(r *http.Request, resp *Response) {
	if resp.Status != http.StatusOK || !strings.Contains(r.Header.Get("Accept"), padwire.MediaType) {
		return
	}
	if from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to"); from != to {
		resp.Status = http.StatusRequestEntityTooLarge
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = []byte(`{"error":"payload_too_large","detail":"slice payload exceeds 65536 bytes; narrow from/to"}`)
	}
}
