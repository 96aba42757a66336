package containers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/lockerclient"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestLockerdImage runs the lockerd image as the task definition and compose file do — as
// uid 65532, root file system read-only, every capability dropped, the SQLite file on a
// named /data volume, published on 127.0.0.1 only — and checks: /health and the demo pad
// answer; a pad written before `podman stop`, with an append in flight when SIGTERM
// arrives, is whole after `podman start` (that append acknowledged and stored, the chain
// verifying against the head the writer holds); `lockerd check-integrity` from the same
// image passes against the volume, mounted read-only.
func TestLockerdImage(t *testing.T) {
	b := images(t)
	img := b.images["lockerd"]
	if img.User != "65532:65532" || !slices.Equal(img.Volumes, []string{"/data"}) || img.Architecture != b.arch {
		t.Errorf("image config: user %q, volumes %v, architecture %s", img.User, img.Volumes, img.Architecture)
	}
	if d := img.Files["/data"]; !d.Dir || d.UID != 65532 || d.GID != 65532 {
		t.Errorf("/data in the image = %+v, want a directory of 65532:65532 (a new volume takes its owner)", d)
	}
	if f := img.Files["/usr/local/bin/lockerd"]; f.SHA256 != b.binaries["lockerd"] || f.UID != 0 || f.Mode&0o022 != 0 {
		t.Errorf("/usr/local/bin/lockerd = %+v: want the built binary, owned by root, writable by no one else", f)
	}
	if _, ok := img.Files["/bin/sh"]; ok {
		t.Error("the image has a shell")
	}

	vol := b.volume(t, fmt.Sprintf("lockerd-data-%d", time.Now().UnixNano()))
	port := testenv.FreePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	start := time.Now()
	id := b.run(t, "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--publish", "127.0.0.1:"+strconv.Itoa(port)+":8000", "--volume", vol+":/data", lockerdImage)
	health := waitHTTP(t, base+"/health", 30*time.Second)
	firstHealthy := time.Since(start)
	var h struct {
		Status   string `json:"status"`
		Database struct {
			Writable bool `json:"writable"`
			WAL      bool `json:"wal_mode"`
		} `json:"database"`
	}
	if err := json.Unmarshal([]byte(health), &h); err != nil || h.Status != "ok" || !h.Database.Writable || !h.Database.WAL {
		t.Fatalf("/health = %s", health)
	}
	pid := b.pid(t, id)
	if uid, gid := processUser(t, pid); uid != "65532" || gid != "65532" {
		t.Errorf("the daemon runs as uid %s gid %s, want 65532", uid, gid)
	}
	if !rootReadOnly(t, pid) {
		t.Error("the container's root file system is writable")
	}

	ctx := t.Context()
	client, err := lockerclient.New(lockerclient.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	demo, err := client.Read(ctx, "demo-pad-v1", "", lockerclient.ReadOptions{})
	if err != nil || len(demo.Blocks) == 0 {
		t.Fatalf("demo pad: %v", err)
	}

	// A pad with an envelope and two artifacts.
	raw, err := client.Create(ctx, lockerclient.CreateRequest{TTLSeconds: 3600, MaxBlocks: 16})
	if err != nil {
		t.Fatal(err)
	}
	var pad struct {
		PadID      string `json:"pad_id"`
		WriteKey   string `json:"write_key"`
		ReadTicket string `json:"read_ticket"`
	}
	if err := json.Unmarshal(raw, &pad); err != nil {
		t.Fatal(err)
	}
	envelope := `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	for _, p := range []string{envelope, "artifact one", "artifact two"} {
		ct := "text/plain"
		if p == envelope {
			ct = "application/json"
		}
		if _, err := client.Append(ctx, pad.PadID, pad.WriteKey, ct, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}

	// An append whose body is still arriving when `podman stop` sends SIGTERM.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/pads/"+pad.PadID+"/append", pr)
	req.Header.Set("Authorization", "Bearer "+pad.WriteKey)
	req.Header.Set("Content-Type", "text/plain")
	type result struct {
		status int
		body   string
		err    error
	}
	appended := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			appended <- result{err: err}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		appended <- result{status: resp.StatusCode, body: string(body)}
	}()
	last := "the last artifact, in flight across SIGTERM"
	if _, err := pw.Write([]byte(last[:10])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the request is in flight, its body half sent
	stopped := make(chan error, 1)
	stopStart := time.Now()
	go func() {
		_, err := b.p.Run(ctx, "stop", "--time", "30", id)
		stopped <- err
	}()
	waitLog(t, b, id, "shutting down", 10*time.Second)
	if _, err := pw.Write([]byte(last[10:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var ack struct {
		Seq      int    `json:"seq"`
		CurrHash string `json:"curr_hash"`
	}
	select {
	case r := <-appended:
		if r.err != nil || r.status != http.StatusCreated || json.Unmarshal([]byte(r.body), &ack) != nil || ack.Seq != 3 {
			t.Fatalf("append in flight across SIGTERM = %d %s %v", r.status, r.body, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the in-flight append did not finish")
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	stopTook := time.Since(stopStart)
	if code := b.podman(t, "inspect", "--format", "{{.State.ExitCode}}", id); code != "0" {
		t.Errorf("lockerd exit code after SIGTERM: %s, want 0", code)
	}
	if stopTook > 25*time.Second {
		t.Errorf("podman stop took %s: the daemon did not exit on SIGTERM", stopTook)
	}

	start = time.Now()
	b.podman(t, "start", id)
	waitHTTP(t, base+"/health", 30*time.Second)
	restartHealthy := time.Since(start)
	chain, err := client.Read(ctx, pad.PadID, pad.ReadTicket, lockerclient.ReadOptions{ExpectedHead: &ack.CurrHash})
	if err != nil {
		t.Fatalf("read the pad after podman start: %v", err)
	}
	if len(chain.Blocks) != 4 || chain.Integrity.Verdict != lockerclient.VerdictTrustedHeadMatch {
		t.Fatalf("after restart: %d blocks, verdict %s; want 4 and trusted_head_match", len(chain.Blocks), chain.Integrity.Verdict)
	}
	if text, _ := chain.Blocks[3].Text(); text != last {
		t.Errorf("block 3 = %q, want the in-flight append", text)
	}
	b.podman(t, "stop", "--time", "30", id)

	// check-integrity from the same image, the volume read-only.
	check := b.p.Command(ctx, "run", "--rm", "--read-only", "--cap-drop", "ALL", "--network", "none",
		"--volume", vol+":/data:ro", lockerdImage, "check-integrity", "/data/locker.db", "--json")
	out, err := check.Output()
	var rep struct {
		PadsChecked int  `json:"pads_checked"`
		Problems    int  `json:"pads_with_problems"`
		Consistent  bool `json:"consistent"`
	}
	if err != nil || json.Unmarshal(out, &rep) != nil || !rep.Consistent || rep.Problems != 0 || rep.PadsChecked != 2 {
		t.Fatalf("check-integrity in the image: %v\n%s", err, out)
	}

	t.Logf("figures: lockerd image %s in the store, %s compressed layers; run to first healthy /health %s; start of the stopped container to healthy %s; podman stop (SIGTERM, in-flight append finished) %s",
		mib(b.imageSize(t, lockerdImage)), mib(img.LayerBytes), firstHealthy.Round(time.Millisecond),
		restartHealthy.Round(time.Millisecond), stopTook.Round(time.Millisecond))
}

// waitLog waits until the container's log contains s.
func waitLog(t *testing.T, b *built, id, s string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, _ := b.p.Command(t.Context(), "logs", id).CombinedOutput()
		if strings.Contains(string(out), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %.12s did not log %q within %s:\n%s", id, s, limit, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
