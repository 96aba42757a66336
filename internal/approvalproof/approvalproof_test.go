package approvalproof_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate-dev/agentgate/internal/approvalproof"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"golang.org/x/mod/sumdb/tlog"
)

type edSigner struct{ k ed25519.PrivateKey }

func (s edSigner) Public() crypto.PublicKey { return s.k.Public() }
func (s edSigner) SignMessage(_ context.Context, m []byte) ([]byte, error) {
	return ed25519.Sign(s.k, m), nil
}

func newEd(t testing.TB) edSigner {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return edSigner{k}
}

const origin = "example.com/test/toolwarrant"

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// event is one audit entry of the synthetic log: a decision, or anything else.
type event struct {
	typ, server, tool, digest string
}

// testLog is a tiled log written by the test (entry bundles and a checkpoint, as
// tlog-tiles lays them out), not by toolwarrant.
type testLog struct {
	dir     string
	key     edSigner
	vkey    string
	entries [][]byte
}

func newLog(t testing.TB, events []event) *testLog {
	t.Helper()
	l := &testLog{dir: t.TempDir(), key: newEd(t)}
	var err error
	if l.vkey, err = checkpoint.VerifierKey(origin, l.key.Public()); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	for i, e := range events {
		body := json.RawMessage(`{"server":"x"}`)
		if e.server != "" {
			body, _ = json.Marshal(map[string]any{"server": e.server, "tool": e.tool, "digest": e.digest, "expect": "", "note": "", "statement": map[string]any{"bulk": true}})
		}
		b, err := audit.Body(int64(i+1), e.typ, "alice@example", at.Add(time.Duration(i)*time.Minute), body)
		if err != nil {
			t.Fatal(err)
		}
		l.entries = append(l.entries, b)
	}
	l.publish(t, nil)
	return l
}

// publish writes the bundles and the checkpoint, cosigned by witnesses.
func (l *testLog) publish(t testing.TB, witnesses []*checkpoint.Cosigner) {
	t.Helper()
	tr := &audit.Tree{}
	for _, e := range l.entries {
		if err := tr.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	n := int64(len(l.entries))
	for b := int64(0); b*tiles.Width < n; b++ {
		w := int(min(tiles.Width, n-b*tiles.Width))
		var bundle []byte
		for _, e := range l.entries[b*tiles.Width : b*tiles.Width+int64(w)] {
			var err error
			if bundle, err = tiles.AppendEntry(bundle, e); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(l.dir, filepath.FromSlash(tiles.Path(tlog.Tile{H: tiles.Height, L: -1, N: b, W: w}))), bundle)
	}
	root, err := tr.Root(n)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := checkpoint.SignNote(t.Context(), l.key, origin, n, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range witnesses {
		text := nb[:strings.Index(string(nb), "\n\n")+1]
		signed, err := note.Sign(&note.Note{Text: string(text)}, w)
		if err != nil {
			t.Fatal(err)
		}
		nb = checkpoint.WithCosignatures(nb, signed[len(text)+1:])
	}
	write(t, filepath.Join(l.dir, "checkpoint"), nb)
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func policy(t *testing.T, text string) *checkpoint.Policy {
	t.Helper()
	p, err := checkpoint.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (l *testLog) policy(t *testing.T) *checkpoint.Policy {
	return policy(t, "log "+l.vkey+"\nquorum none\n")
}

// decisions: get_forecast approved (a), then b approved (a superseded); get_alerts
// approved then rejected; echo rolled back to c after d; now never approved, rejected.
var decisions = []event{
	{typ: "server_added"},
	{"approved", "wx", "get_forecast", digest('a')},
	{typ: "crawl_observed"},
	{"approved", "wx", "get_forecast", digest('b')},
	{"approved", "wx", "get_alerts", digest('e')},
	{"rejected", "wx", "get_alerts", digest('e')},
	{"approved", "wx", "echo", digest('c')},
	{"approved", "wx", "echo", digest('d')},
	{"rolled_back", "wx", "echo", digest('c')},
	{"rejected", "wx", "now", digest('f')},
	{"rejected", "wx", "echo", digest('9')}, // a digest never approved: echo keeps c
}

func wants() []approvalproof.Want {
	return []approvalproof.Want{
		{Server: "wx", Tool: "get_forecast", Digest: digest('b'), Profiles: []string{"vscode"}},
		{Server: "wx", Tool: "get_forecast", Digest: digest('b'), Profiles: []string{"generic"}},
		{Server: "wx", Tool: "get_forecast", Digest: digest('a'), Profiles: []string{"cursor"}},
		{Server: "wx", Tool: "get_alerts", Digest: digest('e')},
		{Server: "wx", Tool: "echo", Digest: digest('c')},
		{Server: "wx", Tool: "now", Digest: digest('f')},
		{Server: "wx", Tool: "new", Digest: digest('1')},
		{Server: "other", Tool: "t", Digest: digest('2')},
	}
}

func TestCheckReplaysDecisions(t *testing.T) {
	l := newLog(t, decisions)
	log, err := approvalproof.Read(t.Context(), approvalproof.Dir(l.dir), l.policy(t), approvalproof.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if log.Entries != int64(len(decisions)) || len(log.Decisions) != 9 || log.Checkpoint.Origin != origin {
		t.Fatalf("read %d entries, %d decisions, origin %s", log.Entries, len(log.Decisions), log.Checkpoint.Origin)
	}
	got := log.Check(wants())
	type row struct {
		server, tool, digest string
		status               approvalproof.Status
		reason               string
	}
	want := []row{
		{"other", "t", digest('2'), approvalproof.StatusMissing, `no decision on any tool of a server "other"`},
		{"wx", "echo", digest('c'), approvalproof.StatusApproved, "approved by alice@example at entry 9 (rolled_back)"},
		{"wx", "get_alerts", digest('e'), approvalproof.StatusRevoked, "approved at entry 5, then rejected by alice@example at entry 6; the tool has no approved digest now"},
		{"wx", "get_forecast", digest('a'), approvalproof.StatusRevoked, "approved at entry 2, then superseded at entry 4: " + digest('b')},
		{"wx", "get_forecast", digest('b'), approvalproof.StatusApproved, "approved by alice@example at entry 4 (approved)"},
		{"wx", "new", digest('1'), approvalproof.StatusMissing, "never approved; the log has no decision on this tool"},
		{"wx", "now", digest('f'), approvalproof.StatusMissing, "never approved; rejected by alice@example at entry 10"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Server != w.server || g.Tool != w.tool || g.Digest != w.digest || g.Status != w.status || !strings.Contains(g.Reason, w.reason) {
			t.Errorf("result %d = %s/%s %s %s %q, want %s/%s %s %s %q", i, g.Server, g.Tool, g.Digest, g.Status, g.Reason, w.server, w.tool, w.digest, w.status, w.reason)
		}
		if g.Failed() != (w.status != approvalproof.StatusApproved) || (g.Failed() && (g.Review == "" || !strings.Contains(g.Approve, "--hash "+w.digest))) {
			t.Errorf("result %d: failed %v, review %q, approve %q", i, g.Failed(), g.Review, g.Approve)
		}
	}
	if p := got[4].Profiles; strings.Join(p, ",") != "generic,vscode" {
		t.Errorf("profiles of the digest locked twice: %v", p)
	}
	if got[2].Rule != approvalproof.RuleApprovalRevoked || got[0].Rule != approvalproof.RuleApprovalMissing || got[1].Rule != "" {
		t.Errorf("rules: %q %q %q", got[2].Rule, got[0].Rule, got[1].Rule)
	}
	if got[1].Review != "" || got[0].Review != "toolwarrant show other t --version "+digest('2') {
		t.Errorf("review commands: %q %q", got[1].Review, got[0].Review)
	}
}

// TestReadRefuses: a wrong log key, a missed quorum, an altered or missing bundle, a log
// over the bound: each is an error of the right kind, never a result.
func TestReadRefuses(t *testing.T) {
	l := newLog(t, decisions)
	other := newLog(t, decisions[:2])
	w := newEd(t)
	ws, err := checkpoint.NewCosigner("witness.example.com/w1", w, nil)
	if err != nil {
		t.Fatal(err)
	}
	withWitness := policy(t, "log "+l.vkey+"\nwitness w1 "+ws.VerifierKey()+"\nquorum w1\n")
	bundle := filepath.Join(l.dir, "tile", "entries", "000.p", fmt.Sprint(len(decisions)))
	orig, _ := os.ReadFile(bundle)
	tests := []struct {
		name   string
		setup  func()
		p      *checkpoint.Policy
		opt    approvalproof.Options
		is     error
		reason string
	}{
		{"wrong log key", nil, other.policy(t), approvalproof.Options{}, approvalproof.ErrUntrusted, "is not signed by the policy's log key"},
		{"quorum not met", nil, withWitness, approvalproof.Options{}, approvalproof.ErrUntrusted, "short of its quorum witness w1"},
		{"altered entry", func() { write(t, bundle, []byte(strings.Replace(string(orig), `"rejected"`, `"approved"`, 1))) }, l.policy(t), approvalproof.Options{},
			approvalproof.ErrUntrusted, "do not hash to the root of checkpoint"},
		{"truncated bundle", func() { write(t, bundle, orig[:len(orig)-3]) }, l.policy(t), approvalproof.Options{}, approvalproof.ErrUntrusted, "entry bundle tile/entries/000.p/11"},
		{"missing bundle", func() { os.Remove(bundle) }, l.policy(t), approvalproof.Options{}, approvalproof.ErrUnreadable, "tile/entries/000.p/11"},
		{"over the bound", nil, l.policy(t), approvalproof.Options{MaxLogBytes: 100}, approvalproof.ErrUnreadable, "more than 100 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write(t, bundle, orig)
			if tc.setup != nil {
				tc.setup()
			}
			_, err := approvalproof.Read(t.Context(), approvalproof.Dir(l.dir), tc.p, tc.opt)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Read = %v, want %v with %q", err, tc.is, tc.reason)
			}
		})
	}
	write(t, bundle, orig)

	// Cosigned by the witness, the quorum is met.
	l.publish(t, []*checkpoint.Cosigner{ws})
	log, err := approvalproof.Read(t.Context(), approvalproof.Dir(l.dir), withWitness, approvalproof.Options{})
	if err != nil || strings.Join(log.Checkpoint.Cosigned, ",") != "w1" {
		t.Fatalf("Read of a cosigned checkpoint: %v (%+v)", err, log)
	}
}

// TestDirRefusesFIFO: a FIFO in the tiles directory is refused at once, never waited on.
func TestDirRefusesFIFO(t *testing.T) {
	l := newLog(t, decisions[:2])
	cp := filepath.Join(l.dir, "checkpoint")
	os.Remove(cp)
	if err := syscall.Mkfifo(cp, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := approvalproof.Read(t.Context(), approvalproof.Dir(l.dir), l.policy(t), approvalproof.Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, approvalproof.ErrUnreadable) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("Read of a FIFO checkpoint = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO")
	}
}

// TestHTTP reads the log over loopback HTTP; a server that answers 500 or sends more than
// a file may hold is an error.
func TestHTTP(t *testing.T) {
	l := newLog(t, decisions)
	srv := httptest.NewServer(http.FileServer(http.Dir(l.dir)))
	defer srv.Close()
	src, err := approvalproof.HTTP(srv.URL+"/", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log, err := approvalproof.Read(t.Context(), src, l.policy(t), approvalproof.Options{})
	if err != nil || len(log.Decisions) != 9 {
		t.Fatalf("Read over HTTP: %v", err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkpoint" {
			w.Write([]byte(strings.Repeat("x", tiles.MaxCheckpointBytes+10)))
			return
		}
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer bad.Close()
	src, _ = approvalproof.HTTP(bad.URL, time.Second)
	if _, err := approvalproof.Read(t.Context(), src, l.policy(t), approvalproof.Options{}); !errors.Is(err, approvalproof.ErrUnreadable) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("an oversized checkpoint: %v", err)
	}
	for _, u := range []string{"ftp://x/", "http://user:pw@127.0.0.1/", "127.0.0.1:8080", "http://127.0.0.1/?q=1"} {
		if _, err := approvalproof.HTTP(u, 0); err == nil {
			t.Errorf("HTTP(%q) accepted", u)
		}
	}
}

// TestBundleRoundTrip: a bundle of the approved digests verifies offline; changing a
// digest, an entry or a proof hash, or a policy of another log, is refused.
func TestBundleRoundTrip(t *testing.T) {
	l := newLog(t, decisions)
	p := l.policy(t)
	log, err := approvalproof.Read(t.Context(), approvalproof.Dir(l.dir), p, approvalproof.Options{})
	if err != nil {
		t.Fatal(err)
	}
	approved := []approvalproof.Want{
		{Server: "wx", Tool: "get_forecast", Digest: digest('b'), Profiles: []string{"generic"}},
		{Server: "wx", Tool: "echo", Digest: digest('c'), Profiles: []string{"generic"}},
	}
	if _, err := log.Bundle(log.Check(wants())); !errors.Is(err, approvalproof.ErrNotApproved) {
		t.Errorf("Bundle of unapproved digests: %v", err)
	}
	b, err := log.Bundle(log.Check(approved))
	if err != nil {
		t.Fatal(err)
	}
	data, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v, err := approvalproof.VerifyBundle(data, p)
	if err != nil {
		t.Fatal(err)
	}
	res := v.Check(append(approved, approvalproof.Want{Server: "wx", Tool: "new", Digest: digest('1')}))
	if len(res) != 3 || res[0].Status != approvalproof.StatusApproved || res[1].Status != approvalproof.StatusApproved || res[2].Status != approvalproof.StatusMissing {
		t.Fatalf("offline check: %+v", res)
	}

	var parsed map[string]any
	if err := json.Unmarshal(data, &parsed); err != nil || parsed["type"] != approvalproof.BundleType {
		t.Fatalf("bundle JSON: %v\n%s", err, data)
	}
	mutate := func(f func(b *approvalproof.Bundle)) []byte {
		c, _ := approvalproof.ParseBundle(data)
		f(c)
		out, _ := c.Marshal()
		return out
	}
	tests := []struct {
		name string
		data []byte
		p    *checkpoint.Policy
		want string
	}{
		{"digest changed", mutate(func(b *approvalproof.Bundle) { b.Approvals[0].Digest = digest('7') }), p, "not what the bundle says"},
		{"entry changed", mutate(func(b *approvalproof.Bundle) {
			b.Approvals[0].Entry = []byte(strings.Replace(string(b.Approvals[0].Entry), digest('c'), digest('7'), 1))
		}), p, "is not proven in checkpoint"},
		{"proof changed", mutate(func(b *approvalproof.Bundle) { b.Approvals[1].Proof[0] = tlog.Hash{}.String() }), p, "is not proven in checkpoint"},
		{"index changed", mutate(func(b *approvalproof.Bundle) { b.Approvals[1].Index++ }), p, "is not proven"},
		{"index outside", mutate(func(b *approvalproof.Bundle) { b.Approvals[1].Index = 99 }), p, "outside checkpoint"},
		{"another log", data, newLog(t, decisions[:1]).policy(t), "is not signed by the policy's log key"},
		{"not a bundle", []byte(`{"type":"x"}`), p, "not an approvals bundle"},
		{"unknown member", []byte(strings.Replace(string(data), `"type"`, `"extra":1,"type"`, 1)), p, "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := approvalproof.VerifyBundle(tc.data, tc.p)
			if !errors.Is(err, approvalproof.ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyBundle = %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzVerifyBundle: any input is refused with ErrUntrusted or verifies; what verifies
// checks without panicking, and every approval it proves names a decision of its digest.
func FuzzVerifyBundle(f *testing.F) {
	l := newLog(f, decisions)
	p, err := checkpoint.ParsePolicy([]byte("log " + l.vkey + "\nquorum none\n"))
	if err != nil {
		f.Fatal(err)
	}
	log, err := approvalproof.Read(context.Background(), approvalproof.Dir(l.dir), p, approvalproof.Options{})
	if err != nil {
		f.Fatal(err)
	}
	b, err := log.Bundle(log.Check([]approvalproof.Want{{Server: "wx", Tool: "echo", Digest: digest('c')}}))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := b.Marshal()
	f.Add(good)
	f.Add([]byte(`{"type":"agentgate-approvals/v1","checkpoint":"","approvals":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := approvalproof.VerifyBundle(data, p)
		if err != nil {
			if !errors.Is(err, approvalproof.ErrUntrusted) {
				t.Fatalf("error not ErrUntrusted: %v", err)
			}
			return
		}
		var wants []approvalproof.Want
		for _, a := range v.Approvals {
			wants = append(wants, approvalproof.Want{Server: a.Server, Tool: a.Tool, Digest: a.Digest})
		}
		for _, r := range v.Check(wants) {
			if r.Status == approvalproof.StatusMissing {
				t.Fatalf("a proven approval is missing: %+v", r)
			}
		}
	})
}
