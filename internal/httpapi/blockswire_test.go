package httpapi

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

const wireAccept = "Accept: " + padwire.MediaType

// wirePage decodes a binary /blocks answer into the JSON form's blocksBody.
func wirePage(t *testing.T, body string) blocksBody {
	t.Helper()
	rd := padwire.NewReader(strings.NewReader(body), bufio.NewReader(nil))
	h, err := rd.Header()
	if err != nil {
		t.Fatal(err)
	}
	p := blocksBody{PadID: h.PadID, From: int(h.From), To: int(h.To), Count: int(h.Count), TotalBlocks: int(h.TotalBlocks), Blocks: []blockBody{}}
	for {
		f, ok, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		payload := make([]byte, f.PayloadLen)
		if err := rd.Payload(payload, nil); err != nil {
			t.Fatal(err)
		}
		b := blockBody{Seq: int(f.Seq), PrevHash: string(f.PrevHash), CurrHash: string(f.CurrHash), ContentType: string(f.ContentType), CreatedAt: f.CreatedAt}
		b.PayloadB64, b.PayloadUTF8 = blockText(payload)
		p.Blocks = append(p.Blocks, b)
	}
	if err := rd.End(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBlocksWire: the binary form is served only when asked for, carries exactly what the
// JSON form carries (for ranges the JSON form would refuse too), and every refusal stays
// the contract's JSON.
func TestBlocksWire(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{"max_blocks": 300}`)
	hs.fill(c, 300, "a 1 KiB-ish block payload "+strings.Repeat("é", 400)) // over the JSON slice caps
	path := "/v1/pads/" + c.PadID + "/blocks"
	bearer := "Authorization: Bearer " + c.ReadTicket

	// Not asked: the JSON form, byte for byte the same with or without Accept: application/json.
	plain := hs.do("GET", path+"?from=0&to=9", nil, bearer)
	withJSON := hs.do("GET", path+"?from=0&to=9", nil, bearer, "Accept: application/json")
	both := hs.do("GET", path+"?from=0&to=9", nil, bearer, "Accept: application/json, "+padwire.MediaType+";q=0.5")
	zero := hs.do("GET", path+"?from=0&to=9", nil, bearer, "Accept: "+padwire.MediaType+";q=0")
	for _, r := range []resp{withJSON, both, zero} {
		if r.status != 200 || r.body != plain.body || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("JSON answer differs: %d %s", r.status, r.header.Get("Content-Type"))
		}
	}
	// Asked: the same blocks, and the whole pad at once where JSON says 413.
	wire := hs.do("GET", path+"?from=0&to=9", nil, bearer, wireAccept)
	if wire.status != 200 || wire.header.Get("Content-Type") != padwire.MediaType || wire.header.Get("Vary") != "Accept" {
		t.Fatalf("binary answer: %d %v", wire.status, wire.header)
	}
	var want blocksBody
	if err := json.Unmarshal([]byte(plain.body), &want); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(wirePage(t, wire.body))
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("binary page differs from the JSON page:\n%s\n%s", gotJSON, wantJSON)
	}
	if r := hs.do("GET", path, nil, bearer); r.status != 413 {
		t.Fatalf("JSON whole pad: %d, want 413", r.status)
	}
	whole := wirePage(t, hs.do("GET", path, nil, bearer, wireAccept).body)
	if whole.Count != 300 || whole.To != 299 || len(whole.Blocks) != 300 || whole.TotalBlocks != 300 {
		t.Fatalf("whole pad: count %d to %d", whole.Count, whole.To)
	}
	// Refusals are the contract's JSON bodies, whatever was asked for.
	for _, tc := range []struct {
		path, header string
		status       int
	}{
		{"/v1/pads/nope/blocks", bearer, 404},
		{path, "", 401},
		{path, "Authorization: Bearer wrong", 401},
		{path + "?from=x", bearer, 422},
		{path + "?from=5&to=2", bearer, 422},
	} {
		a, b := hs.do("GET", tc.path, nil, tc.header), hs.do("GET", tc.path, nil, tc.header, wireAccept)
		if a.status != tc.status || b.status != tc.status || a.body != b.body || b.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q vs %d %q", tc.path, a.status, a.body, b.status, b.body)
		}
	}
	// An empty pad's nonsense range echoes a negative from: JSON, which the client accepts.
	e := hs.create(`{}`)
	a := hs.do("GET", "/v1/pads/"+e.PadID+"/blocks?from=-3", nil, "Authorization: Bearer "+e.ReadTicket)
	b := hs.do("GET", "/v1/pads/"+e.PadID+"/blocks?from=-3", nil, "Authorization: Bearer "+e.ReadTicket, wireAccept)
	if a.body != b.body || b.header.Get("Content-Type") != "application/json" {
		t.Fatalf("empty pad, from=-3: %q vs %q", a.body, b.body)
	}
}

// TestBlocksWireCache: a pad's binary form is cached by (pad, head, state) — a change to
// the stored blocks behind the daemon's back is not seen while the head and state are the
// same, and is seen as soon as either differs (an append, a seal); a cached read still
// opens and enforces the read_once lease. The pad record a ticket already read a sealed
// pad with is remembered too (locker's read cache): a head changed behind the daemon's
// back is seen through a ticket that has not read yet, not through one that has.
// (TestBlocksWireManifest: a state changed by lazy expiry is seen too.)
func TestBlocksWireCache(t *testing.T) {
	hs := newHarness(t)
	c := hs.create(`{"max_blocks": 4}`)
	hs.mustAppend(c, envelope)
	hs.mustAppend(c, "one")
	path := "/v1/pads/" + c.PadID + "/blocks"
	bearer := "Authorization: Bearer " + c.ReadTicket // read_once
	db := hs.db()
	// The store refuses to change a block; the test plays someone who edits the file.
	if _, err := db.ExecContext(t.Context(), `DROP TRIGGER blocks_no_update`); err != nil {
		t.Fatal(err)
	}
	tamper := func(payload string) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), `UPDATE blocks SET payload = ? WHERE pad_id = ? AND seq = 1`, []byte(payload), c.PadID); err != nil {
			t.Fatal(err)
		}
	}
	read := func(bearer string) blocksBody {
		t.Helper()
		r := hs.do("GET", path, nil, bearer, wireAccept)
		if r.status != 200 {
			t.Fatalf("read: %d %s", r.status, r.body)
		}
		return wirePage(t, r.body)
	}
	payload1 := func(bearer string) string {
		t.Helper()
		return *read(bearer).Blocks[1].PayloadUTF8
	}
	// Open: cached at its head, until an append moves the head.
	if got := payload1(bearer); got != "one" {
		t.Fatalf("open pad: %q", got)
	}
	tamper("ONE")
	if got := payload1(bearer); got != "one" {
		t.Fatalf("open pad, same head: %q, want the cached form", got)
	}
	hs.mustAppend(c, "two")
	if p := read(bearer); *p.Blocks[1].PayloadUTF8 != "ONE" || len(p.Blocks) != 3 || *p.Blocks[2].PayloadUTF8 != "two" {
		t.Fatalf("open pad after an append: %d blocks, block 1 %q, want the store's 3 blocks", len(p.Blocks), *p.Blocks[1].PayloadUTF8)
	}
	// Sealed: the same head, another state — read from the store again, then cached.
	tamper("one")
	hs.seal(c)
	if got := wireManifest(t, hs.do("GET", path, nil, bearer, wireAccept).body); !strings.Contains(got, `"state":"sealed"`) {
		t.Fatalf("sealed pad: the answer's manifest is %s", got)
	}
	if got := payload1(bearer); got != "one" {
		t.Fatalf("sealed pad: %q, want the store's blocks", got)
	}
	tamper("ONE")
	if got := payload1(bearer); got != "one" {
		t.Fatalf("sealed pad, same head: %q, want the cached form", got)
	}
	if _, err := db.ExecContext(t.Context(), `UPDATE pads SET head_hash = ? WHERE id = ?`, strings.Repeat("f", 64), c.PadID); err != nil {
		t.Fatal(err)
	}
	if got := payload1(bearer); got != "one" {
		t.Fatalf("sealed pad, another head, a ticket that read it: %q, want the remembered pad and its cached form", got)
	}
	r := hs.do("POST", "/v1/pads/"+c.PadID+"/tickets", strings.NewReader(`{}`), "Authorization: Bearer "+c.WriteKey)
	var tk struct{ Ticket string }
	if err := json.Unmarshal([]byte(r.body), &tk); err != nil || r.status != 201 {
		t.Fatalf("mint a ticket: %d %s", r.status, r.body)
	}
	if got := payload1("Authorization: Bearer " + tk.Ticket); got != "ONE" {
		t.Fatalf("sealed pad, another head, a new ticket: %q, want the store's blocks", got)
	}
	// The lease: opened by the first read above, over after 600 s, cached or not.
	hs.clock.Advance(601 * time.Second)
	if r := hs.do("GET", path, nil, bearer, wireAccept); r.status != http.StatusForbidden {
		t.Fatalf("after the lease: %d %s", r.status, r.body)
	}
}

// TestPadCacheOneAnswerPerPad: a pad's new answer replaces its old one (an open pad read
// after every append holds one answer, not one per head), and the byte count follows.
func TestPadCacheOneAnswerPerPad(t *testing.T) {
	c := newPadCache(1 << 20)
	for i := range 100 {
		c.put("p", strconv.Itoa(i), locker.StateOpen, make([]byte, 1000+i))
	}
	if len(c.m) != 1 || c.bytes != 1099 {
		t.Fatalf("after 100 heads of one pad: %d answers, %d bytes; want 1 and 1099", len(c.m), c.bytes)
	}
	if c.get("p", "99", locker.StateOpen) == nil || c.get("p", "99", locker.StateSealed) != nil || c.get("p", "98", locker.StateOpen) != nil {
		t.Fatal("the answer is not keyed by its head and state")
	}
	c.put("q", "x", locker.StateSealed, make([]byte, 10))
	if len(c.m) != 2 || c.bytes != 1109 {
		t.Fatalf("two pads: %d answers, %d bytes", len(c.m), c.bytes)
	}
}

// blockText is a payload's two JSON representations.
func blockText(p []byte) (string, *string) {
	var text *string
	if utf8.Valid(p) {
		s := string(p)
		text = &s
	}
	return base64.StdEncoding.EncodeToString(p), text
}

// wireManifest is the manifest a binary /blocks answer carries in its header.
func wireManifest(t *testing.T, body string) string {
	t.Helper()
	h, err := padwire.NewReader(strings.NewReader(body), bufio.NewReader(nil)).Header()
	if err != nil {
		t.Fatal(err)
	}
	return string(h.Manifest)
}

// TestBlocksWireCarriesTheManifest: the binary answer's header carries, byte for byte,
// what GET /manifest answers at that moment — for an open pad, a sealed pad whose frames
// come from the cache, an empty pad, and a pad that lazy expiry has just expired.
func TestBlocksWireCarriesTheManifest(t *testing.T) {
	hs := newHarness(t)
	check := func(c created, what string) {
		t.Helper()
		w := hs.do("GET", "/v1/pads/"+c.PadID+"/blocks", nil, "Authorization: Bearer "+c.ReadTicket, wireAccept)
		m := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil)
		if w.status != 200 || m.status != 200 {
			t.Fatalf("%s: %d %d", what, w.status, m.status)
		}
		if got := wireManifest(t, w.body); got != m.body {
			t.Fatalf("%s: the binary answer carries\n%s\nGET /manifest answers\n%s", what, got, m.body)
		}
	}
	empty := hs.create(`{}`)
	check(empty, "empty pad")
	c := hs.create(`{"ttl_seconds": 60, "max_blocks": 3}`)
	hs.mustAppend(c, envelope)
	check(c, "open pad")
	hs.mustAppend(c, "one")
	check(c, "open pad, one more block")
	s := hs.create(`{"max_blocks": 3}`)
	hs.mustAppend(s, envelope)
	hs.seal(s)
	check(s, "sealed pad")
	check(s, "sealed pad, frames from the cache")
	hs.clock.Advance(61 * time.Second)
	check(c, "expired pad")
	if m := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil); !strings.Contains(m.body, `"state":"expired"`) {
		t.Fatalf("the pad did not expire: %s", m.body)
	}
}

// TestBlocksWireTooLarge: a binary answer over MaxWireBytes is refused with 413 before the
// read is recorded (a read_once lease stays unopened), and the same read in JSON pages,
// or a binary read that fits, is served.
func TestBlocksWireTooLarge(t *testing.T) {
	hs := newHarness(t, func(c *Config) { c.MaxWireBytes = 8 << 10 })
	c := hs.create(`{"max_blocks": 8}`)
	hs.mustAppend(c, envelope)
	hs.mustAppend(c, strings.Repeat("x", 6<<10))
	path := "/v1/pads/" + c.PadID + "/blocks"
	bearer := "Authorization: Bearer " + c.ReadTicket // read_once
	r := hs.do("GET", path, nil, bearer, wireAccept)
	if r.status != 413 || r.body != `{"error":"payload_too_large","detail":"binary answer exceeds 8192 bytes; read the pad in pages"}` {
		t.Fatalf("over the cap: %d %s", r.status, r.body)
	}
	// The refused read opened no lease: 601 s later the ticket still reads.
	hs.clock.Advance(601 * time.Second)
	if r := hs.do("GET", path+"?from=1&to=1", nil, bearer); r.status != 200 {
		t.Fatalf("JSON page after the refusal: %d %s", r.status, r.body)
	}
	if r := hs.do("GET", path+"?from=0&to=0", nil, bearer, wireAccept); r.status != 200 || r.header.Get("Content-Type") != padwire.MediaType {
		t.Fatalf("a binary read that fits: %d %s", r.status, r.body)
	}
}
