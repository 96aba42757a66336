package localapp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateAndOpen: init creates the catalog and the log key, never over an existing
// key; open for writing needs the key and says where it comes from; read-only needs none.
func TestCreateAndOpen(t *testing.T) {
	dir := t.TempDir()
	c := ToolwarrantConfig{Catalog: filepath.Join(dir, "c.db"), LogKey: filepath.Join(dir, "c.db.logkey"), Identity: "op"}
	w, err := CreateToolwarrant(t.Context(), c, "ed25519")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := CreateToolwarrant(t.Context(), c, ""); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("init over an existing key: %v", err)
	}
	if w, err = OpenToolwarrant(t.Context(), c); err != nil || w.LogKey == nil || w.Service == nil {
		t.Fatalf("open: %+v, %v", w, err)
	}
	w.Close()
	if err := os.Remove(c.LogKey); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenToolwarrant(t.Context(), c); err == nil || !strings.Contains(err.Error(), "TOOLWARRANT_LOG_KEY") {
		t.Errorf("open without the key: %v", err)
	}
	c.ReadOnly = true
	if w, err = OpenToolwarrant(t.Context(), c); err != nil || w.LogKey != nil {
		t.Fatalf("read-only open: %+v, %v", w, err)
	}
	w.Close()
}
