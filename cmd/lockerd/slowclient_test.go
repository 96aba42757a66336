package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// startInProcess runs serve on a free loopback port with the given environment and returns
// its address; the daemon stops when the test ends.
func startInProcess(t *testing.T, env map[string]string) string {
	t.Helper()
	env["LOCKER_DB_PATH"] = filepath.Join(t.TempDir(), "locker.db")
	env["LOCKER_PORT"] = "0"
	env["LOCKER_LOG_LEVEL"] = "error"
	cfg, err := config.LoadLocker(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, cli.Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}, ready)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("lockerd did not stop within 20s")
		}
	})
	select {
	case addr := <-ready:
		return addr
	case err := <-done:
		t.Fatalf("lockerd did not start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("lockerd did not start within 20s")
	}
	return ""
}

// trickle opens a connection that announces a 60,000-byte body and then sends one byte every
// 200 ms (at most 100). It returns the connection and a channel closed when the server ends
// it (a read returns), with the moment it did.
func trickle(t *testing.T, addr string) (net.Conn, <-chan time.Time) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "POST /v1/pads HTTP/1.1\r\nHost: lockerd\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() {
		for range 100 {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	ended := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c) // until the server answers and closes, or resets
		close(stop)
		ended <- time.Now()
	}()
	return c, ended
}

// TestSlowBodyIsCutOff: a client that trickles a request body cannot hold its connection
// past LOCKER_READ_TIMEOUT (issue 20, item 13: before, it held it for as long as it kept
// sending).
func TestSlowBodyIsCutOff(t *testing.T) {
	addr := startInProcess(t, map[string]string{"LOCKER_READ_TIMEOUT": "1s"})
	start := time.Now()
	_, ended := trickle(t, addr)
	select {
	case at := <-ended:
		t.Logf("connection ended after %s", at.Sub(start).Round(10*time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("a trickled body kept its connection for 10s with LOCKER_READ_TIMEOUT=1s")
	}
	// An honest client is still served.
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health after the slow client: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestConnectionLimit: with LOCKER_MAX_CONNS=1, a held connection keeps the next client
// waiting in the accept queue rather than costing another descriptor; once it is gone the
// waiting request is served.
func TestConnectionLimit(t *testing.T) {
	addr := startInProcess(t, map[string]string{"LOCKER_READ_TIMEOUT": "30s", "LOCKER_MAX_CONNS": "1"})
	slow, ended := trickle(t, addr)
	client := &http.Client{Timeout: 700 * time.Millisecond}
	_, err := client.Get("http://" + addr + "/health")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a second client was served while the only slot was held: %v", err)
	}
	slow.Close()
	<-ended
	client.Timeout = 10 * time.Second
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health once the slot is free: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestLongHeadersRefused: request headers are bounded at 16 KiB (plus net/http's 4 KiB of
// slack), not Go's default 1 MB: an append whose Content-Type — stored verbatim, outside
// the pad's byte quota — is 30 KB long is refused with 431 and stores nothing; one of 8 KB
// is stored.
func TestLongHeadersRefused(t *testing.T) {
	addr := startInProcess(t, map[string]string{})
	base := "http://" + addr
	resp, err := http.Post(base+"/v1/pads", "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", resp, err)
	}
	var c struct {
		PadID    string `json:"pad_id"`
		WriteKey string `json:"write_key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	appendWith := func(ct string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/pads/"+c.PadID+"/append", strings.NewReader(`{"schema": "locker.handoff.v1", "task_id": "t", "from_agent": "a", "to_agent": "b", "constraints": [], "artifacts": [], "budget_usd": null}`))
		req.Header.Set("Authorization", "Bearer "+c.WriteKey)
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if got, _ := appendWith("application/json; x=" + strings.Repeat("a", 30_000)); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 30 KB Content-Type: %d, want 431", got)
	}
	if got, body := appendWith("application/json; x=" + strings.Repeat("a", 8_000)); got != 201 || !strings.Contains(body, `"seq": 0`) && !strings.Contains(body, `"seq":0`) {
		t.Fatalf("an 8 KB Content-Type: %d %s, want 201 at seq 0 (the refused append stored nothing)", got, body)
	}
}
