package toolwarrant

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// The oracle of these tests is golang.org/x/mod/sumdb/note and sumdb/tlog, never our code:
// the checkpoint is opened with note.Open given only the published verifier key, the root
// is recomputed from the catalog's bodies with tlog, and proofs are checked with
// tlog.CheckRecord and tlog.CheckTree.

// hashes is a tlog.HashReader over stored hashes kept by index: the oracle's own tree.
type hashes map[int64]tlog.Hash

func (h hashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		v, ok := h[x]
		if !ok {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = v
	}
	return out, nil
}

// oracleRoot is tlog's root of the catalog's first n entry bodies.
func oracleRoot(t *testing.T, w *world, n int64) tlog.Hash {
	t.Helper()
	recs, err := w.cat.AuditRecords(t.Context(), 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	h := hashes{}
	for i := int64(0); i < n; i++ {
		hs, err := tlog.StoredHashes(i, recs[i].Body, h)
		if err != nil {
			t.Fatal(err)
		}
		base := tlog.StoredHashIndex(0, i)
		for j, x := range hs {
			h[base+int64(j)] = x
		}
	}
	root, err := tlog.TreeHash(n, h)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// openCheckpoint opens a checkpoint note with sumdb/note given only vkey and returns its
// origin, size and root.
func openCheckpoint(t *testing.T, vkey string, b []byte) (string, int64, tlog.Hash) {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("note.NewVerifier(%q): %v", vkey, err)
	}
	n, err := note.Open(b, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open: %v\n%s", err, b)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("checkpoint text %q is not origin, size, root", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		t.Fatal(err)
	}
	return lines[0], size, root
}

func (w *world) tw(t *testing.T, args ...string) run {
	t.Helper()
	bin, _ := binaries(t)
	return tw(t, bin, w.dir, args...)
}

func (w *world) ingest(t *testing.T, n int) {
	t.Helper()
	raw, _ := catalogtest.Def("t", "one")
	for range n {
		if _, err := w.svc.Ingest(t.Context(), warrant.Listing{Server: "s", Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointNoteAndProofsVerifyWithXMod: issue 18's first "done when".
func TestCheckpointNoteAndProofsVerifyWithXMod(t *testing.T) {
	w := newWorld(t)
	cps := filepath.Join(w.dir, "cps")
	r := w.tw(t, "audit", "checkpoint", "--dir", cps, "--origin", "example.com/toolwarrant/test")
	if r.code != 0 || !strings.Contains(r.stderr, "created checkpoint key") {
		t.Fatalf("audit checkpoint: %s", r)
	}
	vkey := strings.TrimSpace(w.tw(t, "audit", "key", "--checkpoint", "--origin", "example.com/toolwarrant/test").stdout)
	head, _ := w.cat.AuditHead(t.Context())
	b, err := os.ReadFile(filepath.Join(cps, fmt.Sprintf("%d.note", head.Seq)))
	if err != nil {
		t.Fatal(err)
	}
	origin, size, root := openCheckpoint(t, vkey, b)
	if origin != "example.com/toolwarrant/test" || size != head.Seq || root != oracleRoot(t, w, size) {
		t.Fatalf("checkpoint %s %d %s; want size %d and tlog's root %s", origin, size, root, head.Seq, oracleRoot(t, w, size))
	}

	// audit prove: a c2sp.org/tlog-proof whose extra line is the entry's body.
	recs, _ := w.cat.AuditRecords(t.Context(), 0, 1000)
	for _, seq := range []int64{1, 3, size} {
		r := w.tw(t, "audit", "prove", strconv.FormatInt(seq, 10), "--origin", origin)
		if r.code != 0 {
			t.Fatalf("audit prove %d: %s", seq, r)
		}
		proofPart, cp, ok := strings.Cut(r.stdout, "\n\n")
		lines := strings.Split(proofPart, "\n")
		if !ok || lines[0] != "c2sp.org/tlog-proof@v1" || !strings.HasPrefix(lines[1], "extra ") || lines[2] != "index "+strconv.FormatInt(seq-1, 10) {
			t.Fatalf("audit prove %d printed %q", seq, r.stdout)
		}
		body, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[1], "extra "))
		if err != nil || string(body) != string(recs[seq-1].Body) {
			t.Fatalf("extra is not entry %d's body: %q", seq, body)
		}
		var proof tlog.RecordProof
		for _, l := range lines[3:] {
			h, err := tlog.ParseHash(l)
			if err != nil {
				t.Fatal(err)
			}
			proof = append(proof, h)
		}
		_, psize, proot := openCheckpoint(t, vkey, []byte(cp))
		if err := tlog.CheckRecord(proof, psize, proot, seq-1, tlog.RecordHash(body)); err != nil {
			t.Errorf("tlog.CheckRecord of entry %d: %v", seq, err)
		}
		if err := tlog.CheckRecord(proof, psize, proot, seq-1, tlog.RecordHash(append(body, ' '))); err == nil {
			t.Errorf("the proof of entry %d also proves a changed body", seq)
		}
	}

	// More entries, a second checkpoint, and the consistency proof between the two.
	w.ingest(t, 5)
	if r := w.tw(t, "audit", "checkpoint", "--dir", cps, "--origin", origin); r.code != 0 {
		t.Fatalf("second checkpoint: %s", r)
	}
	head2, _ := w.cat.AuditHead(t.Context())
	b2, _ := os.ReadFile(filepath.Join(cps, fmt.Sprintf("%d.note", head2.Seq)))
	_, size2, root2 := openCheckpoint(t, vkey, b2)
	if size2 != head2.Seq || root2 != oracleRoot(t, w, size2) {
		t.Fatalf("second checkpoint %d %s", size2, root2)
	}
	r = w.tw(t, "audit", "consistency", strconv.FormatInt(size, 10), strconv.FormatInt(size2, 10))
	if r.code != 0 {
		t.Fatalf("audit consistency: %s", r)
	}
	var tp tlog.TreeProof
	for _, l := range strings.Fields(r.stdout) {
		h, err := tlog.ParseHash(l)
		if err != nil {
			t.Fatal(err)
		}
		tp = append(tp, h)
	}
	if err := tlog.CheckTree(tp, size2, root2, size, root); err != nil {
		t.Errorf("tlog.CheckTree %d → %d: %v", size, size2, err)
	}
	if r := w.verify(t, "--checkpoints", cps); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("checkpoint %d of %s", size2, origin)) {
		t.Errorf("audit verify --checkpoints: %s", r)
	}
	var vj struct {
		Tree        struct{ Size int64 }
		Checkpoints []struct {
			Origin string
			Size   int64
		}
	}
	if r := w.tw(t, "audit", "verify", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &vj) != nil ||
		vj.Tree.Size != size2 || len(vj.Checkpoints) != 1 || vj.Checkpoints[0].Size != size2 || vj.Checkpoints[0].Origin != origin {
		t.Errorf("audit verify --json (anchored on the last seen checkpoint, now %d): %s", size2, r)
	}
}

// TestPlainVerifyCatchesTamperingAfterACheckpoint: issue 18's second "done when". Both
// forgeries verify on their own (TestTamperingCaughtByAuditVerify shows it); after a
// checkpoint, plain `audit verify` — no flag — exits 1 naming the checkpoint.
func TestPlainVerifyCatchesTamperingAfterACheckpoint(t *testing.T) {
	setup := func(t *testing.T) (*world, *sql.DB, warrant.AuditHead) {
		w := newWorld(t)
		if r := w.tw(t, "audit", "checkpoint", "--dir", filepath.Join(w.dir, "cps")); r.code != 0 {
			t.Fatalf("audit checkpoint: %s", r)
		}
		if r := w.verify(t); r.code != 0 || !strings.Contains(r.stderr, "consistent with checkpoint") {
			t.Fatalf("untouched log: %s", r)
		}
		head, _ := w.cat.AuditHead(t.Context())
		return w, tamperable(t, w), head
	}
	t.Run("newest entries deleted, head moved back", func(t *testing.T) {
		w, db, head := setup(t)
		recs, _ := w.cat.AuditRecords(t.Context(), 0, 1000)
		keep := recs[len(recs)-3]
		if _, err := db.Exec(`DELETE FROM audit WHERE seq > ?`, keep.Seq); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1`, keep.Seq, keep.Hash); err != nil {
			t.Fatal(err)
		}
		r := w.verify(t)
		want := fmt.Sprintf("before checkpoint %d of ", head.Seq)
		if r.code != 1 || !strings.Contains(r.stdout, want) {
			t.Errorf("audit verify: %s\nwant exit 1 and %q", r, want)
		}
		// audit prove contradicts the same checkpoint (exit 1), not "no checkpoint" (2).
		r = w.tw(t, "audit", "prove", "3")
		want = fmt.Sprintf("the log has %d entries, fewer than checkpoint %d of ", keep.Seq, head.Seq)
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("audit prove 3: %s\nwant exit 1 and %q", r, want)
		}
	})
	t.Run("newest entry rewritten and re-signed with the log key", func(t *testing.T) {
		w, db, head := setup(t)
		forgeNewest(t, w, db, 4)
		r := w.verify(t)
		want := fmt.Sprintf("but checkpoint %d of ", head.Seq)
		if r.code != 1 || !strings.Contains(r.stdout, want) {
			t.Errorf("audit verify: %s\nwant exit 1 and %q", r, want)
		}
		// And the checkpoint command refuses to sign the fork.
		if r := w.tw(t, "audit", "checkpoint", "--dir", filepath.Join(w.dir, "cps2")); r.code != 1 {
			t.Errorf("audit checkpoint on the rewritten log: %s, want exit 1", r)
		}
	})
}
