package main

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdownFinishesInFlight starts an append whose body is still arriving, sends
// SIGTERM, then sends the rest: the request completes with 201, the block is stored, and the
// daemon exits 0 without accepting new work.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	bin, db := daemonTest(t, "builds and signals a daemon")
	proc, url := startLockerd(t, bin, db)
	pad := createPad(t, url, `{}`)

	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/v1/pads/"+pad.PadID+"/append", pr)
	req.Header.Set("Authorization", "Bearer "+pad.WriteKey)
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode, body: string(b)}
	}()
	env := `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	if _, err := pw.Write([]byte(env[:40])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the request is now in flight, its body half sent
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := pw.Write([]byte(env[40:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case r := <-done:
		if r.err != nil || r.status != 201 || !strings.Contains(r.body, `"seq":0`) {
			t.Fatalf("in-flight append across SIGTERM = %d %s %v", r.status, r.body, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the in-flight append did not finish")
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("lockerd exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("lockerd did not exit after SIGTERM")
	}
	out, err := runCheck(t, bin, db)
	if err != nil || !strings.Contains(out, "1 blocks") {
		t.Errorf("after shutdown: %v\n%s", err, out)
	}
}

func runCheck(t *testing.T, bin, db string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "check-integrity", db).CombinedOutput()
	return string(out), err
}
