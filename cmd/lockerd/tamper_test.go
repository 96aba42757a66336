package main

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

// tamper rewrites one stored payload of the demo pad behind the daemon's back.
func tamper(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{`DROP TRIGGER blocks_no_update`, `UPDATE blocks SET payload = CAST('rewritten' AS BLOB) WHERE pad_id = 'demo-pad-v1' AND seq = 2`} {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
}
