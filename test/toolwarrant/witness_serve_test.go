package toolwarrant

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// ownWitness is a `toolwarrant witness serve` process on loopback.
type ownWitness struct {
	url, vkey string
	cmd       *exec.Cmd
}

// startOwnWitness makes a witness named name in a directory of its own (witness init),
// tells it the logs (witness add-log ORIGIN VKEY…) and starts witness serve; the process
// is stopped by its PID when the test ends.
func startOwnWitness(t *testing.T, name string, logs map[string]string) *ownWitness {
	t.Helper()
	bin, _ := binaries(t)
	dir := t.TempDir()
	key, state := filepath.Join(dir, "witness.key"), filepath.Join(dir, "state.json")
	r := tw(t, bin, dir, "witness", "init", "--name", name, "--key", key, "--state", state)
	if r.code != 0 || !strings.HasPrefix(r.stdout, name+"+") {
		t.Fatalf("witness init: %s", r)
	}
	w := &ownWitness{vkey: strings.TrimSpace(r.stdout)}
	for origin, vkey := range logs {
		if r := tw(t, bin, dir, "witness", "add-log", "--state", state, "--origin", origin, "--vkey", vkey); r.code != 0 {
			t.Fatalf("witness add-log: %s", r)
		}
	}
	w.cmd = exec.Command(bin, "witness", "serve", "--key", key, "--state", state)
	w.cmd.Env = append(os.Environ(), "TOOLWARRANT_CONFIG_DIR="+filepath.Join(dir, "config"))
	line := testenv.StartProcess(t, w.cmd, func(l string) bool { return strings.Contains(l, "serving c2sp.org/tlog-witness at ") })
	_, rest, _ := strings.Cut(line, " at ")
	w.url = strings.Fields(rest)[0]
	if !strings.HasPrefix(w.url, "http://127.0.0.1:") {
		t.Fatalf("witness serve listens on %q, want loopback", w.url)
	}
	return w
}

// team is one toolwarrant catalog of its own (toolwarrant init) and its checkpoint dir.
type team struct {
	dir, origin, vkey, key string
}

func newTeam(t *testing.T, origin string) *team {
	t.Helper()
	bin, _ := binaries(t)
	tm := &team{dir: t.TempDir(), origin: origin}
	if r := tw(t, bin, tm.dir, "init"); r.code != 0 {
		t.Fatalf("init: %s", r)
	}
	tm.grow(t, "s", 2)
	if r := tm.tw(t, "audit", "checkpoint", "--dir", tm.cps(), "--origin", origin); r.code != 0 {
		t.Fatalf("first checkpoint: %s", r)
	}
	tm.vkey = strings.TrimSpace(tm.tw(t, "audit", "key", "--checkpoint").stdout)
	keys, _ := filepath.Glob(filepath.Join(tm.dir, "config", "logs", "*", "checkpoint.key"))
	if len(keys) != 1 || !strings.HasPrefix(tm.vkey, origin+"+") {
		t.Fatalf("checkpoint keys %v, vkey %q", keys, tm.vkey)
	}
	tm.key = keys[0]
	return tm
}

func (tm *team) tw(t *testing.T, args ...string) run {
	t.Helper()
	bin, _ := binaries(t)
	return tw(t, bin, tm.dir, args...)
}

func (tm *team) cps() string { return filepath.Join(tm.dir, "cps") }

// grow adds n servers named prefix1…prefixN: n audit entries.
func (tm *team) grow(t *testing.T, prefix string, n int) {
	t.Helper()
	for i := range n {
		name := prefix + strconv.Itoa(i+1)
		if r := tm.tw(t, "server", "add", name, "https://"+name+".example.com/mcp"); r.code != 0 {
			t.Fatalf("server add: %s", r)
		}
	}
}

// copyCatalog copies tm's catalog and log key (its state at this size) to a new
// directory: another copy of the same log, to fork or roll back.
func (tm *team) copyCatalog(t *testing.T) *team {
	t.Helper()
	c := &team{dir: t.TempDir(), origin: tm.origin, vkey: tm.vkey, key: tm.key}
	for _, f := range []string{"toolwarrant.db", "toolwarrant.db-wal", "toolwarrant.db-shm", "toolwarrant.db.logkey"} {
		b, err := os.ReadFile(filepath.Join(tm.dir, f))
		if os.IsNotExist(err) && f != "toolwarrant.db" && f != "toolwarrant.db.logkey" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// size is the newest checkpoint's size in tm's checkpoint dir.
func (tm *team) size(t *testing.T) int64 {
	t.Helper()
	var n int64
	ents, _ := os.ReadDir(tm.cps())
	for _, e := range ents {
		if s, kind, ok := checkpoint.SizeOf(e.Name()); ok && kind == checkpoint.NoteSuffix && s > n {
			n = s
		}
	}
	return n
}

// cosigned opens tm's newest note with its .cosig lines using sumdb/note alone, with the
// log's key and the witnesses' cosignature/v1 keys (checkpoint.WitnessVerifier), and
// returns the names that signed it.
func (tm *team) cosigned(t *testing.T, witnessKeys ...string) []string {
	t.Helper()
	n := tm.size(t)
	nb, err := os.ReadFile(filepath.Join(tm.cps(), strconv.FormatInt(n, 10)+".note"))
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := os.ReadFile(filepath.Join(tm.cps(), strconv.FormatInt(n, 10)+".cosig"))
	lv, err := note.NewVerifier(tm.vkey)
	if err != nil {
		t.Fatal(err)
	}
	vs := []note.Verifier{lv}
	for _, k := range witnessKeys {
		v, err := checkpoint.WitnessVerifier(k)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	opened, err := note.Open(append(nb, cb...), note.VerifierList(vs...))
	if err != nil {
		t.Fatalf("note.Open of checkpoint %d and its cosignatures: %v", n, err)
	}
	var names []string
	for _, s := range opened.Sigs {
		names = append(names, s.Name)
	}
	return names
}

func writePolicy(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolwarrant.policy")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOwnWitnessTwoLogs: issue 33 items 2 and 3. Two teams' catalogs (toolwarrant init
// each) submit their checkpoints to the same two `toolwarrant witness serve` processes
// and to litewitness; every cosignature opens with sumdb/note. A policy of 2 of 2 fails
// when one witness cosigned and 1 of 2 passes. A fork (the same size, another root) and a
// rollback (a smaller size) of team A's log, signed with its checkpoint key, are refused
// by the witnesses and by `audit verify --policy`.
func TestOwnWitnessTwoLogs(t *testing.T) {
	a := newTeam(t, "example.com/team-a/toolwarrant")
	b := newTeam(t, "example.com/team-b/toolwarrant")
	logs := map[string]string{a.origin: a.vkey, b.origin: b.vkey}
	w1 := startOwnWitness(t, "witness.example/team-a", logs)
	w2 := startOwnWitness(t, "witness.example/team-b", logs)
	lw := startLitewitness(t)
	lw.addLog(t, a.origin, a.vkey)

	// Both logs, both witnesses; team A also litewitness.
	a.grow(t, "more", 2)
	b.grow(t, "more", 3)
	for _, tm := range []*team{a, b} {
		args := []string{"audit", "checkpoint", "--dir", tm.cps(), "--witness", w1.url, "--witness", w2.url}
		want := ".cosig: 2 cosignatures"
		if tm == a {
			args, want = append(args, "--witness", lw.url), ".cosig: 3 cosignatures"
		}
		if r := tm.tw(t, args...); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("%s: checkpoint with the witnesses: %s", tm.origin, r)
		}
	}
	if got := strings.Join(a.cosigned(t, w1.vkey, w2.vkey, lw.vkey), " "); got != a.origin+" witness.example/team-a witness.example/team-b witness.example/w1" {
		t.Errorf("team A's checkpoint opened with signatures by %s", got)
	}
	if got := strings.Join(b.cosigned(t, w1.vkey, w2.vkey), " "); got != b.origin+" witness.example/team-b witness.example/team-a" && got != b.origin+" witness.example/team-a witness.example/team-b" {
		t.Errorf("team B's checkpoint opened with signatures by %s", got)
	}
	// Our cosignature line has litewitness's form: key hash, 8-byte timestamp, signature.
	cb, _ := os.ReadFile(filepath.Join(a.cps(), strconv.FormatInt(a.size(t), 10)+".cosig"))
	for _, l := range strings.Split(strings.TrimSpace(string(cb)), "\n") {
		f := strings.Fields(l)
		raw, err := base64.StdEncoding.DecodeString(f[len(f)-1])
		if err != nil || len(raw) != 4+8+64 {
			t.Errorf("cosignature line %q: %d bytes, %v; want 76 (cosignature/v1)", l, len(raw), err)
		}
	}

	// Verifier policies: 2 of 2 and 1 of 2, with the tlog-policy file of items 3.
	both := writePolicy(t, "# team A's log, witnessed by both teams", "log "+a.vkey, "witness A "+w1.vkey+" "+w1.url, "witness B "+w2.vkey, "group both all A B", "quorum both")
	either := writePolicy(t, "log "+a.vkey, "witness A "+w1.vkey, "witness B "+w2.vkey, "group either 1 A B", "quorum either")
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", both); r.code != 0 || !strings.Contains(r.stderr, "cosigned by") {
		t.Errorf("2 of 2, both cosigned: %s", r)
	}
	a.grow(t, "late", 1)
	if r := a.tw(t, "audit", "checkpoint", "--dir", a.cps(), "--witness", w1.url); r.code != 0 || !strings.Contains(r.stdout, ".cosig: 1 cosignature") {
		t.Fatalf("checkpoint with one witness: %s", r)
	}
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", both); r.code != 1 ||
		!strings.Contains(r.stdout, "cosigned by 1 of the policy's 2 witnesses (A), short of its quorum both (2 of A, B)") {
		t.Errorf("2 of 2, one cosigned: %s\nwant exit 1 naming the quorum", r)
	}
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", either); r.code != 0 {
		t.Errorf("1 of 2, one cosigned: %s", r)
	}
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", either, "--witness-key", w1.vkey); r.code != 2 || !strings.Contains(r.stderr, "drop --witness-key") {
		t.Errorf("--policy with --witness-key: %s, want a usage error", r)
	}
	bad := writePolicy(t, "log "+a.vkey, "witness A "+w1.vkey, "quorum A", "trust everyone")
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", bad); r.code != 2 || !strings.Contains(r.stderr, `line 4: unknown line "trust"`) {
		t.Errorf("a policy with an unknown line: %s, want exit 2 naming the line", r)
	}
	malformed := writePolicy(t, "log "+a.vkey, "witness A "+w1.vkey[:len(w1.vkey)-4]+"AAAA", "quorum A")
	if r := a.tw(t, "audit", "verify", "--policy", malformed); r.code != 2 || !strings.Contains(r.stderr, "line 2: witness A") {
		t.Errorf("a policy with a malformed key: %s, want exit 2 naming the line", r)
	}

	// A rollback: team A's log as it was before its last two entries, checkpointed with
	// its key from another machine, after the witnesses cosigned the larger size.
	old := a.copyCatalog(t)
	a.grow(t, "even-later", 2)
	if r := a.tw(t, "audit", "checkpoint", "--dir", a.cps(), "--witness", w1.url, "--witness", w2.url); r.code != 0 {
		t.Fatalf("checkpoint: %s", r)
	}
	cosignedSize := a.size(t)
	r := old.tw(t, "audit", "checkpoint", "--dir", old.cps(), "--key", a.key, "--origin", a.origin, "--witness", w1.url, "--witness", w2.url)
	if r.code != 1 || strings.Count(r.stderr, "the log was rolled back") != 2 {
		t.Errorf("a rolled-back checkpoint: %s\nwant exit 1, both witnesses refusing", r)
	}
	if r := old.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", either); r.code != 1 || !strings.Contains(r.stdout, "entries were removed") {
		t.Errorf("audit verify --policy of the rolled-back log: %s\nwant exit 1, entries removed", r)
	}

	// A fork: the same log from the same size back, grown with other entries to the size
	// the witnesses cosigned, and signed with the checkpoint key.
	fork := old.copyCatalog(t)
	fork.grow(t, "forked", 2)
	r = fork.tw(t, "audit", "checkpoint", "--dir", fork.cps(), "--key", a.key, "--origin", a.origin, "--witness", w1.url, "--witness", w2.url)
	if r.code != 1 || strings.Count(r.stderr, "not consistent with the one it cosigned") != 2 {
		t.Errorf("a forked checkpoint: %s\nwant exit 1, both witnesses refusing", r)
	}
	if fork.size(t) != cosignedSize {
		t.Fatalf("the fork is of size %d, not %d", fork.size(t), cosignedSize)
	}
	if r := fork.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", either); r.code != 1 || !strings.Contains(r.stdout, "an entry up to here was rewritten") {
		t.Errorf("audit verify --policy of the forked log against the cosigned checkpoints: %s\nwant exit 1", r)
	}
	if r := fork.tw(t, "audit", "verify", "--checkpoints", fork.cps(), "--policy", either); r.code != 1 || !strings.Contains(r.stdout, "cosigned by 0 of the policy's 2 witnesses (none of them)") {
		t.Errorf("audit verify --policy of the fork's own checkpoint: %s\nwant exit 1, no cosignature", r)
	}
	// The genuine log still verifies, and the witnesses still cosign it.
	a.grow(t, "after", 1)
	if r := a.tw(t, "audit", "checkpoint", "--dir", a.cps(), "--witness", w1.url, "--witness", w2.url); r.code != 0 {
		t.Errorf("the genuine log after the fork: %s", r)
	}
	if r := a.tw(t, "audit", "verify", "--checkpoints", a.cps(), "--policy", both); r.code != 0 {
		t.Errorf("the genuine log, 2 of 2: %s", r)
	}

	// witness serve stops gracefully on SIGTERM, exit 0.
	if err := w1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w1.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("witness serve after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("witness serve did not stop within 10s of SIGTERM")
	}
}
