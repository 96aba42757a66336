package checkpoint_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

type edSigner struct{ k ed25519.PrivateKey }

func (s edSigner) Public() crypto.PublicKey { return s.k.Public() }
func (s edSigner) SignMessage(_ context.Context, m []byte) ([]byte, error) {
	return ed25519.Sign(s.k, m), nil
}

func newEd(t testing.TB) edSigner {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return edSigner{k}
}

// TestTreeAgainstTlog: the tree's roots and proofs are tlog's, for every size up to 40.
func TestTreeAgainstTlog(t *testing.T) {
	tr := &audit.Tree{}
	var bodies [][]byte
	for i := range 40 {
		b := []byte(`{"seq":` + strings.Repeat("1", i+1) + `}`)
		bodies = append(bodies, b)
		if err := tr.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	for n := int64(1); n <= tr.Size(); n++ {
		root, err := tr.Root(n)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < n; i++ {
			p, err := tr.InclusionProof(i, n)
			if err != nil || tlog.CheckRecord(p, n, root, i, tlog.RecordHash(bodies[i])) != nil {
				t.Fatalf("inclusion of %d in %d: %v", i, n, err)
			}
		}
		for old := int64(1); old <= n; old++ {
			oldRoot, _ := tr.Root(old)
			p, err := tr.ConsistencyProof(old, n)
			if err != nil || tlog.CheckTree(p, n, root, old, oldRoot) != nil {
				t.Fatalf("consistency %d → %d: %v", old, n, err)
			}
		}
	}
	if _, err := tr.Root(41); !errors.Is(err, audit.ErrSize) {
		t.Errorf("Root(41) = %v", err)
	}
}

// TestNoteAndCosignatures: a note SignNote writes opens with sumdb/note; a cosignature
// torchwood's CosignatureSigner makes (what litewitness returns) verifies under our
// WitnessVerifier and under nothing else; a changed note does not open.
func TestNoteAndCosignatures(t *testing.T) {
	s := newEd(t)
	root := tlog.RecordHash([]byte("x"))
	b, err := checkpoint.SignNote(t.Context(), s, "example.com/log", 7, root)
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := checkpoint.VerifierKey("example.com/log", s.Public())
	v, _ := note.NewVerifier(vkey)
	if _, err := note.Open(b, note.VerifierList(v)); err != nil {
		t.Fatalf("note.Open: %v", err)
	}
	_, wk, _ := ed25519.GenerateKey(rand.Reader)
	cs, err := torchwood.NewCosignatureSigner("witness.example/w", wk)
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(&note.Note{Text: "example.com/log\n7\n" + root.String() + "\n"}, cs)
	if err != nil {
		t.Fatal(err)
	}
	_, sigs, _ := strings.Cut(string(cosigned), "\n\n")
	wv, err := checkpoint.WitnessVerifier(cs.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := checkpoint.OpenNote(checkpoint.WithCosignatures(b, []byte(sigs)), vkey, []note.Verifier{wv})
	if err != nil || len(n.Witnesses) != 1 || n.Size != 7 || n.Root != root {
		t.Fatalf("OpenNote with the cosignature: %+v, %v", n, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	cs2, _ := torchwood.NewCosignatureSigner("witness.example/w", other)
	wv2, _ := checkpoint.WitnessVerifier(cs2.Verifier().String())
	if n, err := checkpoint.OpenNote(checkpoint.WithCosignatures(b, []byte(sigs)), vkey, []note.Verifier{wv2}); err != nil || len(n.Witnesses) != 0 {
		t.Errorf("another witness key counted the cosignature: %+v, %v", n, err)
	}
	changed := strings.Replace(string(b), "\n7\n", "\n8\n", 1)
	if _, err := checkpoint.OpenNote([]byte(changed), vkey, nil); !errors.Is(err, checkpoint.ErrNote) {
		t.Errorf("a changed size opened: %v", err)
	}
	if _, err := checkpoint.SignNote(t.Context(), s, "bad origin", 1, root); err == nil {
		t.Error("an origin with a space was signed")
	}
}

// FuzzParseText: no panics, and what parses is printed back the same.
func FuzzParseText(f *testing.F) {
	f.Add("example.com/log\n7\n" + tlog.RecordHash(nil).String() + "\n")
	f.Add("o\n0\nAA==\n")
	f.Fuzz(func(t *testing.T, s string) {
		origin, size, root, err := checkpoint.ParseText(s)
		if err != nil {
			return
		}
		if back := origin + "\n" + itoa(size) + "\n" + root.String() + "\n"; back != s {
			t.Fatalf("ParseText(%q) printed back as %q", s, back)
		}
	})
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
