package sqlitestore

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

func newTestCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := OpenCatalog(t.Context(), CatalogConfig{Path: filepath.Join(t.TempDir(), "toolwarrant.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCatalogConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) warrant.Catalog { return newTestCatalog(t) })
}

func TestCatalogFileIsPrivate(t *testing.T) {
	c := newTestCatalog(t)
	for _, p := range []string{c.Path(), c.Path() + "-wal"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode = %o, want 600", filepath.Base(p), perm)
		}
	}
}

func TestOpenCatalogRefusals(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	if _, err := OpenCatalog(ctx, CatalogConfig{Path: path}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "toolwarrant init") {
		t.Errorf("missing catalog: %v", err)
	}
	c, err := OpenCatalog(ctx, CatalogConfig{Path: path, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := OpenCatalog(ctx, CatalogConfig{Path: path, Create: true}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("init over an existing catalog: %v", err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := OpenCatalog(ctx, CatalogConfig{Path: path})
		if !errors.Is(err, ErrCatalogPermissions) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %o: %v", mode, err)
		}
		_, err = OpenCatalog(ctx, CatalogConfig{Path: path, ReadOnly: true})
		if !errors.Is(err, ErrCatalogPermissions) {
			t.Errorf("mode %o read-only: %v", mode, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := OpenCatalog(ctx, CatalogConfig{Path: path, ReadOnly: true}); err != nil {
		t.Errorf("read-only open: %v", err)
	} else {
		if err := c.AppendAudit(ctx, warrant.AuditAppend{Prev: warrant.Genesis(), Records: catalogtest.Records(warrant.Genesis(), 1, "x")}); err == nil {
			t.Error("a read-only catalog accepted a write")
		}
		c.Close()
	}
	// A Padlock database, or any other file, is not a catalog.
	other := filepath.Join(dir, "locker.db")
	s, err := Open(ctx, Config{Path: other})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := OpenCatalog(ctx, CatalogConfig{Path: other}); err == nil || !strings.Contains(err.Error(), "not a toolwarrant catalog") {
		t.Errorf("Padlock database opened as a catalog: %v", err)
	}
}

// TestHistoryRefusesUpdateAndDelete goes around the driver: a plain database/sql handle on
// the file, as an operator with the sqlite3 shell would have, tries to rewrite history.
func TestHistoryRefusesUpdateAndDelete(t *testing.T) {
	ctx := t.Context()
	c := newTestCatalog(t)
	svc, err := warrant.New(warrant.Config{Catalog: c, Identity: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddServer(ctx, warrant.Server{Name: "s", URL: "https://s.example.com/mcp"}); err != nil {
		t.Fatal(err)
	}
	raw, d := catalogtest.Def("t", "one")
	if _, err := svc.Ingest(ctx, warrant.Listing{Server: "s", Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "t", Digest: d, Kind: warrant.DecisionApproved}); err != nil {
		t.Fatal(err)
	}
	head, _ := c.AuditHead(ctx)
	if err := c.AppendAudit(ctx, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1, "trust_changed")}); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", "file:"+c.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`UPDATE versions SET canonical = x'7b7d'`,
		`DELETE FROM versions`,
		`UPDATE observations SET digest = 'sha256:00'`,
		`DELETE FROM observations`,
		`UPDATE crawls SET crawled_by = 'mallory'`,
		`DELETE FROM crawls`,
		`UPDATE proposals SET crawl = 9`,
		`DELETE FROM proposals`,
		`UPDATE decisions SET actor = 'mallory'`,
		`DELETE FROM decisions`,
		`UPDATE audit SET body = x'7b7d'`,
		`DELETE FROM audit`,
		`DELETE FROM servers`,
		`UPDATE servers SET url = 'https://evil.example.com/'`,
		`UPDATE servers SET last_crawl = 0`,
		`DELETE FROM approvals`,
		`UPDATE approvals SET digest = NULL`,
		`DELETE FROM audit_head`,
		`UPDATE audit_head SET seq = 0, hash = '` + warrant.GenesisHash + `'`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") && !strings.Contains(err.Error(), "never") && !strings.Contains(err.Error(), "only") {
			t.Errorf("%s: err = %v, want a trigger's refusal", stmt, err)
		}
	}
	if v, err := c.Version(ctx, "s", "t", d); err != nil || string(v.Canonical) != string(raw) {
		t.Errorf("version after the attempts: %v %v", v, err)
	}
}
