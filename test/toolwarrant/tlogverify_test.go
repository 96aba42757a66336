package toolwarrant

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDocsVerifier runs the verifier docs/transparency-log.md shows (kept byte for byte in
// cmd/toolwarrant/testdata/tlogverify, and checked to be what the docs say): it accepts a
// proof from `audit prove` and refuses one whose entry was changed.
func TestDocsVerifier(t *testing.T) {
	root := testenv.RepoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "cmd/toolwarrant/testdata/tlogverify/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/transparency-log.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(src)+"```\n") {
		t.Fatal("docs/transparency-log.md does not show cmd/toolwarrant/testdata/tlogverify/main.go as it is")
	}
	w := newWorld(t)
	if r := w.tw(t, "audit", "checkpoint", "--dir", filepath.Join(w.dir, "cps")); r.code != 0 {
		t.Fatalf("audit checkpoint: %s", r)
	}
	vkey := strings.TrimSpace(w.tw(t, "audit", "key", "--checkpoint").stdout)
	r := w.tw(t, "audit", "prove", "3")
	if r.code != 0 {
		t.Fatalf("audit prove: %s", r)
	}
	proof := filepath.Join(w.dir, "entry-3.tlog-proof")
	if err := os.WriteFile(proof, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.BuildCommand(t, "./cmd/toolwarrant/testdata/tlogverify")
	out, err := exec.Command(bin, vkey, proof).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "entry 3 of ") {
		t.Fatalf("tlogverify: %v\n%s", err, out)
	}
	// Another entry's body in the extra line: the inclusion proof fails.
	lines := strings.SplitN(r.stdout, "\n", 3)
	other := w.tw(t, "audit", "prove", "4")
	forged := lines[0] + "\n" + strings.SplitN(other.stdout, "\n", 3)[1] + "\n" + lines[2]
	if err := os.WriteFile(proof, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, vkey, proof).CombinedOutput(); err == nil {
		t.Errorf("tlogverify accepted entry 4's body at index 2:\n%s", out)
	}
}
