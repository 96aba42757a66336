package checkpoint_test

import (
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// TestCosignerAgainstTorchwood: our cosignature/v1 signer's verifier key is the one
// torchwood computes for the same key and name, its cosignature opens under torchwood's
// verifier and ours with sumdb/note, carries the clock's time, and counts on the log's note.
func TestCosignerAgainstTorchwood(t *testing.T) {
	s := newEd(t)
	at := time.Unix(1_760_000_000, 0)
	c, err := checkpoint.NewCosigner("witness.example/team-a", s, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	tw, err := torchwood.NewCosignatureSigner("witness.example/team-a", s.k)
	if err != nil {
		t.Fatal(err)
	}
	if c.VerifierKey() != tw.Verifier().String() {
		t.Fatalf("verifier key %s, torchwood says %s", c.VerifierKey(), tw.Verifier().String())
	}
	root := tlog.RecordHash([]byte("x"))
	logNote, _ := checkpoint.SignNote(t.Context(), newEd(t), "example.com/log", 7, root)
	text, _, _ := strings.Cut(string(logNote), "\n\n")
	cosigned, err := note.Sign(&note.Note{Text: text + "\n"}, c)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cosigned, note.VerifierList(tw.Verifier()))
	if err != nil || len(n.Sigs) != 1 {
		t.Fatalf("torchwood's verifier: %+v, %v", n, err)
	}
	if ts, err := torchwood.CosignatureTimestamp(n.Sigs[0]); err != nil || ts != at.Unix() {
		t.Errorf("timestamp %d, %v; want %d", ts, err, at.Unix())
	}
	ours, err := checkpoint.WitnessVerifier(c.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(cosigned, note.VerifierList(ours)); err != nil {
		t.Errorf("our verifier: %v", err)
	}
	if _, err := checkpoint.NewCosigner("bad name", s, nil); err == nil {
		t.Error("a name with a space was accepted")
	}
	if _, err := c.Sign([]byte("x\n")); err != nil {
		t.Errorf("Sign: %v", err)
	}
	early, _ := checkpoint.NewCosigner("w.example/w", s, func() time.Time { return time.Unix(0, 0) })
	if _, err := early.Sign([]byte(text + "\n")); err == nil {
		t.Error("a cosignature at time 0 was made; tlog-witness forbids it")
	}
}
