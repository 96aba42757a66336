package toolwarrant

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// litewitness is a real c2sp.org/tlog-witness implementation no one here wrote
// (filippo.io/torchwood/cmd/litewitness, pinned as a tool in go.mod), run on loopback
// with its key in a dedicated ssh-agent, as its README says.
type litewitness struct {
	url, vkey, db, witnessctl string
}

func startLitewitness(t *testing.T) *litewitness {
	t.Helper()
	dir := t.TempDir()
	goBin := testenv.LookPath(t, "go")
	build := exec.Command(goBin, "build", "-o", dir+string(os.PathSeparator), "filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build litewitness: %v\n%s", err, out)
	}
	sk := testenv.LookPath(t, "ssh-keygen")
	key := filepath.Join(dir, "witness")
	if out, err := exec.Command(sk, "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	fp, err := exec.Command(sk, "-l", "-E", "sha256", "-f", key+".pub").Output()
	if err != nil || len(strings.Fields(string(fp))) < 2 {
		t.Fatalf("ssh-keygen -l: %v %s", err, fp)
	}
	sock := filepath.Join(dir, "agent.sock")
	agent := exec.Command(testenv.LookPath(t, "ssh-agent"), "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	add := exec.Command(testenv.LookPath(t, "ssh-add"), key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	lw := &litewitness{db: filepath.Join(dir, "witness.db"), witnessctl: filepath.Join(dir, "witnessctl")}
	port := strconv.Itoa(testenv.FreePort(t))
	cmd := exec.Command(filepath.Join(dir, "litewitness"), "-db", lw.db, "-name", "witness.example/w1",
		"-key", strings.Fields(string(fp))[1], "-ssh-agent", sock, "-listen", "127.0.0.1:"+port)
	line := testenv.StartProcess(t, cmd, func(l string) bool { return strings.Contains(l, "vkey=") })
	_, v, _ := strings.Cut(line, "vkey=")
	lw.vkey = strings.Trim(strings.Fields(v)[0], `"`)
	lw.url = "http://127.0.0.1:" + port
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("litewitness is not listening on %s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return lw
}

func (lw *litewitness) addLog(t *testing.T, origin, vkey string) {
	t.Helper()
	for _, args := range [][]string{{"add-log", "-db", lw.db, "-origin", origin}, {"add-key", "-db", lw.db, "-origin", origin, "-key", vkey}} {
		if out, err := exec.Command(lw.witnessctl, args...).CombinedOutput(); err != nil {
			t.Fatalf("witnessctl %v: %v %s", args, err, out)
		}
	}
}

// twEnv is w.tw with extra environment (later values win).
func (w *world) twEnv(t *testing.T, env []string, args ...string) run {
	t.Helper()
	bin, _ := binaries(t)
	return twWith(t, bin, w.dir, env, args...)
}

// TestWitnessCosignsAndRefusesAFork: issue 18's third "done when", against litewitness.
func TestWitnessCosignsAndRefusesAFork(t *testing.T) {
	lw := startLitewitness(t)
	w := newWorld(t)
	const origin = "example.com/toolwarrant/witnessed"
	cps := filepath.Join(w.dir, "cps")
	if r := w.tw(t, "audit", "checkpoint", "--dir", cps, "--origin", origin); r.code != 0 {
		t.Fatalf("first checkpoint: %s", r)
	}
	vkey := strings.TrimSpace(w.tw(t, "audit", "key", "--checkpoint").stdout)
	lw.addLog(t, origin, vkey)

	// The witness has seen nothing: the client starts from the previous checkpoint (409),
	// then from the size the witness reports, and stores the cosignature beside the note.
	w.ingest(t, 3)
	r := w.tw(t, "audit", "checkpoint", "--dir", cps, "--witness", lw.url)
	if r.code != 0 || !strings.Contains(r.stdout, ".cosig: 1 cosignature") {
		t.Fatalf("checkpoint with a witness: %s", r)
	}
	head, _ := w.cat.AuditHead(t.Context())
	if r := w.verify(t, "--checkpoints", cps, "--witness-key", lw.vkey, "--quorum", "1"); r.code != 0 || !strings.Contains(r.stderr, "cosigned by witness.example/w1") {
		t.Errorf("verify with the witness's key, quorum 1: %s", r)
	}
	// The cosignature verifies with the witness's own key outside our code too: the note
	// and its .cosig lines open under the log key with sumdb/note, and the witness's line is
	// there under its name.
	nb, _ := os.ReadFile(filepath.Join(cps, strconv.FormatInt(head.Seq, 10)+".note"))
	cb, _ := os.ReadFile(filepath.Join(cps, strconv.FormatInt(head.Seq, 10)+".cosig"))
	lv, _ := note.NewVerifier(vkey)
	if n, err := note.Open(append(nb, cb...), note.VerifierList(lv)); err != nil || len(n.UnverifiedSigs) != 1 || n.UnverifiedSigs[0].Name != "witness.example/w1" {
		t.Errorf("note.Open of note + cosig: %+v, %v", n, err)
	}
	// A quorum of 2 of one witness's key cannot be met; a witness key that did not cosign
	// does not count.
	if r := w.verify(t, "--checkpoints", cps, "--witness-key", lw.vkey, "--quorum", "2"); r.code != 2 {
		t.Errorf("quorum 2 with one key: %s, want exit 2", r)
	}
	other := startLitewitness(t)
	if r := w.verify(t, "--checkpoints", cps, "--witness-key", other.vkey); r.code != 1 || !strings.Contains(r.stdout, "fewer than the quorum 1") {
		t.Errorf("verify with another witness's key: %s, want exit 1", r)
	}

	// A fork: someone holding the log key and the checkpoint key rewrites the newest entry,
	// re-signs it and checkpoints from a fresh machine. The witness has cosigned the
	// original tree: it refuses, and the refusal is reported with exit 1.
	forgeNewest(t, w, tamperable(t, w), 9)
	w.ingest(t, 2)
	key := filepath.Join(w.dir, "config", "logs")
	keys, _ := filepath.Glob(filepath.Join(key, "*", "checkpoint.key"))
	if len(keys) != 1 {
		t.Fatalf("checkpoint keys %v", keys)
	}
	r = w.twEnv(t, []string{"TOOLWARRANT_CONFIG_DIR=" + filepath.Join(w.dir, "elsewhere")}, "audit", "checkpoint",
		"--dir", filepath.Join(w.dir, "fork"), "--key", keys[0], "--origin", origin, "--witness", lw.url)
	if r.code != 1 || !strings.Contains(r.stderr, "not consistent with the one it cosigned") {
		t.Errorf("a forked checkpoint submitted to the witness: %s\nwant exit 1 and the witness's refusal", r)
	}
}
