package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTablesUpToDate guards tables.go: it must be exactly what the generator makes from
// the committed data files. Run `go generate ./internal/textguard` when it fails.
func TestTablesUpToDate(t *testing.T) {
	want, err := generate(filepath.Join("..", "..", "data"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "tables.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/textguard/tables.go is stale: run go generate ./internal/textguard")
	}
}

func TestGeneratedSourceIsASCII(t *testing.T) {
	src, err := generate(filepath.Join("..", "..", "data"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range src {
		if c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t') {
			t.Fatalf("generated source has byte %#x at %d; it must be printable ASCII", c, i)
		}
	}
}

func TestDataVersionChecked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "confusables.txt")
	if err := os.WriteFile(p, []byte("# confusables.txt\n# Version: 14.0.0\n0430 ;\t0061 ;\tMA\t# x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfusables(p); err == nil {
		t.Fatal("readConfusables accepted a file of the wrong version")
	}
}
