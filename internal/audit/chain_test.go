package audit

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

type memSigner struct {
	key *ecdsa.PrivateKey
	id  string
}

func newMemSigner(t testing.TB) *memSigner {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := signer.KeyIDOf(k.Public())
	return &memSigner{k, id}
}

func (s *memSigner) KeyID() string            { return s.id }
func (s *memSigner) Public() crypto.PublicKey { return s.key.Public() }
func (s *memSigner) Sign(_ context.Context, h []byte) ([]byte, error) {
	return ecdsa.SignASN1(rand.Reader, s.key, h)
}

var t0 = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

// build chains n entries: a trust_changed first, then crawl_observed ones.
func build(t testing.TB, s signer.Signer, n int) []warrant.AuditRecord {
	c := &Chainer{Signer: s}
	var events []warrant.Event
	for i := range n {
		typ := "crawl_observed"
		if i == 0 {
			typ = "trust_changed"
		}
		events = append(events, warrant.Event{Type: typ, Actor: "alice", At: t0.Add(time.Duration(i) * time.Second),
			Body: json.RawMessage(fmt.Sprintf(`{"server":"s","crawl":%d,"note":"<b>&</b>"}`, i))})
	}
	recs, err := c.Chain(context.Background(), warrant.Genesis(), events)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func keys(ss ...signer.Signer) map[string]crypto.PublicKey {
	m := map[string]crypto.PublicKey{}
	for _, s := range ss {
		m[s.KeyID()] = s.Public()
	}
	return m
}

func problemsAt(rep Report) string {
	var p []string
	for _, x := range rep.Problems {
		p = append(p, x.String())
	}
	return strings.Join(p, "\n")
}

func TestChainVerifies(t *testing.T) {
	s := newMemSigner(t)
	recs := build(t, s, 5)
	rep := Verify(recs, Options{Keys: keys(s)})
	if !rep.OK() || rep.Entries != 5 || rep.Head.Seq != 5 || rep.Head.Hash != recs[4].Hash {
		t.Fatalf("report = %+v\n%s", rep, problemsAt(rep))
	}
	// The scheme, recomputed independently: SHA-256(prev bytes || body).
	if h, _ := Hash(warrant.GenesisHash, recs[0].Body); h != recs[0].Hash {
		t.Error("first hash is not SHA-256(32 zero bytes || body)")
	}
	if !bytes.Contains(recs[0].Body, []byte(`"event":{"crawl":0,"note":"<b>&</b>","server":"s"}`)) || !bytes.HasPrefix(recs[0].Body, []byte(`{"actor":"alice","at":"2026-10-12T09:00:00Z"`)) {
		t.Errorf("body = %s", recs[0].Body)
	}
}

func clone(recs []warrant.AuditRecord) []warrant.AuditRecord {
	out := make([]warrant.AuditRecord, len(recs))
	for i, r := range recs {
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

func TestTamperingIsCaught(t *testing.T) {
	s := newMemSigner(t)
	recs := build(t, s, 6)
	head := warrant.AuditHead{Seq: 6, Hash: recs[5].Hash}
	root := recs[0].Hash

	// 1. One body changed.
	changed := clone(recs)
	changed[2].Body = bytes.Replace(changed[2].Body, []byte(`"crawl":2`), []byte(`"crawl":9`), 1)
	// 2. One entry deleted.
	deleted := append(clone(recs[:3]), clone(recs[4:])...)
	// 3. Two entries swapped.
	swapped := clone(recs)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	for _, tc := range []struct {
		name string
		recs []warrant.AuditRecord
		seq  int64
	}{{"body changed", changed, 3}, {"entry deleted", deleted, 5}, {"entries swapped", swapped, 4}} {
		rep := Verify(tc.recs, Options{Keys: keys(s)})
		if rep.OK() || rep.Problems[0].Seq != tc.seq {
			t.Errorf("%s: problems\n%s\nwant the first at entry %d", tc.name, problemsAt(rep), tc.seq)
		}
	}

	// 4. A rewritten history, re-signed with the stolen log key: internally consistent...
	c := &Chainer{Signer: s}
	var events []warrant.Event
	for i := range 6 {
		typ := "crawl_observed"
		if i == 0 {
			typ = "trust_changed"
		}
		events = append(events, warrant.Event{Type: typ, Actor: "mallory", At: t0, Body: json.RawMessage(`{"rewritten":true}`)})
	}
	forged, _ := c.Chain(context.Background(), warrant.Genesis(), events)
	if rep := Verify(forged, Options{Keys: keys(s)}); !rep.OK() {
		t.Fatalf("the forged log should verify on its own: %s", problemsAt(rep))
	}
	// ...but not against the head or the trust root kept outside the database.
	if rep := Verify(forged, Options{Keys: keys(s), Head: &head}); rep.OK() || !strings.Contains(problemsAt(rep), "head you kept") {
		t.Errorf("rewrite with --head: %s", problemsAt(rep))
	}
	if rep := Verify(forged, Options{Keys: keys(s), TrustRoot: root}); rep.OK() || !strings.Contains(problemsAt(rep), "trust root") {
		t.Errorf("rewrite with --trust-root: %s", problemsAt(rep))
	}
	// A truncated log is caught by the head too.
	if rep := Verify(clone(recs[:4]), Options{Keys: keys(s), Head: &head}); rep.OK() || !strings.Contains(problemsAt(rep), "entries were removed") {
		t.Errorf("truncation with --head: %s", problemsAt(rep))
	}
	// Another key.
	other := newMemSigner(t)
	if rep := Verify(build(t, other, 2), Options{Keys: keys(s)}); rep.OK() || !strings.Contains(problemsAt(rep), "not a trusted log key") {
		t.Errorf("untrusted key: %s", problemsAt(rep))
	}
	// A signature over another hash.
	badSig := clone(recs)
	badSig[1].Signature = recs[2].Signature
	if rep := Verify(badSig, Options{Keys: keys(s)}); rep.OK() || rep.Problems[0].Seq != 2 {
		t.Errorf("moved signature: %s", problemsAt(rep))
	}
	// A stored column that disagrees with the signed body.
	actor := clone(recs)
	actor[1].Actor = "bob"
	if rep := Verify(actor, Options{Keys: keys(s)}); rep.OK() || rep.Problems[0].Seq != 2 {
		t.Errorf("actor column changed: %s", problemsAt(rep))
	}
}

func TestExportRoundTrip(t *testing.T) {
	s := newMemSigner(t)
	recs := build(t, s, 4)
	var buf bytes.Buffer
	if err := WriteExport(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 4 {
		t.Fatalf("%d lines", n)
	}
	got, err := ParseExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if rep := Verify(got, Options{Keys: keys(s)}); !rep.OK() || rep.Head.Hash != recs[3].Hash {
		t.Errorf("re-read export: %s", problemsAt(rep))
	}
	for _, bad := range []string{
		`{"seq":1}` + "\n" + `not json`,
		`{"seq":1,"type":"x","actor":"a","at":"2026-10-12T09:00:00Z","prevHash":"","hash":"","keyId":"","signature":"","body":{},"extra":1}`,
		`{"seq":1,"type":"x","actor":"a","at":"yesterday","prevHash":"","hash":"","keyId":"","signature":"","body":{}}`,
		`{"seq":1,"type":"x","actor":"a","at":"2026-10-12T09:00:00Z","prevHash":"","hash":"","keyId":"","signature":"","body":[1]}`,
		`{"seq":1,"type":"x","actor":"a","at":"2026-10-12T09:00:00Z","prevHash":"","hash":"","keyId":"","signature":"","body":{}} {}`,
	} {
		if _, err := ParseExport(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("ParseExport(%q) = %v, want an error naming the line", bad, err)
		}
	}
}

func FuzzParseExport(f *testing.F) {
	s := newMemSigner(f)
	var buf bytes.Buffer
	_ = WriteExport(&buf, build(f, s, 3))
	f.Add(buf.Bytes())
	f.Add([]byte(`{"seq":1,"body":{"a":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseExport(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever parses can be verified without panicking, and re-exports to the same
		// records.
		_ = Verify(recs, Options{Keys: keys(s)})
		var out bytes.Buffer
		if err := WriteExport(&out, recs); err != nil {
			t.Fatal(err)
		}
		again, err := ParseExport(&out)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-export: %v", err)
		}
		for i := range recs {
			if !bytes.Equal(again[i].Body, bytes.TrimSpace(recs[i].Body)) && !json.Valid(recs[i].Body) {
				t.Fatalf("entry %d body changed", i)
			}
		}
	})
}

// TestProblemsShowWholeHashes pins that a problem comparing two hashes prints both in
// full (issue 34 item 7): cut to 12 digits, hashes that differ after the 12th read as
// the same hash.
func TestProblemsShowWholeHashes(t *testing.T) {
	s := newMemSigner(t)
	recs := build(t, s, 3)
	// flip changes the last hex digit only.
	flip := func(h string) string {
		last := "0"
		if strings.HasSuffix(h, "0") {
			last = "1"
		}
		return h[:len(h)-1] + last
	}
	badPrev := clone(recs)
	badPrev[1].PrevHash = flip(recs[0].Hash)
	badHash := clone(recs)
	badHash[1].Hash = flip(recs[1].Hash)
	head := warrant.AuditHead{Seq: 3, Hash: flip(recs[2].Hash)}
	recomputed, err := Hash(badPrev[1].PrevHash, recs[1].Body)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		recs []warrant.AuditRecord
		opts Options
		want []string // each must appear in the problems, whole
	}{
		{"head you kept", recs, Options{Keys: keys(s), Head: &head}, []string{recs[2].Hash, head.Hash}},
		{"trust root you kept", recs, Options{Keys: keys(s), TrustRoot: flip(recs[0].Hash)}, []string{recs[0].Hash, flip(recs[0].Hash)}},
		{"prev_hash", badPrev, Options{Keys: keys(s)}, []string{badPrev[1].PrevHash, recs[0].Hash, recomputed}},
		{"hash of the body", badHash, Options{Keys: keys(s)}, []string{badHash[1].Hash, recs[1].Hash}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsAt(Verify(tc.recs, tc.opts))
			for _, h := range tc.want {
				if !strings.Contains(got, h) {
					t.Errorf("problems lack the whole hash %s:\n%s", h, got)
				}
			}
			if strings.Contains(got, "…") {
				t.Errorf("a hash was shortened:\n%s", got)
			}
		})
	}
}
