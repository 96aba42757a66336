package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// zeros is an endless reader of 'a' bytes that allocates nothing per read.
type zeros struct{ left int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), z.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	z.left -= n
	return n, nil
}

// TestStreamedCapsBoundMemory sends 2 MiB chunked bodies (no Content-Length) to create and
// append over loopback: each is refused with 413 and the process allocates far less than the
// body while doing it.
func TestStreamedCapsBoundMemory(t *testing.T) {
	hs := newHarness(t)
	srv := httptest.NewServer(hs.h)
	defer srv.Close()
	c := hs.create(`{}`)
	client := srv.Client()
	send := func(path string, hdr http.Header) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+path, &zeros{left: 2 << 20})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1 // chunked: the server cannot know the size in advance
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	auth := http.Header{"Authorization": {"Bearer " + c.WriteKey}}
	// Warm up connections and code paths before measuring.
	send("/v1/pads", nil)
	send("/v1/pads/"+c.PadID+"/append", auth)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const rounds = 4
	for i := 0; i < rounds; i++ {
		if st, body := send("/v1/pads", nil); st != 413 || body != bodyJSONTooBig {
			t.Errorf("create with 2 MiB chunked body = %d %s", st, body)
		}
		if st, body := send("/v1/pads/"+c.PadID+"/append", auth); st != 413 || body != bodyBlockTooBig {
			t.Errorf("append with 2 MiB chunked body = %d %s", st, body)
		}
	}
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / (2 * rounds)
	t.Logf("allocated %d bytes per refused 2 MiB request (client and server together)", perRequest)
	if perRequest >= 1<<20 {
		t.Errorf("a refused 2 MiB body cost %d bytes of allocation; want < 1 MiB", perRequest)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow >= 1<<20 {
		t.Errorf("heap grew by %d bytes; want < 1 MiB", grow)
	}
	// Nothing was stored.
	if r := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil); !strings.Contains(r.body, `"block_count":0`) {
		t.Errorf("manifest after refused appends = %s", r.body)
	}
}

// TestConcurrentAppendsWithHealthPolling: 16 writers append to one pad while 4 goroutines
// poll /health for 3 seconds. Every acknowledgment must be in the stored chain, the chain
// must verify end to end, and no two acknowledgments may share a seq.
func TestConcurrentAppendsWithHealthPolling(t *testing.T) {
	if testing.Short() {
		t.Skip("3-second load test")
	}
	hs := newHarness(t)
	srv := httptest.NewServer(hs.h)
	defer srv.Close()
	c := hs.create(`{"max_blocks":4096}`)
	hs.mustAppend(c, envelope)
	client := srv.Client()
	deadline := time.Now().Add(3 * time.Second)
	var mu sync.Mutex
	acks := map[int]string{}
	var dup []string
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000 && time.Now().Before(deadline); i++ {
				payload := fmt.Sprintf("writer %02d block %05d", w, i)
				req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/pads/"+c.PadID+"/append", strings.NewReader(payload))
				req.Header.Set("Authorization", "Bearer "+c.WriteKey)
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 409 && strings.Contains(string(body), "quota") {
					return // the pad is full
				}
				if resp.StatusCode != 201 {
					t.Errorf("append = %d %s", resp.StatusCode, body)
					return
				}
				var ack struct {
					Seq      int    `json:"seq"`
					CurrHash string `json:"curr_hash"`
				}
				if err := json.Unmarshal(body, &ack); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if _, seen := acks[ack.Seq]; seen {
					dup = append(dup, fmt.Sprint(ack.Seq))
				}
				acks[ack.Seq] = ack.CurrHash
				mu.Unlock()
			}
		}()
	}
	polls := 0
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000000 && time.Now().Before(deadline); i++ {
				resp, err := client.Get(srv.URL + "/health")
				if err != nil {
					t.Errorf("health: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("health = %d", resp.StatusCode)
				}
				mu.Lock()
				polls++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(dup) > 0 {
		t.Fatalf("acknowledgments share seqs: %v", dup)
	}
	blocks := hs.readAll(c)
	t.Logf("%d acknowledged appends, %d health polls, %d blocks stored", len(acks), polls, len(blocks))
	if len(acks) < 16 {
		t.Fatalf("only %d appends acknowledged", len(acks))
	}
	for seq, h := range acks {
		if seq >= len(blocks) || blocks[seq].CurrHash != h {
			t.Errorf("acknowledged block %d (%s) is not stored", seq, h)
		}
	}
	if problems := locker.Audit(locker.Pad{HeadHash: blocks[len(blocks)-1].CurrHash, BlockCount: len(blocks), TotalBytes: totalBytes(blocks)}, blocks); problems != nil {
		t.Errorf("stored chain does not verify: %v", problems)
	}
}

func totalBytes(blocks []locker.Block) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Payload)
	}
	return n
}

// readAll reads a pad's whole chain through the API, page by page.
func (hs *harness) readAll(c created) []locker.Block {
	hs.t.Helper()
	var out []locker.Block
	for from := 0; from < 1<<20; {
		r := hs.do("GET", fmt.Sprintf("/v1/pads/%s/blocks?from=%d&to=%d", c.PadID, from, from+255), nil, "Authorization: Bearer "+c.ReadTicket)
		if r.status == 413 {
			hs.t.Fatalf("page too large")
		}
		var page struct {
			Count  int `json:"count"`
			Blocks []struct {
				Seq        int    `json:"seq"`
				PrevHash   string `json:"prev_hash"`
				CurrHash   string `json:"curr_hash"`
				PayloadB64 []byte `json:"payload_b64"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal([]byte(r.body), &page); err != nil {
			hs.t.Fatal(err)
		}
		if page.Count == 0 {
			break
		}
		for _, b := range page.Blocks {
			out = append(out, locker.Block{Seq: b.Seq, PrevHash: b.PrevHash, CurrHash: b.CurrHash, Payload: bytes.Clone(b.PayloadB64)})
		}
		from += page.Count
	}
	return out
}
