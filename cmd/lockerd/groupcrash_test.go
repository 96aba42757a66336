package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCrashSafetyGroupedCommits kills lockerd with SIGKILL while 16 writers append to 16
// pads at once — so appends share grouped transactions (internal/sqlitestore's group
// commit) — restarts it on the same file, and finds every acknowledged block stored, three
// times over; check-integrity passes after each crash.
func TestCrashSafetyGroupedCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a daemon")
	}
	bin := buildLockerd(t)
	db := filepath.Join(t.TempDir(), "locker.db")
	const writers = 16
	type padRef struct{ id, key, ticket string }
	pads := make([]padRef, writers)
	acks := make([]map[int]string, writers) // per pad: seq → curr_hash acknowledged
	for i := range acks {
		acks[i] = map[int]string{}
	}
	env := `{"schema":"locker.handoff.v1","task_id":"crash","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	for round := range 3 {
		proc, url := startLockerd(t, bin, db)
		if round == 0 {
			for i := range pads {
				resp, err := http.Post(url+"/v1/pads", "application/json", strings.NewReader(`{"max_blocks":4096,"ttl_seconds":86400}`))
				if err != nil {
					t.Fatal(err)
				}
				var raw map[string]string
				json.NewDecoder(resp.Body).Decode(&raw)
				resp.Body.Close()
				pads[i] = padRef{raw["pad_id"], raw["write_key"], raw["read_ticket"]}
			}
		}
		var mu sync.Mutex
		total := 0
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000 && ctx.Err() == nil; i++ {
					payload := fmt.Sprintf("round %d writer %d block %d", round, w, i)
					mu.Lock()
					if len(acks[w]) == 0 {
						payload = env
					}
					mu.Unlock()
					req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/pads/"+pads[w].id+"/append", strings.NewReader(payload))
					req.Header.Set("Authorization", "Bearer "+pads[w].key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						return // the daemon is gone
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 201 {
						continue
					}
					var a ack
					if json.Unmarshal(body, &a) == nil {
						mu.Lock()
						acks[w][a.Seq] = a.CurrHash
						total++
						mu.Unlock()
					}
				}
			}()
		}
		for range 400 {
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			n := total
			mu.Unlock()
			if n >= 300 {
				break
			}
		}
		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = proc.Process.Wait()
		cancel()
		wg.Wait()
		if total == 0 {
			t.Fatalf("round %d: nothing was acknowledged before the kill", round)
		}
		out, err := exec.CommandContext(t.Context(), bin, "check-integrity", db).CombinedOutput()
		if err != nil {
			t.Fatalf("round %d: check-integrity after the crash: %v\n%s", round, err, out)
		}
		t.Logf("round %d: %d appends acknowledged before SIGKILL", round, total)
	}
	_, url := startLockerd(t, bin, db)
	lost := 0
	for w, p := range pads {
		stored := map[int]string{}
		for from := 0; from < 5000; from += 256 {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/pads/%s/blocks?from=%d&to=%d", url, p.id, from, from+255), nil)
			req.Header.Set("Authorization", "Bearer "+p.ticket)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Blocks []ack `json:"blocks"`
			}
			json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if len(page.Blocks) == 0 {
				break
			}
			for _, b := range page.Blocks {
				stored[b.Seq] = b.CurrHash
			}
		}
		for seq, h := range acks[w] {
			if stored[seq] != h {
				lost++
				t.Errorf("pad %d: acknowledged block %d (%s) is missing after the crashes", w, seq, h)
			}
		}
	}
	t.Logf("%d acknowledged blocks lost over 3 SIGKILLs of 16 writers", lost)
}
