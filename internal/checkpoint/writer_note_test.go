package checkpoint_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// TestWriterNotes: with a checkpoint key the writer also writes checkpoints/<size>.note,
// which opens with sumdb/note; it writes the note of an unchanged head once (a deployment
// that gains the key), and refuses to give a note to a log whose tree does not extend the
// newest note, even where no JSON head says so.
func TestWriterNotes(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	notes := newEd(t)
	log := &memLog{}
	bucket := &blob.Mem{}
	w := &checkpoint.Writer{Log: log, Signer: key, Blobs: bucket, Now: func() time.Time { return t0 }, PageSize: 2}
	log.append(t, key, 3, "a")
	if res, err := w.Run(ctx); err != nil || res.Note != "" {
		t.Fatalf("without a checkpoint key: %+v, %v", res, err)
	}
	w.Notes, w.Origin = notes, "example.com/writer"
	res, err := w.Run(ctx)
	if err != nil || res.Written || res.Note != "checkpoints/3.note" {
		t.Fatalf("unchanged head, key added: %+v, %v", res, err)
	}
	log.append(t, key, 4, "b")
	if res, err = w.Run(ctx); err != nil || res.Note != "checkpoints/7.note" {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	vkey, _ := checkpoint.VerifierKey(w.Origin, notes.Public())
	v, _ := note.NewVerifier(vkey)
	b, _ := bucket.Get(ctx, "checkpoints/7.note")
	if n, err := note.Open(b, note.VerifierList(v)); err != nil || !strings.HasPrefix(n.Text, "example.com/writer\n7\n") {
		t.Fatalf("note.Open: %v", err)
	}
	// A bucket holding only the notes, and a log rewritten from entry 3 on and re-signed.
	onlyNotes := &blob.Mem{}
	for _, k := range []string{"checkpoints/3.note", "checkpoints/7.note"} {
		b, _ := bucket.Get(ctx, k)
		_ = onlyNotes.PutIfAbsent(ctx, k, b)
	}
	rewritten := &memLog{}
	rewritten.append(t, key, 2, "a")
	rewritten.append(t, key, 7, "forged")
	w2 := *w
	w2.Log, w2.Blobs = rewritten, onlyNotes
	if _, err := w2.Run(ctx); !errors.Is(err, checkpoint.ErrRewritten) || !strings.Contains(err.Error(), "checkpoint 7 of example.com/writer") {
		t.Errorf("writer on a rewritten log with only notes: %v, want ErrRewritten naming checkpoint 7", err)
	}
}
