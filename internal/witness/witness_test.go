package witness

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/witnessclient"
)

type edKey struct{ k ed25519.PrivateKey }

func (s edKey) Public() crypto.PublicKey { return s.k.Public() }
func (s edKey) SignMessage(_ context.Context, m []byte) ([]byte, error) {
	return ed25519.Sign(s.k, m), nil
}

func newKey(t testing.TB) edKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return edKey{k}
}

// testLog is a log: a tree of entries and its checkpoint key.
type testLog struct {
	origin, vkey string
	key          edKey
	tree         *audit.Tree
}

func newLog(t *testing.T, origin string, n int, salt string) *testLog {
	t.Helper()
	l := &testLog{origin: origin, key: newKey(t), tree: &audit.Tree{}}
	l.vkey, _ = checkpoint.VerifierKey(origin, l.key.Public())
	l.grow(t, n, salt)
	return l
}

func (l *testLog) grow(t *testing.T, n int, salt string) {
	t.Helper()
	for range n {
		if err := l.tree.Append(fmt.Appendf(nil, `{"seq":%d,"salt":%q}`, l.tree.Size()+1, salt)); err != nil {
			t.Fatal(err)
		}
	}
}

func (l *testLog) note(t *testing.T, size int64) []byte {
	t.Helper()
	root, err := l.tree.Root(size)
	if err != nil {
		t.Fatal(err)
	}
	b, err := checkpoint.SignNote(t.Context(), l.key, l.origin, size, root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (l *testLog) body(t *testing.T, old, size int64) []byte {
	t.Helper()
	var proof tlog.TreeProof
	if old > 0 && old < size {
		var err error
		if proof, err = l.tree.ConsistencyProof(old, size); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(h.String() + "\n")
	}
	b.WriteString("\n")
	b.Write(l.note(t, size))
	return b.Bytes()
}

// noteSigner signs a note of any text with a log's key.
type noteSigner struct {
	v note.Verifier
	k edKey
}

func (s noteSigner) Name() string                  { return s.v.Name() }
func (s noteSigner) KeyHash() uint32               { return s.v.KeyHash() }
func (s noteSigner) Sign(m []byte) ([]byte, error) { return ed25519.Sign(s.k.k, m), nil }

type fixture struct {
	w     *Witness
	state *File
	cs    *checkpoint.Cosigner
	url   string
}

func newFixture(t *testing.T, logs ...*testLog) *fixture {
	t.Helper()
	f := &fixture{state: &File{Path: filepath.Join(t.TempDir(), "witness.state")}}
	var err error
	if f.cs, err = checkpoint.NewCosigner("witness.example/w1", newKey(t), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.state.Create(t.Context(), f.cs.Name(), f.cs.VerifierKey()); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if added, err := f.state.AddLog(t.Context(), l.origin, l.vkey); err != nil || !added {
			t.Fatalf("AddLog: %v %v", added, err)
		}
	}
	if f.w, err = New(Config{State: f.state, Cosigner: f.cs}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.w)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fixture) post(t *testing.T, body []byte) (int, string, string) {
	t.Helper()
	resp, err := http.Post(f.url+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestAddCheckpoint: each rule of c2sp.org/tlog-witness's add-checkpoint, with the status
// the spec gives it, and the cosignatures that verify with sumdb/note.
func TestAddCheckpoint(t *testing.T) {
	lg := newLog(t, "example.com/log", 8, "a")
	empty := newLog(t, "example.com/empty", 0, "")
	f := newFixture(t, lg, empty)
	wv, err := checkpoint.WitnessVerifier(f.cs.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	lv, _ := note.NewVerifier(lg.vkey)
	cosigned := func(t *testing.T, size int64, sigs string) {
		t.Helper()
		n, err := note.Open(append(lg.note(t, size), sigs...), note.VerifierList(lv, wv))
		if err != nil || len(n.Sigs) != 2 {
			t.Fatalf("note.Open of the cosigned checkpoint: %+v %v", n, err)
		}
	}

	// The first checkpoint: from 0, no proof.
	code, ct, sigs := f.post(t, lg.body(t, 0, 3))
	if code != 200 || !strings.HasPrefix(sigs, "— witness.example/w1 ") || !strings.HasSuffix(sigs, "\n") || strings.Count(sigs, "\n") != 1 {
		t.Fatalf("first: %d %q", code, sigs)
	}
	cosigned(t, 3, sigs)
	if !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	// The witness says what it cosigned when asked from another size.
	if code, ct, body := f.post(t, lg.body(t, 0, 5)); code != 409 || ct != "text/x.tlog.size" || body != "3\n" {
		t.Errorf("old 0 after 3: %d %q %q", code, ct, body)
	}
	// Growing with a proof, and the same checkpoint again.
	if code, _, sigs := f.post(t, lg.body(t, 3, 5)); code != 200 {
		t.Fatalf("3 → 5: %d %q", code, sigs)
	} else {
		cosigned(t, 5, sigs)
	}
	if code, _, _ := f.post(t, lg.body(t, 5, 5)); code != 200 {
		t.Errorf("5 → 5 again: %d", code)
	}

	// A fork: another tree, same size.
	fork := newLog(t, lg.origin, 8, "b")
	fork.key, fork.vkey = lg.key, lg.vkey
	if code, _, body := f.post(t, fork.body(t, 5, 5)); code != 422 || !strings.Contains(body, "a fork") {
		t.Errorf("a fork at the same size: %d %q", code, body)
	}
	if code, _, body := f.post(t, fork.body(t, 5, 7)); code != 422 || !strings.Contains(body, "does not verify") {
		t.Errorf("a forked tree grown: %d %q", code, body)
	}
	// A rollback: smaller than what was cosigned.
	if code, _, body := f.post(t, lg.body(t, 5, 4)); code != 400 || !strings.Contains(body, "larger than the checkpoint's size") {
		t.Errorf("old 5, size 4: %d %q", code, body)
	}
	if code, _, body := f.post(t, lg.body(t, 4, 4)); code != 409 || body != "5\n" {
		t.Errorf("old 4, size 4: %d %q", code, body)
	}
	// A proof for another old size.
	bad := lg.body(t, 4, 7)
	bad = bytes.Replace(bad, []byte("old 4\n"), []byte("old 5\n"), 1)
	if code, _, _ := f.post(t, bad); code != 422 {
		t.Errorf("a wrong proof: %d", code)
	}

	// Keys and origins.
	stranger := newLog(t, "example.com/stranger", 3, "s")
	if code, _, body := f.post(t, stranger.body(t, 0, 3)); code != 404 || !strings.Contains(body, "unknown log origin") {
		t.Errorf("unknown origin: %d %q", code, body)
	}
	impostor := newLog(t, lg.origin, 8, "a")
	if code, _, _ := f.post(t, impostor.body(t, 5, 7)); code != 403 {
		t.Errorf("another key under the origin's name: %d", code)
	}
	b := lg.body(t, 5, 7)
	i := bytes.LastIndex(b, []byte(" "))
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b[i+1:])))
	sig[10] ^= 1 // a signature byte, key hash intact
	b = append(b[:i+1], base64.StdEncoding.EncodeToString(sig)+"\n"...)
	if code, _, _ := f.post(t, b); code != 403 {
		t.Errorf("a signature that does not verify: %d", code)
	}

	// Malformed requests.
	for name, body := range map[string][]byte{
		"no blank line":   []byte("old 0\n"),
		"leading zero":    bytes.Replace(lg.body(t, 5, 7), []byte("old 5"), []byte("old 05"), 1),
		"no old line":     bytes.Replace(lg.body(t, 5, 7), []byte("old 5"), []byte("new 5"), 1),
		"not a hash":      bytes.Replace(lg.body(t, 5, 7), []byte("old 5\n"), []byte("old 5\nnot-a-hash\n"), 1),
		"64 proof lines":  append([]byte("old 5\n"+strings.Repeat(tlog.Hash{}.String()+"\n", 64)), lg.body(t, 0, 7)[len("old 0\n"):]...),
		"not a note":      []byte("old 0\n\nexample.com/log\n7\n"),
		"negative size":   bytes.Replace(lg.body(t, 5, 7), []byte("old 5"), []byte("old -1"), 1),
		"proof from zero": bytes.Replace(lg.body(t, 5, 7), []byte("old 5\n"), []byte("old 0\n"), 1),
	} {
		code, _, _ := f.post(t, body)
		want := 400
		if name == "proof from zero" {
			want = 409 // the witness is at 5: a conflict before the proof is looked at
		}
		if code != want {
			t.Errorf("%s: %d, want %d", name, code, want)
		}
	}
	lv7, _ := note.NewVerifier(lg.vkey)
	root7, _ := lg.tree.Root(7)
	long, err := note.Sign(&note.Note{Text: lg.origin + "\n7\n" + root7.String() + "\n" + strings.Repeat("extension\n", MaxTextBytes/10)},
		noteSigner{lv7, lg.key})
	if err != nil {
		t.Fatal(err)
	}
	proof7, _ := lg.tree.ConsistencyProof(5, 7)
	longBody := "old 5\n"
	for _, h := range proof7 {
		longBody += h.String() + "\n"
	}
	if code, _, body := f.post(t, append([]byte(longBody+"\n"), long...)); code != 400 || !strings.Contains(body, "larger than") {
		t.Errorf("a checkpoint text over MaxTextBytes: %d %q", code, body)
	}
	if code, _, _ := f.post(t, append(lg.body(t, 5, 7), bytes.Repeat([]byte("x"), MaxBodyBytes)...)); code != 413 {
		t.Errorf("an oversized body: %d", code)
	}
	resp, err := http.Get(f.url + "/add-checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET /add-checkpoint: %d", resp.StatusCode)
	}

	// The empty log: size 0 must have the empty tree's root; a proof from 0 must be empty.
	wrong, _ := checkpoint.SignNote(t.Context(), empty.key, empty.origin, 0, tlog.Hash{1})
	if code, _, _ := f.post(t, append([]byte("old 0\n\n"), wrong...)); code != 422 {
		t.Errorf("size 0, a non-empty root: %d", code)
	}
	right, _ := checkpoint.SignNote(t.Context(), empty.key, empty.origin, 0, EmptyRoot)
	if code, _, _ := f.post(t, append([]byte("old 0\n\n"), right...)); code != 200 {
		t.Errorf("size 0, the empty root: %d", code)
	}
	empty.grow(t, 2, "e")
	withProof := append([]byte("old 0\n"+tlog.Hash{}.String()+"\n\n"), empty.note(t, 2)...)
	if code, _, _ := f.post(t, withProof); code != 422 {
		t.Errorf("a proof from size 0: %d", code)
	}

	// The state on disk, read again, and the monitoring API.
	st, err := (&File{Path: f.state.Path}).Read()
	if err != nil || st.Logs[lg.origin].Size != 5 || st.Logs[empty.origin].Size != 0 {
		t.Fatalf("state: %+v %v", st, err)
	}
	resp, err = http.Get(f.url + "/" + OriginHash(lg.origin) + "/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n, err := note.Open(served, note.VerifierList(lv, wv)); resp.StatusCode != 200 || err != nil || len(n.Sigs) != 2 || !strings.HasPrefix(n.Text, lg.origin+"\n5\n") {
		t.Errorf("GET checkpoint: %d %q %v", resp.StatusCode, served, err)
	}
	if resp, _ := http.Get(f.url + "/" + OriginHash(stranger.origin) + "/checkpoint"); resp == nil || resp.StatusCode != 404 {
		t.Errorf("GET checkpoint of an unknown log: %v", resp)
	} else {
		resp.Body.Close()
	}
}

// TestClientAgainstWitness: toolwarrant's own witness client and Cosign, against this
// witness: a first submission from a size the witness never saw is answered with 409 and
// retried; a rollback and a fork are refused.
func TestClientAgainstWitness(t *testing.T) {
	lg := newLog(t, "example.com/log", 9, "a")
	f := newFixture(t, lg)
	c, err := witnessclient.New(witnessclient.Config{URL: f.url})
	if err != nil {
		t.Fatal(err)
	}
	wv, _ := checkpoint.WitnessVerifier(f.cs.VerifierKey())
	for _, step := range []struct{ old, size int64 }{{2, 4}, {4, 9}} {
		sigs, err := checkpoint.Cosign(t.Context(), c, lg.tree, step.size, lg.note(t, step.size), step.old)
		if err != nil {
			t.Fatalf("Cosign %v: %v", step, err)
		}
		if n, err := checkpoint.OpenNote(checkpoint.WithCosignatures(lg.note(t, step.size), sigs), lg.vkey, []note.Verifier{wv}); err != nil || len(n.Witnesses) != 1 {
			t.Fatalf("OpenNote: %+v %v", n, err)
		}
	}
	if _, err := checkpoint.Cosign(t.Context(), c, lg.tree, 6, lg.note(t, 6), 4); !errors.Is(err, checkpoint.ErrWitnessRefused) || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("a rollback: %v", err)
	}
	fork := newLog(t, lg.origin, 9, "b")
	fork.key, fork.vkey = lg.key, lg.vkey
	if _, err := checkpoint.Cosign(t.Context(), c, fork.tree, 9, fork.note(t, 9), 4); !errors.Is(err, checkpoint.ErrWitnessRefused) || !strings.Contains(err.Error(), "not consistent") {
		t.Errorf("a fork: %v", err)
	}
}

// TestOneWinnerPerSize: concurrent submissions from the same old size: exactly one is
// cosigned, the others are told the new size, and the state never moves back.
func TestOneWinnerPerSize(t *testing.T) {
	lg := newLog(t, "example.com/log", 20, "a")
	f := newFixture(t, lg)
	if code, _, _ := f.post(t, lg.body(t, 0, 4)); code != 200 {
		t.Fatal(code)
	}
	bodies := make([][]byte, 0, 12)
	for size := int64(5); size <= 16; size++ {
		bodies = append(bodies, lg.body(t, 4, size))
	}
	codes := make([]int, len(bodies))
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() { codes[i], _, _ = f.post(t, b) })
	}
	wg.Wait()
	won := 0
	for i, c := range codes {
		switch c {
		case 200:
			won++
			st, _ := f.state.Read()
			if got := st.Logs[lg.origin].Size; got != int64(i)+5 {
				t.Errorf("the winner was size %d, the state says %d", i+5, got)
			}
		case 409:
		default:
			t.Errorf("size %d: status %d", i+5, c)
		}
	}
	if won != 1 {
		t.Errorf("%d submissions from size 4 were cosigned, want 1 (%v)", won, codes)
	}
}

// TestListen: loopback is said to be loopback, anything else is not (only loopback is
// listened on here).
func TestListen(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "0.0.0.0": false, "192.0.2.7": false, "": false, "example.com": false} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
	ln, loopback, err := Listen("127.0.0.1:0")
	if err != nil || !loopback {
		t.Fatalf("Listen: %v %v", loopback, err)
	}
	ln.Close()
	if _, _, err := Listen("no-port"); err == nil {
		t.Error("an address without a port was accepted")
	}
}

// TestStateLockedAndDurable: a second writer (another process's flock on the lock file)
// makes a change wait, then fail with ErrLocked; the state is written by rename, leaving
// no temporary file; a key that is not the state's is refused; add-log is idempotent.
func TestStateLockedAndDurable(t *testing.T) {
	lg := newLog(t, "example.com/log", 3, "a")
	f := newFixture(t, lg)
	if added, err := f.state.AddLog(t.Context(), lg.origin, lg.vkey); err != nil || added {
		t.Errorf("AddLog again: %v %v", added, err)
	}
	other := newLog(t, lg.origin, 1, "x")
	if _, err := f.state.AddLog(t.Context(), lg.origin, other.vkey); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("AddLog with another key: %v", err)
	}
	lf, err := os.OpenFile(f.state.Path+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := tryLock(lf); err != nil {
		t.Fatal(err)
	}
	second := &File{Path: f.state.Path, LockTimeout: 200 * time.Millisecond}
	start := time.Now()
	if _, err := second.AddLog(t.Context(), "example.com/other", other.vkey); !errors.Is(err, ErrLocked) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("AddLog while another holds the lock: %v after %s", err, time.Since(start))
	}
	_ = unlock(lf)
	if _, err := second.AddLog(t.Context(), "example.com/other", other.vkey); err != nil {
		t.Errorf("AddLog after the lock was released: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(f.state.Path))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "witness.state witness.state.lock" {
		t.Errorf("files beside the state: %v", names)
	}
	cs, _ := checkpoint.NewCosigner("witness.example/w1", newKey(t), nil)
	if _, err := New(Config{State: f.state, Cosigner: cs}); err == nil || !strings.Contains(err.Error(), "not the witness key") {
		t.Errorf("New with another key: %v", err)
	}
	if err := f.state.Create(t.Context(), cs.Name(), cs.VerifierKey()); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing state: %v", err)
	}
	if err := os.WriteFile(f.state.Path, []byte(`{"type":"something else"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.state.Read(); !errors.Is(err, ErrState) {
		t.Errorf("Read of a foreign file: %v", err)
	}
}
