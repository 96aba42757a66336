package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestCrashSafetyGroupedCommits kills lockerd with SIGKILL while 16 writers append to 16
// pads at once — so appends share grouped transactions (internal/sqlitestore's group
// commit) — restarts it on the same file, and finds every acknowledged block stored, three
// times over; check-integrity passes after each crash.
func TestCrashSafetyGroupedCommits(t *testing.T) {
	bin, db := daemonTest(t, "builds and kills a daemon")
	const writers = 16
	pads := make([]padKeys, writers)
	acks := make([]map[int]string, writers) // per pad: seq → curr_hash acknowledged
	for i := range acks {
		acks[i] = map[int]string{}
	}
	env := `{"schema":"locker.handoff.v1","task_id":"crash","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	for round := range 3 {
		proc, url := startLockerd(t, bin, db)
		if round == 0 {
			for i := range pads {
				pads[i] = createPad(t, url, `{"max_blocks":4096,"ttl_seconds":86400}`)
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
					a, ok, err := appendBlock(ctx, url, pads[w], payload)
					if err != nil {
						return // the daemon is gone
					}
					if ok {
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
		killLockerd(t, proc)
		cancel()
		wg.Wait()
		if total == 0 {
			t.Fatalf("round %d: nothing was acknowledged before the kill", round)
		}
		if out, err := runCheck(t, bin, db); err != nil {
			t.Fatalf("round %d: check-integrity after the crash: %v\n%s", round, err, out)
		}
		t.Logf("round %d: %d appends acknowledged before SIGKILL", round, total)
	}
	_, url := startLockerd(t, bin, db)
	lost := 0
	for w, p := range pads {
		stored := storedBlocks(t, url, p)
		for seq, h := range acks[w] {
			if stored[seq] != h {
				lost++
				t.Errorf("pad %d: acknowledged block %d (%s) is missing after the crashes", w, seq, h)
			}
		}
	}
	t.Logf("%d acknowledged blocks lost over 3 SIGKILLs of 16 writers", lost)
}
