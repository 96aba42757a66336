package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// fullPad creates a pad holding exactly 256 KiB of payload in n equal blocks (block 0 an
// envelope padded with spaces), so reading it takes four 64 KiB pages.
func fullPad(b *testing.B, hs *harness, n int) (created, [][]byte) {
	b.Helper()
	size := locker.MaxPadBytes / n
	c := hs.create(fmt.Sprintf(`{"max_blocks":%d}`, n))
	env := envelope + strings.Repeat(" ", size-len(envelope))
	payloads := [][]byte{[]byte(env)}
	hs.mustAppend(c, env)
	for i := 1; i < n; i++ {
		p := []byte(fmt.Sprintf("%-*d", size, i))
		payloads = append(payloads, p)
		hs.mustAppend(c, string(p))
	}
	return c, payloads
}

type benchPage struct {
	Count       int `json:"count"`
	TotalBlocks int `json:"total_blocks"`
	Blocks      []struct {
		Seq        int    `json:"seq"`
		PrevHash   string `json:"prev_hash"`
		CurrHash   string `json:"curr_hash"`
		PayloadB64 string `json:"payload_b64"`
	} `json:"blocks"`
}

// BenchmarkReadVerify256KiB compares verifying a full 256 KiB pad with raw SHA-256 over the
// same bytes, for two shapes: 4 blocks of 64 KiB and 256 blocks of 1 KiB. The figure to quote
// is the ratio of MB/s: in-memory chain walk vs raw, and GET /blocks over loopback + JSON and
// base64 decode + chain walk vs raw. (Each block hashes its 64-byte prev_hash too, so with
// 1 KiB blocks the chain does 18 SHA-256 compressions where raw hashing does 16: 0.89 is the
// ceiling for that shape.)
//
//	go test -run='^$' -bench=ReadVerify -benchmem ./internal/httpapi/
func BenchmarkReadVerify256KiB(b *testing.B) {
	for _, n := range []int{4, 256} {
		b.Run(fmt.Sprintf("%dblocks", n), func(b *testing.B) { benchReadVerify(b, n) })
	}
}

func benchReadVerify(b *testing.B, n int) {
	hs := newHarness(b)
	c, payloads := fullPad(b, hs, n)
	total := int64(0)
	for _, p := range payloads {
		total += int64(len(p))
	}
	head := locker.ChainHead(payloads)

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
	b.Run("chain-walk-in-memory", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			if locker.ChainHead(payloads) != head {
				b.Fatal("head mismatch")
			}
		}
	})
	srv := httptest.NewServer(hs.h)
	defer srv.Close()
	client := srv.Client()
	b.Run("http-read-verify", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			prev := locker.GenesisHash
			for from := 0; from < n; {
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/pads/%s/blocks?from=%d&to=%d", srv.URL, c.PadID, from, from+n/4-1), nil)
				req.Header.Set("Authorization", "Bearer "+c.ReadTicket)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var page benchPage
				err = json.NewDecoder(resp.Body).Decode(&page)
				resp.Body.Close()
				if err != nil || page.Count == 0 {
					b.Fatalf("page: %v", err)
				}
				for _, blk := range page.Blocks {
					p, err := base64.StdEncoding.DecodeString(blk.PayloadB64)
					if err != nil || blk.PrevHash != prev || locker.NextHash(prev, p) != blk.CurrHash {
						b.Fatal("chain broken")
					}
					prev = blk.CurrHash
				}
				from += page.Count
			}
			if prev != head {
				b.Fatal("head mismatch")
			}
		}
	})
}

// discardWriter is a ResponseWriter that keeps the headers and drops the body.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkBlocksWireHandler is the daemon's own work for lockermcp's read of a sealed
// 256 KiB pad (the binary form, answered from the cache): routing, the ticket and pad, the
// checks, the headers; no network. "remembered" is a repeat read with a ticket that read
// the pad before (locker's read cache answers for the pad and ticket); "store" reads them
// from SQLite every time (the cache off), as a ticket's first read does. The request's
// context is cancellable, as every request's is under net/http (the store's reads run
// without its cancellation: see sqlitestore's quick).
//
//	go test -run='^$' -bench=BlocksWireHandler -benchmem ./internal/httpapi/
func BenchmarkBlocksWireHandler(b *testing.B) {
	for _, tc := range []struct {
		name    string
		entries int
	}{{"remembered", 0}, {"store", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			hs := newHarnessWith(b, locker.Config{ReadCacheEntries: tc.entries})
			c, _ := fullPad(b, hs, 4)
			hs.seal(c)
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, "GET", "/v1/pads/"+c.PadID+"/blocks?from=0&to=4095", nil)
			req.Header.Set("Accept", padwire.MediaType)
			req.Header.Set("Authorization", "Bearer "+c.ReadTicket)
			w := &discardWriter{h: http.Header{}}
			for b.Loop() {
				clear(w.h)
				hs.h.ServeHTTP(w, req)
				if w.h.Get("Content-Type") != padwire.MediaType {
					b.Fatalf("not a binary answer: %v", w.h)
				}
			}
		})
	}
}
