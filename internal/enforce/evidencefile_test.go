package enforce

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseEvidence(t *testing.T) {
	ok := `{"servers":[{"name":"s","url":"http://127.0.0.1:1/mcp","tools":[{"name":"a","approved":"sha256:` + strings.Repeat("a", 64) + `"}]}]}`
	doc, err := ParseEvidence([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := doc.Server("s"); len(s.Approved()) != 1 {
		t.Errorf("approved = %v", s.Approved())
	}
	bad := map[string]string{
		"unknown field": `{"servers":[],"x":1}`,
		"dup server":    `{"servers":[{"name":"s","tools":[]},{"name":"s","tools":[]}]}`,
		"dup tool":      `{"servers":[{"name":"s","tools":[{"name":"a"},{"name":"a"}]}]}`,
		"bad digest":    `{"servers":[{"name":"s","tools":[{"name":"a","approved":"sha256:AB"}]}]}`,
		"upper hex":     `{"servers":[{"name":"s","tools":[{"name":"a","crawled":"sha256:` + strings.Repeat("A", 64) + `"}]}]}`,
		"trailing data": ok + `{}`,
		"not an object": `[]`,
	}
	for name, in := range bad {
		if _, err := ParseEvidence([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestEvidenceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.json")
	f := &EvidenceFile{Path: path}
	if _, err := f.Snapshot(t.Context(), "s"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(path, []byte(`{"servers":[{"name":"s","tools":[{"name":"a"}]}]}`), 0o600)
	s, err := f.Snapshot(t.Context(), "s")
	if err != nil || len(s.Tools) != 1 {
		t.Fatalf("%v %v", s, err)
	}
	if _, err := f.Snapshot(t.Context(), "t"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
	os.WriteFile(path, []byte(`{"servers":`), 0o600)
	if _, err := f.Snapshot(t.Context(), "s"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("torn file: %v", err)
	}
}

func TestJSONLRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "obs.jsonl")
	r := &JSONLRecorder{Path: path}
	if err := r.Record(t.Context(), []Observation{{Server: "s", Tool: "a", Kind: ObservedDrift, Digest: "sha256:1"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Record(t.Context(), []Observation{{Server: "s", Tool: "b", Kind: ObservedNew}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"kind":"drift"`) {
		t.Errorf("file = %s", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
}
