package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var t0 = time.Date(2026, 10, 12, 9, 30, 0, 0, time.UTC)

// memLog is an audit log in memory, chained and signed by the audit package.
type memLog struct {
	recs []warrant.AuditRecord
}

func (l *memLog) AuditHead(context.Context) (warrant.AuditHead, error) {
	if len(l.recs) == 0 {
		return warrant.Genesis(), nil
	}
	r := l.recs[len(l.recs)-1]
	return warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}, nil
}

func (l *memLog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	var out []warrant.AuditRecord
	for _, r := range l.recs {
		if r.Seq > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (l *memLog) append(t *testing.T, s signer.Signer, n int, tag string) {
	t.Helper()
	head, _ := l.AuditHead(t.Context())
	var evs []warrant.Event
	for i := range n {
		evs = append(evs, warrant.Event{Type: "crawl_observed", Actor: "crawler", At: t0.Add(time.Duration(len(l.recs)+i) * time.Minute),
			Body: json.RawMessage(fmt.Sprintf(`{"tag":%q,"i":%d}`, tag, i))})
	}
	recs, err := (&audit.Chainer{Signer: s}).Chain(t.Context(), head, evs)
	if err != nil {
		t.Fatal(err)
	}
	l.recs = append(l.recs, recs...)
}

func (l *memLog) seq() iter.Seq2[warrant.AuditRecord, error] {
	return func(yield func(warrant.AuditRecord, error) bool) {
		for _, r := range l.recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func newKey(t *testing.T) *keysigner.Signer {
	t.Helper()
	k, err := keysigner.Create(filepath.Join(t.TempDir(), "log.key"), keysigner.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestWriterAndVerify(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	log := &memLog{}
	bucket := &blob.Mem{}
	w := &checkpoint.Writer{Log: log, Signer: key, Blobs: bucket, Now: func() time.Time { return t0 }, PageSize: 2}
	keys := checkpoint.Keys(key.KeyID(), key.Public())

	if res, err := w.Run(ctx); err != nil || res.Written {
		t.Fatalf("empty log: %+v, %v; want nothing written", res, err)
	}
	log.append(t, key, 3, "a")
	res, err := w.Run(ctx)
	if err != nil || !res.Written || res.Key != "checkpoints/3.json" || res.Verified != 3 {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	if res, err := w.Run(ctx); err != nil || res.Written || res.Previous != 3 {
		t.Fatalf("unchanged head: %+v, %v; want nothing written", res, err)
	}
	log.append(t, key, 4, "b")
	if res, err := w.Run(ctx); err != nil || !res.Written || res.Key != "checkpoints/7.json" || res.Verified != 4 || res.Previous != 3 {
		t.Fatalf("second run: %+v, %v", res, err)
	}

	// Verify from the bucket and from a directory copy of it.
	dir := t.TempDir()
	names, _ := bucket.List(ctx, checkpoint.Prefix)
	for _, n := range names {
		b, _ := bucket.Get(ctx, n)
		if err := os.WriteFile(filepath.Join(dir, strings.TrimPrefix(n, checkpoint.Prefix)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []checkpoint.Source{checkpoint.Store{Blobs: bucket, Name: "mem"}, checkpoint.Dir(dir)} {
		rep, n, err := checkpoint.Verify(ctx, log.seq(), src, audit.Options{Keys: keys})
		if err != nil || !rep.OK() || n != 2 || rep.Entries != 7 {
			t.Errorf("%s: verify: %+v, %d checkpoints, %v", src, rep, n, err)
		}
	}

	// A rewrite of the log, re-signed with the log key: consistent on its own, caught by
	// the checkpoints.
	rewritten := &memLog{}
	rewritten.append(t, key, 2, "a")
	rewritten.append(t, key, 6, "forged")
	if rep := audit.Verify(rewritten.recs, audit.Options{Keys: keys}); !rep.OK() {
		t.Fatalf("the rewrite does not verify on its own: %+v", rep)
	}
	rep, _, err := checkpoint.Verify(ctx, rewritten.seq(), checkpoint.Dir(dir), audit.Options{Keys: keys})
	if err != nil || rep.OK() || rep.Problems[0].Seq != 3 || !strings.Contains(rep.Problems[0].Reason, "checkpoint 3") {
		t.Errorf("rewritten log: %+v, %v", rep, err)
	}
	// The writer refuses to certify it.
	w2 := *w
	w2.Log = rewritten
	if _, err := w2.Run(ctx); !errors.Is(err, checkpoint.ErrRewritten) {
		t.Errorf("writer on a rewritten log: %v, want ErrRewritten", err)
	}
	// A truncated log.
	short := &memLog{recs: log.recs[:5]}
	rep, _, _ = checkpoint.Verify(ctx, short.seq(), checkpoint.Dir(dir), audit.Options{Keys: keys})
	if rep.OK() || !strings.Contains(rep.Problems[len(rep.Problems)-1].Reason, "before checkpoint 7") {
		t.Errorf("truncated log: %+v", rep)
	}
	w2.Log = short
	if _, err := w2.Run(ctx); !errors.Is(err, checkpoint.ErrRewritten) {
		t.Errorf("writer on a truncated log: %v, want ErrRewritten", err)
	}

	// A forged checkpoint (someone who can write the bucket but not use the log key).
	forged, _ := checkpoint.Sign(ctx, newKey(t), warrant.AuditHead{Seq: 9, Hash: strings.Repeat("a", 64)}, t0)
	fb, _ := forged.Marshal()
	bucket.Replace(checkpoint.Key(9), fb)
	if _, _, err := checkpoint.Verify(ctx, log.seq(), checkpoint.Store{Blobs: bucket, Name: "mem"}, audit.Options{Keys: keys}); err == nil || !strings.Contains(err.Error(), "not a trusted log key") {
		t.Errorf("forged checkpoint: %v", err)
	}
	if _, err := w.Run(ctx); !errors.Is(err, checkpoint.ErrUntrusted) {
		t.Errorf("writer on a forged last checkpoint: %v, want ErrUntrusted", err)
	}
}

func TestFormat(t *testing.T) {
	key := newKey(t)
	c, err := checkpoint.Sign(t.Context(), key, warrant.AuditHead{Seq: 42, Hash: strings.Repeat("0f", 32)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at":"2026-10-12T09:30:00Z","hash":"` + strings.Repeat("0f", 32) + `","keyId":"` + key.KeyID() + `","seq":42,"signature":"`
	if !strings.HasPrefix(string(b), want) || !strings.HasSuffix(string(b), `","type":"toolwarrant-checkpoint/v1"}`+"\n") {
		t.Errorf("file = %s", b)
	}
	p, err := checkpoint.Parse(b)
	if err != nil || p.Head() != c.Head() || p.Verify(checkpoint.Keys(key.KeyID(), key.Public())) != nil {
		t.Errorf("round trip: %+v, %v", p, err)
	}
	for _, bad := range []string{`{}`, `{"type":"x"}`, strings.Replace(string(b), `"seq":42`, `"seq":0`, 1),
		strings.Replace(string(b), `}`, `,"extra":1}`, 1), string(b) + "{}"} {
		if _, err := checkpoint.Parse([]byte(bad)); !errors.Is(err, checkpoint.ErrFormat) {
			t.Errorf("Parse(%.60s…) = %v, want ErrFormat", bad, err)
		}
	}
	changed := strings.Replace(string(b), `"seq":42`, `"seq":43`, 1)
	if p, err := checkpoint.Parse([]byte(changed)); err != nil || p.Verify(checkpoint.Keys(key.KeyID(), key.Public())) == nil {
		t.Errorf("a changed seq still verifies: %v", err)
	}
	if s, ok := checkpoint.SeqOf("checkpoints/42.json"); !ok || s != 42 {
		t.Errorf("SeqOf = %d, %v", s, ok)
	}
	for _, n := range []string{"042.json", "x.json", "42.json.tmp", "0.json"} {
		if _, ok := checkpoint.SeqOf(n); ok {
			t.Errorf("SeqOf(%q) accepted", n)
		}
	}
}

// FuzzParse: no panics, and whatever parses marshals back to something that parses to
// the same checkpoint.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"at":"2026-10-12T09:30:00Z","hash":"` + strings.Repeat("0f", 32) + `","keyId":"sha256:ab","seq":42,"signature":"AQID","type":"toolwarrant-checkpoint/v1"}`))
	f.Add([]byte(`{"type":"toolwarrant-checkpoint/v1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := checkpoint.Parse(b)
		if err != nil {
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		c2, err := checkpoint.Parse(out)
		if err != nil || c2.Head() != c.Head() || c2.KeyID != c.KeyID || !c2.At.Equal(c.At) || string(c2.Signature) != string(c.Signature) {
			t.Fatalf("round trip of %q: %+v %v", b, c2, err)
		}
	})
}
