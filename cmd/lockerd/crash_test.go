package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var servingRE = regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)`)

// buildLockerd builds the daemon once for a test.
func buildLockerd(t *testing.T) string { return testenv.BuildCommand(t, "./cmd/lockerd") }

// startLockerd starts the daemon on a free loopback port and returns it and its URL; it is
// killed by PID when the test ends.
func startLockerd(t *testing.T, bin, db string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "--port", "0", "--db", db)
	cmd.Env = append(os.Environ(), "LOCKER_LOG_LEVEL=warn")
	line := testenv.StartProcess(t, cmd, servingRE.MatchString)
	return cmd, servingRE.FindStringSubmatch(line)[1]
}

type ack struct {
	Seq      int    `json:"seq"`
	CurrHash string `json:"curr_hash"`
}

// TestCrashSafety appends in a loop, kills lockerd with SIGKILL while appends are in flight,
// restarts it on the same file, and finds every acknowledged block present and the store
// consistent (check-integrity exit 0).
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a daemon")
	}
	bin := buildLockerd(t)
	db := filepath.Join(t.TempDir(), "locker.db")
	proc, url := startLockerd(t, bin, db)

	resp, err := http.Post(url+"/v1/pads", "application/json", strings.NewReader(`{"max_blocks":4096}`))
	if err != nil {
		t.Fatal(err)
	}
	var pad struct{ PadID, WriteKey, ReadTicket string }
	var raw map[string]string
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	pad.PadID, pad.WriteKey, pad.ReadTicket = raw["pad_id"], raw["write_key"], raw["read_ticket"]

	var mu sync.Mutex
	var acks []ack
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4000 && ctx.Err() == nil; i++ {
				payload := fmt.Sprintf("writer %d block %d", w, i)
				mu.Lock()
				if len(acks) == 0 && w == 0 && i == 0 {
					payload = `{"schema":"locker.handoff.v1","task_id":"crash","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
				}
				mu.Unlock()
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/pads/"+pad.PadID+"/append", strings.NewReader(payload))
				req.Header.Set("Authorization", "Bearer "+pad.WriteKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the daemon is gone
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					continue // block 0 not yet there for this writer, or a quota
				}
				var a ack
				if json.Unmarshal(body, &a) == nil {
					mu.Lock()
					acks = append(acks, a)
					mu.Unlock()
				}
			}
		}()
	}
	// Let appends flow, then kill the daemon mid-stream.
	for i := 0; i < 200; i++ {
		time.Sleep(25 * time.Millisecond)
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 150 {
			break
		}
	}
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = proc.Process.Wait()
	cancel()
	wg.Wait()
	if len(acks) == 0 {
		t.Fatal("no append was acknowledged before the kill")
	}

	_, url = startLockerd(t, bin, db)
	stored := map[int]string{}
	for from := 0; from < 5000; from += 256 {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/pads/%s/blocks?from=%d&to=%d", url, pad.PadID, from, from+255), nil)
		req.Header.Set("Authorization", "Bearer "+pad.ReadTicket)
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
	for _, a := range acks {
		if stored[a.Seq] != a.CurrHash {
			t.Errorf("acknowledged block %d (%s) is missing after the crash", a.Seq, a.CurrHash)
		}
	}
	t.Logf("%d acknowledged before SIGKILL, %d stored after restart", len(acks), len(stored))

	out, err := exec.CommandContext(t.Context(), bin, "check-integrity", db).CombinedOutput()
	if err != nil {
		t.Errorf("check-integrity after crash: %v\n%s", err, out)
	}
}

// TestCheckIntegrityExitCodes covers 0 (consistent), 1 (tampered) and 2 (unreadable).
func TestCheckIntegrityExitCodes(t *testing.T) {
	bin := buildLockerd(t)
	db := filepath.Join(t.TempDir(), "locker.db")
	proc, url := startLockerd(t, bin, db)
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proc.Process.Signal(syscall.SIGTERM)
	proc.Process.Wait()

	code := func(args ...string) (int, string) {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if c, out := code("check-integrity", db, "--json"); c != 0 || !strings.Contains(out, `"consistent": true`) {
		t.Errorf("check-integrity on a fresh store = %d\n%s", c, out)
	}
	if c, out := code("check-integrity", filepath.Join(t.TempDir(), "missing.db")); c != 2 {
		t.Errorf("check-integrity on a missing file = %d\n%s", c, out)
	}
	tamper(t, db)
	if c, out := code("check-integrity", db); c != 1 || !strings.Contains(out, "PROBLEMS  demo-pad-v1") {
		t.Errorf("check-integrity on a tampered store = %d\n%s", c, out)
	}
}
