package lockerclient

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/benchratio"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// fullPad creates a pad holding exactly 256 KiB of payload in n equal blocks (block 0 an
// envelope padded with spaces), the same shape as internal/httpapi's benchmark.
func fullPad(b *testing.B, d *lockertest.Daemon, n int) (lockertest.Created, [][]byte) {
	b.Helper()
	size := locker.MaxPadBytes / n
	env := lockertest.Envelope + strings.Repeat(" ", size-len(lockertest.Envelope))
	payloads := [][]byte{[]byte(env)}
	for i := 1; i < n; i++ {
		payloads = append(payloads, []byte(fmt.Sprintf("%-*d", size, i)))
	}
	return d.Pad(payloads, true), payloads
}

// recorder captures every response of a handler by request URI, to replay them.
type recorder struct {
	h     http.Handler
	pages map[string][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	r.pages[req.URL.RequestURI()] = rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// static replays recorded responses: a daemon that costs nothing, isolating the client.
type static map[string][]byte

func (s static) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, ok := s[req.URL.RequestURI()]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	_, _ = w.Write(body)
}

// BenchmarkReadVerify256KiB reads and verifies a full 256 KiB pad and compares the MB/s with
// raw SHA-256 over the same payload bytes in the same run:
//
//   - raw-sha256: one sha256 over the 256 KiB, the ceiling.
//   - decode-verify: this client's page decoder and chain walk over response bodies already
//     in memory (no HTTP): what the client itself costs.
//   - http-static-daemon: Client.Read over loopback against a server replaying pre-rendered
//     responses: client plus HTTP, with a daemon that costs nothing.
//   - http-lockerd-json: Client.Read over loopback against the real lockerd handler on
//     SQLite in the JSON form (pages): end to end, the daemon's own work included.
//   - http-lockerd: the same in the binary form (padwire), as lockermcp reads: one
//     request (the manifest rides in the answer's header), verified as it arrives, the
//     chain's memory handed back with Release as lockermcp does; the sealed pad's answer
//     is cached by the daemon.
//   - http-lockerd-kernel-buffer: http-lockerd on connections with the kernel's own
//     receive buffer instead of ReceiveBuffer.
//   - http-lockerd-open: the same for an open pad with the same blocks: its pad and ticket
//     are read from SQLite for every read (an open pad's record can change), its answer
//     comes from the daemon's cache (by pad, head and state).
//
// The x_sha256 metric is throughput as a fraction of raw SHA-256 over the same payload,
// from alternating rounds in the same run (internal/benchratio).
//
// (Each block also hashes its 64-byte prev_hash, so with 1 KiB blocks the chain does 18
// compressions where raw hashing does 16: 0.89 is the ceiling for that shape.)
//
//	go test -run='^$' -bench=ReadVerify -benchmem ./internal/lockerclient/
func BenchmarkReadVerify256KiB(b *testing.B) {
	for _, n := range []int{4, 256} {
		b.Run(fmt.Sprintf("%dblocks", n), func(b *testing.B) { benchReadVerify(b, n) })
	}
}

func benchReadVerify(b *testing.B, n int) {
	d := lockertest.New(b, lockertest.Options{})
	c, payloads := fullPad(b, d, n)
	total := int64(0)
	for _, p := range payloads {
		total += int64(len(p))
	}
	head := locker.ChainHead(payloads)

	rec := &recorder{h: d.Handler, pages: map[string][]byte{}}
	client := serve(b, rec)
	client.noWireUntil.Store(math.MaxInt64) // record the JSON pages
	ch, err := client.Read(b.Context(), c.PadID, c.ReadTicket, ReadOptions{ExpectedHead: &head})
	if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
		b.Fatalf("warm-up read: %v", err)
	}
	var pages [][]byte
	var ranges [][2]int
	for from := 0; from < n; {
		chunk := firstChunk(n, total)
		to := min(from+chunk, n) - 1
		body, ok := rec.pages[fmt.Sprintf("/v1/pads/%s/blocks?from=%d&to=%d", c.PadID, from, to)]
		if !ok {
			b.Fatalf("no recorded page %d..%d", from, to)
		}
		pages, ranges = append(pages, body), append(ranges, [2]int{from, to})
		from = to + 1
	}

	b.Run("raw-sha256", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			h := sha256.New()
			for _, p := range payloads {
				h.Write(p)
			}
			h.Sum(nil)
		}
	})
	b.Run("decode-verify", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			w := &walk{padID: c.PadID, want: n, maxBytes: DefaultMaxPadBytes, chainValid: true,
				blocks: make([]Block, 0, n), arena: make([]byte, 0, total)}
			copy(w.prev[:], locker.GenesisHash)
			for i, p := range pages {
				if ve := w.page(p, ranges[i][0], ranges[i][1]); ve != nil {
					b.Fatal(ve)
				}
			}
			if w.blockErr != nil || !w.chainValid || string(w.prev[:]) != head {
				b.Fatal("chain did not verify")
			}
		}
	})
	sha := func() {
		h := sha256.New()
		for _, p := range payloads {
			h.Write(p)
		}
		h.Sum(nil)
	}
	// The ceiling for any HTTP read here: one loopback GET of the same bytes from memory,
	// hashed as they arrive (no chain, no checks, no daemon work), on a connection with
	// the client's receive buffer.
	b.Run("ceiling-get", func(b *testing.B) {
		body := bytes.Join(payloads, nil)
		url := lockertest.Serve(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = w.Write(body)
		}))
		buf := make([]byte, 32<<10)
		hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
		get := func() { getSHA256(b.Context(), b, hc, url, buf) }
		b.SetBytes(total)
		for b.Loop() {
			get()
		}
		benchratio.Report(b, benchratio.Compare(0, 0, sha, get), "x_sha256", true, total)
	})
	open := d.Pad(payloads, false)
	for _, tc := range []struct {
		name         string
		h            http.Handler
		json         bool
		pad          lockertest.Created
		kernelBuffer bool // a plain dialer: the kernel's own receive buffer, not ReceiveBuffer
	}{{"http-static-daemon", static(rec.pages), true, c, false}, {"http-lockerd-json", d.Handler, true, c, false}, {"http-lockerd", d.Handler, false, c, false},
		{"http-lockerd-kernel-buffer", d.Handler, false, c, true}, {"http-lockerd-open", d.Handler, false, open, false}} {
		b.Run(tc.name, func(b *testing.B) {
			client := serve(b, tc.h)
			if tc.kernelBuffer {
				client.hc = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}
			}
			read := func() {
				if tc.json {
					client.noWireUntil.Store(math.MaxInt64)
				}
				ch, err := client.Read(b.Context(), tc.pad.PadID, tc.pad.ReadTicket, ReadOptions{ExpectedHead: &head})
				if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
					b.Fatalf("read: %v", err)
				}
				ch.Release()
			}
			b.SetBytes(total)
			for b.Loop() {
				read()
			}
			benchratio.Report(b, benchratio.Compare(0, 0, sha, read), "x_sha256", true, total)
		})
	}
}

// memTransport answers every request with one binary answer from memory: a daemon and a
// network that cost nothing, to isolate the client's CPU.
type memTransport []byte

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {padwire.MediaType}},
		Body: io.NopCloser(bytes.NewReader(m)), ContentLength: int64(len(m)), Request: r}, nil
}

// BenchmarkReadClientCPU is the client's own work for a read of a sealed 256 KiB pad (4 ×
// 64 KiB) in the binary form, the answer served from memory by the transport:
//
//   - deadline: Client.Read as lockermcp runs it, each request bounded by its context.
//
//   - client-timeout: the same with the bound as http.Client.Timeout, which net/http serves
//     with a goroutine per request, woken when the body is closed (what the client did
//     before).
//
//   - get-sha256: http.Client.Get of the same bytes, hashed with SHA-256 as they are read
//     (no checks): the floor.
//
//     go test -run='^$' -bench=ReadClientCPU -benchmem ./internal/lockerclient/
func BenchmarkReadClientCPU(b *testing.B) {
	d := lockertest.New(b, lockertest.Options{})
	c, payloads := fullPad(b, d, 4)
	head := locker.ChainHead(payloads)
	body := memTransport(wireBody(b, d, c.PadID, c.ReadTicket))
	for _, name := range []string{"deadline", "client-timeout"} {
		b.Run(name, func(b *testing.B) {
			hc := &http.Client{Transport: body}
			if name == "client-timeout" {
				hc.Timeout = DefaultTimeout
			}
			client, err := New(Config{BaseURL: "http://127.0.0.1:1", HTTPClient: hc})
			if err != nil {
				b.Fatal(err)
			}
			if name == "deadline" {
				client.timeout = DefaultTimeout
			}
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				ch, err := client.Read(b.Context(), c.PadID, c.ReadTicket, ReadOptions{ExpectedHead: &head})
				if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
					b.Fatalf("read: %v", err)
				}
				ch.Release()
			}
		})
	}
	b.Run("get-sha256", func(b *testing.B) {
		hc := &http.Client{Transport: body}
		buf := make([]byte, 32<<10)
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			getSHA256(b.Context(), b, hc, "http://127.0.0.1:1/", buf)
		}
	})
}
