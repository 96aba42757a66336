package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gowebpki/jcs"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.txtar from the current output")

// doc is one JSON document of a test corpus.
type doc struct {
	name string
	json []byte
}

// toolDocs returns the MCP tool definitions of testdata/tools.txtar.
func toolDocs(t testing.TB) []doc {
	t.Helper()
	a := readArchive(t, "testdata/tools.txtar")
	docs := make([]doc, 0, len(a.names))
	for _, name := range a.names {
		docs = append(docs, doc{name, a.files[name]})
	}
	if len(docs) < 36 {
		t.Fatalf("tools.txtar has %d tools, want at least 36", len(docs))
	}
	return docs
}

// rfcDocs returns the input documents of testdata/rfc8785.txtar.
func rfcDocs(t testing.TB) []doc {
	t.Helper()
	a := readArchive(t, "testdata/rfc8785.txtar")
	var docs []doc
	for _, name := range a.names {
		if strings.HasSuffix(name, ".input.json") {
			docs = append(docs, doc{name, a.files[name]})
		}
	}
	return docs
}

const goldenHeader = `This file pins the RFC 8785 canonical form of every tool in tools.txtar, and the SHA-256
of that form as a toolwarrant tool digest (and an agentgate.lock schema hash) would be
computed from it. Each section is named after the tool; its first line is "sha256:" and the
lowercase hex digest, its second line the canonical bytes. A change here means every
stored digest of such a tool changes: it must be a deliberate fix of canon, never a side
effect. The canonical forms are also checked against github.com/gowebpki/jcs and against
node by other tests, so this file is not merely our output written down.

Regenerate with: go test ./internal/canon/ -run TestToolsGolden -update
`

func TestToolsGolden(t *testing.T) {
	docs := toolDocs(t)
	got := archive{comment: goldenHeader, files: map[string][]byte{}}
	for _, d := range docs {
		out, err := Transform(d.json)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		sum := sha256.Sum256(out)
		name := strings.TrimSuffix(d.name, ".json")
		got.names = append(got.names, name)
		got.files[name] = []byte("sha256:" + hex.EncodeToString(sum[:]) + "\n" + string(out) + "\n")
	}
	const path = "testdata/tools.golden.txtar"
	if *update {
		if err := os.WriteFile(path, formatArchive(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readArchive(t, path)
	if diff := cmp.Diff(want.names, got.names); diff != "" {
		t.Errorf("golden tool names mismatch (-want +got):\n%s", diff)
	}
	for _, name := range got.names {
		if diff := cmp.Diff(string(want.files[name]), string(got.files[name])); diff != "" {
			t.Errorf("%s: canonical form or digest changed (-want +got):\n%s", name, diff)
		}
	}
}

// TestMatchesGowebpki compares Transform with github.com/gowebpki/jcs, an independent
// implementation, on every document both accept.
func TestMatchesGowebpki(t *testing.T) {
	docs := append(toolDocs(t), rfcDocs(t)...)
	for _, tc := range transformCases() {
		docs = append(docs, doc{tc.name, []byte(tc.in)})
	}
	both := 0
	for _, d := range docs {
		ours, err := Transform(d.json)
		if err != nil {
			t.Errorf("%s: %v", d.name, err)
			continue
		}
		theirs, err := jcs.Transform(d.json)
		if err != nil {
			t.Logf("%s: gowebpki/jcs refuses it (%v); skipped", d.name, err)
			continue
		}
		both++
		if diff := cmp.Diff(string(theirs), string(ours)); diff != "" {
			t.Errorf("%s: differs from gowebpki/jcs (-theirs +ours):\n%s", d.name, diff)
		}
	}
	if both < len(toolDocs(t)) {
		t.Errorf("only %d documents were compared; gowebpki/jcs should accept the whole tool corpus", both)
	}
}
