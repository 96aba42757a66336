package lockerclient

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// forms records the Content-Type of every /blocks answer h gives.
type forms struct {
	h  http.Handler
	mu sync.Mutex
	ct []string
}

func (f *forms) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/blocks") {
		w = &headerSeen{ResponseWriter: w, f: f}
	}
	f.h.ServeHTTP(w, r)
}

// headerSeen records the Content-Type when the header is written: before the client can
// have read the body (and returned).
type headerSeen struct {
	http.ResponseWriter
	f *forms
}

func (h *headerSeen) WriteHeader(code int) {
	h.f.mu.Lock()
	h.f.ct = append(h.f.ct, h.Header().Get("Content-Type"))
	h.f.mu.Unlock()
	h.ResponseWriter.WriteHeader(code)
}

// jsonOnly is a daemon without the binary form: it never sees the client's Accept.
func jsonOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept")
		h.ServeHTTP(w, r)
	})
}

func chainsEqual(t *testing.T, a, b *Chain) {
	t.Helper()
	if a.Head != b.Head || a.Bytes != b.Bytes || len(a.Blocks) != len(b.Blocks) || a.Integrity.Verdict != b.Integrity.Verdict {
		t.Fatalf("chains differ: %s/%d/%d/%s vs %s/%d/%d/%s", a.Head, a.Bytes, len(a.Blocks), a.Integrity.Verdict, b.Head, b.Bytes, len(b.Blocks), b.Integrity.Verdict)
	}
	for i := range a.Blocks {
		x, y := a.Blocks[i], b.Blocks[i]
		if x.Seq != y.Seq || x.PrevHash != y.PrevHash || x.CurrHash != y.CurrHash || !bytes.Equal(x.Payload, y.Payload) || x.UTF8 != y.UTF8 ||
			x.CreatedAt != y.CreatedAt || x.HasCreatedAt != y.HasCreatedAt {
			t.Fatalf("block %d differs", i)
		}
	}
}

// TestWireRoundTripAndFallback: a read in the binary form (one answer, whole pad) gives
// exactly the chain a JSON read gives; a daemon without the binary form is read in JSON,
// whether it answers the whole-pad request with a page or with 413 (then paged), and the
// client keeps to JSON with it afterwards.
func TestWireRoundTripAndFallback(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	d := lockertest.New(t, lockertest.Options{})
	payloads := [][]byte{[]byte(lockertest.Envelope)}
	for len(payloads) < 12 {
		payloads = append(payloads, randomPayload(r))
	}
	p := d.Pad(payloads, true)
	head := locker.ChainHead(payloads)
	read := func(h http.Handler) (*Chain, []string) {
		t.Helper()
		f := &forms{h: h}
		c := serve(t, f)
		ch, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{ExpectedHead: &head})
		if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
			t.Fatalf("read: %v", err)
		}
		// A second read with the same client: JSON-only daemons are remembered.
		if _, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{}); err != nil {
			t.Fatalf("second read: %v", err)
		}
		return ch, f.ct
	}
	wire, wireCT := read(d.Handler)
	if len(wireCT) != 2 || wireCT[0] != padwire.MediaType || wireCT[1] != padwire.MediaType {
		t.Fatalf("binary daemon answered %v, want two binary answers", wireCT)
	}
	for i, b := range wire.Blocks {
		if !bytes.Equal(b.Payload, payloads[i]) {
			t.Fatalf("block %d payload differs", i)
		}
	}
	js, jsCT := read(jsonOnly(d.Handler))
	chainsEqual(t, wire, js)
	if len(jsCT) < 2 || slicesContain(jsCT, padwire.MediaType) {
		t.Fatalf("JSON-only daemon: %v", jsCT)
	}
	paged, pagedCT := read(d.Hostile(lockertest.JSONOnly))
	chainsEqual(t, wire, paged)
	if pagedCT[0] != "application/json" || len(pagedCT) < 3 {
		t.Fatalf("413 then pages: %v", pagedCT)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestWireTamperVerdicts: every single-byte change the property test makes, served in
// the binary form and in the JSON form, gives the same verdict and cause.
func TestWireTamperVerdicts(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 2))
	d := lockertest.New(t, lockertest.Options{})
	payloads := [][]byte{[]byte(lockertest.Envelope)}
	for len(payloads) < 6 {
		payloads = append(payloads, randomPayload(r))
	}
	p := d.Pad(payloads, true)
	head := locker.ChainHead(payloads)
	for range 30 {
		m := mutation{block: r.IntN(len(payloads)), pos: r.IntN(1 << 20), delta: byte(1 + r.IntN(255))}
		m.what = []string{"payload", "prev_hash", "curr_hash", "seq", "manifest_head"}[r.IntN(5)]
		h := d.Hostile(m.rewrite(t))
		for _, exp := range []*string{nil, &head} {
			f := &forms{h: h}
			_, werr := serve(t, f).Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{ExpectedHead: exp})
			_, jerr := serve(t, jsonOnly(h)).Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{ExpectedHead: exp})
			var wve, jve *VerificationError
			if !errors.As(werr, &wve) || !errors.As(jerr, &jve) {
				t.Fatalf("%v: binary %v, JSON %v: want verification failures", m, werr, jerr)
			}
			if wve.Cause != jve.Cause || wve.Integrity.Verdict != jve.Integrity.Verdict {
				t.Fatalf("%v: binary %s/%s, JSON %s/%s", m, wve.Cause, wve.Integrity.Verdict, jve.Cause, jve.Integrity.Verdict)
			}
			if m.what != "manifest_head" && !slicesContain(f.ct, padwire.MediaType) {
				t.Fatalf("%v: the tampered pad was not served in the binary form (%v): %v", m, f.ct, werr)
			}
		}
	}
}

// TestWireMalformed: a binary answer cut short (its Content-Length matching), with
// trailing bytes, or of another version fails closed as an inconsistent block list.
func TestWireMalformed(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	payloads := [][]byte{[]byte(lockertest.Envelope), []byte("two")}
	p := d.Pad(payloads, true)
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:len(b)-4] }},
		{"trailing", func(b []byte) []byte { return append(b, 0) }},
		{"version", func(b []byte) []byte { b[4] = 9; return b }},
		{"frame cut", func(b []byte) []byte { return b[:len(b)-10] }},
	} {
		_, err := serve(t, rawWire(d, tc.edit)).Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{})
		var ve *VerificationError
		if !errors.As(err, &ve) || ve.Cause != CauseInconsistentBlocks {
			t.Errorf("%s: %v, want inconsistent_blocks", tc.name, err)
		}
	}
}

// rawWire serves d's answers with edit applied to every binary body.
func rawWire(d *lockertest.Daemon, edit func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Type") == padwire.MediaType {
			body = edit(bytes.Clone(body))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestWireOneRequest: against a daemon with the binary form a read is one request (the
// manifest rides in the answer), and a refusal of it is followed by the contract's walk,
// which reports the refusal as it always has.
func TestWireOneRequest(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	p := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte("two")}, true)
	var mu sync.Mutex
	var paths []string
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path[strings.LastIndexByte(r.URL.Path, '/'):])
		mu.Unlock()
		d.Handler.ServeHTTP(w, r)
	}))
	ch, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{})
	if err != nil || len(ch.Blocks) != 2 || ch.Manifest.State != "sealed" || ch.Manifest.BlockCount != 2 {
		t.Fatalf("read: %v", err)
	}
	if strings.Join(paths, " ") != "/blocks" {
		t.Fatalf("requests %v, want one /blocks", paths)
	}
	paths = nil
	_, err = c.Read(t.Context(), p.PadID, "wrong-ticket", ReadOptions{})
	var de *DaemonError
	if !errors.As(err, &de) || de.Status != http.StatusUnauthorized {
		t.Fatalf("wrong ticket: %v", err)
	}
	if strings.Join(paths, " ") != "/blocks /manifest /blocks" {
		t.Fatalf("requests %v, want the refused read then the contract's walk", paths)
	}
}

// TestChainRelease: a released chain's memory carries a later read, which is still exactly
// right; releasing twice, or a nil chain, does nothing. (sync.Pool may drop what it is
// given — always under the race detector, now and then — so reuse is asked of one of
// several reads.)
func TestChainRelease(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	a := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte(strings.Repeat("a", 5000))}, true)
	b := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte(strings.Repeat("b", 4000))}, true)
	c := serve(t, d.Handler)
	var none *Chain
	none.Release()
	reused := false
	for range 20 {
		first, err := c.Read(t.Context(), a.PadID, a.ReadTicket, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mem := &first.Blocks[0].Payload[0]
		first.Release()
		first.Release()
		if first.Blocks != nil {
			t.Fatal("a released chain still shows its blocks")
		}
		second, err := c.Read(t.Context(), b.PadID, b.ReadTicket, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(second.Blocks[1].Payload) != strings.Repeat("b", 4000) || string(second.Blocks[0].Payload) != lockertest.Envelope {
			t.Fatal("the read into reused memory is wrong")
		}
		reused = reused || &second.Blocks[0].Payload[0] == mem
		second.Release()
	}
	if !reused {
		t.Fatal("no read reused a released chain's memory")
	}
}

// TestWireTooLargeForOnePad: a daemon's 413 for a binary answer over its cap sends that
// read to JSON pages and leaves the binary form on for the next read.
func TestWireTooLargeForOnePad(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	p := d.Pad([][]byte{[]byte(lockertest.Envelope), []byte("two")}, true)
	var tooLarge atomic.Bool
	tooLarge.Store(true)
	f := &forms{h: d.Hostile(func(r *http.Request, resp *lockertest.Response) {
		if tooLarge.Load() && strings.Contains(r.Header.Get("Accept"), padwire.MediaType) {
			resp.Status = http.StatusRequestEntityTooLarge
			resp.Header = http.Header{"Content-Type": {"application/json"}}
			resp.Body = []byte(`{"error":"payload_too_large","detail":"binary answer exceeds 4194304 bytes; read the pad in pages"}`)
		}
	})}
	c := serve(t, f)
	if _, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	tooLarge.Store(false)
	if _, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.ct, " "); got != "application/json application/json "+padwire.MediaType {
		t.Fatalf("answers %s: want the refused binary read, a JSON page, then the binary form again", got)
	}
}

// chunks reads at most n bytes at a time, n cycling through sizes.
type chunks struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunks) Read(p []byte) (int, error) {
	n := c.sizes[c.i%len(c.sizes)]
	c.i++
	return c.r.Read(p[:min(len(p), n)])
}

// TestWireUTF8AcrossPieces: a binary answer's payloads are checked for UTF-8 piece by piece
// as they arrive, and a block's UTF8 flag is still exactly utf8.Valid of its payload when
// the pieces split characters, whatever the piece sizes.
func TestWireUTF8AcrossPieces(t *testing.T) {
	d := lockertest.New(t, lockertest.Options{})
	payloads := [][]byte{[]byte(lockertest.Envelope),
		[]byte("plain ascii"), []byte(strings.Repeat("é€😀", 300)), []byte("ok \xff then"),
		[]byte("\xed\xa0\x80 surrogate"), []byte("overlong \xc0\xaf"), []byte(strings.Repeat("a", 40000) + "😀" + strings.Repeat("b", 20000)),
		[]byte("ends mid-character \xe2\x82"), []byte("\u2028\u00e9")}
	p := d.Pad(payloads, true)
	head := locker.ChainHead(payloads)
	body := wireBody(t, d, p.PadID, p.ReadTicket)
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sizes := range [][]int{{1}, {2, 3}, {7, 1, 5}, {4096}, {1 << 20}} {
		rd := c.getReader(&chunks{r: bytes.NewReader(body), sizes: sizes})
		ch, err := c.wholeWire(rd, p.PadID, &head)
		c.readers.Put(rd)
		if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
			t.Fatalf("pieces of %v: %v", sizes, err)
		}
		for i, b := range ch.Blocks {
			if b.UTF8 != utf8.Valid(payloads[i]) || !bytes.Equal(b.Payload, payloads[i]) {
				t.Fatalf("pieces of %v, block %d: UTF8 %v, want %v", sizes, i, b.UTF8, utf8.Valid(payloads[i]))
			}
		}
		ch.Release()
	}
}
