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

// daemonTest skips the test in -short mode (saying why: it builds and then kills or
// signals a daemon), builds lockerd, and returns it with a fresh store path.
func daemonTest(t *testing.T, why string) (bin, db string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	return buildLockerd(t), filepath.Join(t.TempDir(), "locker.db")
}

// padKeys are a new pad's id and credentials.
type padKeys struct{ PadID, WriteKey, ReadTicket string }

// createPad creates a pad with the JSON request body and returns its keys.
func createPad(t *testing.T, url, body string) padKeys {
	t.Helper()
	resp, err := http.Post(url+"/v1/pads", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]string
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	return padKeys{raw["pad_id"], raw["write_key"], raw["read_ticket"]}
}

// appendBlock appends payload to the pad. ok is whether the daemon acknowledged it (201
// with a readable ack); err is set when the request failed, i.e. the daemon is gone.
func appendBlock(ctx context.Context, url string, p padKeys, payload string) (a ack, ok bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/pads/"+p.PadID+"/append", strings.NewReader(payload))
	req.Header.Set("Authorization", "Bearer "+p.WriteKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ack{}, false, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		return ack{}, false, nil
	}
	ok = json.Unmarshal(body, &a) == nil
	return a, ok, nil
}

// killLockerd sends SIGKILL to the daemon and reaps it.
func killLockerd(t *testing.T, proc *exec.Cmd) {
	t.Helper()
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = proc.Process.Wait()
}

// storedBlocks reads every block of the pad (seq → curr_hash), 256 at a time, with its
// read ticket.
func storedBlocks(t *testing.T, url string, p padKeys) map[int]string {
	t.Helper()
	stored := map[int]string{}
	for from := 0; from < 5000; from += 256 {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/pads/%s/blocks?from=%d&to=%d", url, p.PadID, from, from+255), nil)
		req.Header.Set("Authorization", "Bearer "+p.ReadTicket)
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
	return stored
}

// TestCrashSafety appends in a loop, kills lockerd with SIGKILL while appends are in flight,
// restarts it on the same file, and finds every acknowledged block present and the store
// consistent (check-integrity exit 0).
func TestCrashSafety(t *testing.T) {
	bin, db := daemonTest(t, "builds and kills a daemon")
	proc, url := startLockerd(t, bin, db)
	pad := createPad(t, url, `{"max_blocks":4096}`)

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
				a, ok, err := appendBlock(ctx, url, pad, payload)
				if err != nil {
					return // the daemon is gone
				}
				if ok { // not ok: block 0 not yet there for this writer, or a quota
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
	killLockerd(t, proc)
	cancel()
	wg.Wait()
	if len(acks) == 0 {
		t.Fatal("no append was acknowledged before the kill")
	}

	_, url = startLockerd(t, bin, db)
	stored := storedBlocks(t, url, pad)
	for _, a := range acks {
		if stored[a.Seq] != a.CurrHash {
			t.Errorf("acknowledged block %d (%s) is missing after the crash", a.Seq, a.CurrHash)
		}
	}
	t.Logf("%d acknowledged before SIGKILL, %d stored after restart", len(acks), len(stored))

	if out, err := runCheck(t, bin, db); err != nil {
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
