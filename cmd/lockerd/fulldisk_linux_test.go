package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid (prlimit(2)) and returns the
// limit it replaced. Past it, the kernel refuses to grow any file the process writes
// (EFBIG), which is how a full disk looks to the daemon: its writes fail, its reads do not.
func setFileSizeLimit(t *testing.T, pid int, soft uint64) syscall.Rlimit {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Fatalf("prlimit: read RLIMIT_FSIZE of %d: %v", pid, e)
	}
	lim := syscall.Rlimit{Cur: soft, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit: set RLIMIT_FSIZE of %d to %d: %v", pid, soft, e)
	}
	return old
}

type healthAnswer struct {
	status int
	body   string
	Status string `json:"status"`
	DB     struct {
		Writable bool `json:"writable"`
	} `json:"database"`
	RPC struct {
		Reachable *bool `json:"reachable"`
	} `json:"rpc"`
}

func getHealth(t *testing.T, url string) healthAnswer {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := healthAnswer{status: resp.StatusCode, body: string(b)}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("/health body %q: %v", b, err)
	}
	return h
}

// TestHealthOnFullDisk runs the daemon, then stops its files from growing (RLIMIT_FSIZE at
// the write-ahead log's current size, set on the running process): an append is refused
// with 503 and /health says so (503, writable false) instead of reporting a writable store;
// the acknowledged blocks stay readable. Once the files may grow again, /health reports
// writable again by itself (its write probe commits) and appends are acknowledged.
func TestHealthOnFullDisk(t *testing.T) {
	bin, db := daemonTest(t, "builds a daemon and limits its file sizes")
	proc, url := startLockerd(t, bin, db)
	pad := createPad(t, url, `{}`)
	env := `{"schema":"locker.handoff.v1","task_id":"full","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	if _, ok, err := appendBlock(t.Context(), url, pad, env); !ok || err != nil {
		t.Fatalf("append before the disk filled: ok %v, %v", ok, err)
	}
	if h := getHealth(t, url); h.status != 200 || !h.DB.Writable {
		t.Fatalf("/health before the disk filled = %d %s", h.status, h.body)
	}
	// The first read opens the read_once ticket's lease, which is a write; later reads are not.
	if got := storedBlocks(t, url, pad); len(got) != 1 {
		t.Fatalf("blocks before the disk filled = %v", got)
	}

	wal, err := os.Stat(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	old := setFileSizeLimit(t, proc.Process.Pid, uint64(wal.Size()))
	big := strings.Repeat("x", locker.MaxBlockBytes)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/v1/pads/"+pad.PadID+"/append", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer "+pad.WriteKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("append on a full disk = %d, want 503", resp.StatusCode)
	}
	h := getHealth(t, url)
	if h.status != http.StatusServiceUnavailable || h.Status != "unavailable" || h.DB.Writable || h.RPC.Reachable != nil {
		t.Errorf("/health on a full disk = %d %s; want 503, status unavailable, writable false, rpc.reachable null", h.status, h.body)
	}
	if got := storedBlocks(t, url, pad); len(got) != 1 || got[0] != locker.NextHash(locker.GenesisHash, []byte(env)) {
		t.Errorf("blocks readable on a full disk = %v, want the acknowledged envelope", got)
	}

	setFileSizeLimit(t, proc.Process.Pid, old.Cur)
	deadline := time.Now().Add(10 * time.Second)
	for h = getHealth(t, url); h.status != 200 && time.Now().Before(deadline); h = getHealth(t, url) {
		time.Sleep(100 * time.Millisecond)
	}
	if h.status != 200 || !h.DB.Writable || h.Status != "ok" {
		t.Fatalf("/health once space is back = %d %s, want 200 writable (without any client write)", h.status, h.body)
	}
	if _, ok, err := appendBlock(t.Context(), url, pad, big); !ok || err != nil {
		t.Fatalf("append once space is back: ok %v, %v", ok, err)
	}
}
