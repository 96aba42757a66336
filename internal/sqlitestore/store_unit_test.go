package sqlitestore

import "testing"

// TestOpenDBRelativePath: a relative path opens the file it names (as the README's
// BENCH_DIR=. benchmark does), not a URI authority SQLite refuses.
func TestOpenDBRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	db, err := openDB("rel.db", "rw", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE t (k INTEGER)`); err != nil {
		t.Fatalf("a relative path: %v", err)
	}
}
