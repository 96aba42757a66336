package sqlitestore

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// v1Copy copies testdata/catalog-v1.db — a schema version 1 catalog written by the
// format-1 driver (before the domain's Index) through catalogtest.Scenario — into a
// private file of its own.
func v1Copy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "catalog-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func fileSchema(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(t.Context(), `SELECT value FROM catalog_meta WHERE key = 'schema_version'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUpgradeFromSchema1: a catalog written by the format-1 driver reads exactly as that
// driver read it — opened read-only (its derived state derived in memory, the file left
// as it is), then opened for writing (upgraded once to schema 2), then again — and takes
// new crawls and decisions afterwards.
func TestUpgradeFromSchema1(t *testing.T) {
	ctx := t.Context()
	path := v1Copy(t)
	if v := fileSchema(t, path); v != "1" {
		t.Fatalf("fixture schema version %q, want 1", v)
	}
	read := func(what string, readOnly bool) {
		t.Helper()
		c, err := OpenCatalog(ctx, CatalogConfig{Path: path, ReadOnly: readOnly})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer c.Close()
		if got := catalogtest.Golden(t, c); string(got) != string(catalogtest.Catalog1Golden) {
			t.Errorf("%s: reads differ from the format-1 driver's:\n%s", what, got)
		}
	}
	read("read-only open of schema 1", true)
	if v := fileSchema(t, path); v != "1" {
		t.Errorf("a read-only open changed the schema version to %q", v)
	}
	read("first open for writing (the upgrade)", false)
	if v := fileSchema(t, path); v != catalogSchemaVersion {
		t.Errorf("schema version after the upgrade %q, want %q", v, catalogSchemaVersion)
	}
	read("open after the upgrade", false)
	read("read-only open after the upgrade", true)

	c, err := OpenCatalog(ctx, CatalogConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svc, err := warrant.New(warrant.Config{Catalog: c, Identity: "crawler"})
	if err != nil {
		t.Fatal(err)
	}
	raw, dA4 := catalogtest.Def("a", "A4")
	res, err := svc.Ingest(ctx, warrant.Listing{Server: "s", Tools: []warrant.RawTool{{Name: "a", Raw: raw}}})
	if err != nil || res.Crawl != 6 || len(res.New) != 1 || strings.Join(res.Removed, ",") != "b,c,new" {
		t.Fatalf("crawl after the upgrade: %+v, %v", res, err)
	}
	_, dA := catalogtest.Def("a", "A")
	if err := svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "a", Digest: dA4, Kind: warrant.DecisionApproved, Actor: "zoe", Expect: dA}); err != nil {
		t.Fatalf("decision after the upgrade: %v", err)
	}
	tools, err := c.ServerTools(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tools {
		want := warrant.StateRemoved // the crawl lists a alone
		if r.Tool == "a" {
			want = warrant.StateApproved
		}
		if r.State() != want {
			t.Errorf("%s after the upgrade, a crawl and a decision: %+v (state %s), want %s", r.Tool, r, r.State(), want)
		}
	}
	if a := tools[0]; a.Tool != "a" || a.Current != dA4 || a.Previous != dA || a.Versions != 3 {
		t.Errorf("a = %+v", a)
	}
}

// TestUpgradeIsGuarded: after the upgrade, the derived state is guarded like the rest.
func TestUpgradeIsGuarded(t *testing.T) {
	ctx := t.Context()
	path := v1Copy(t)
	c, err := OpenCatalog(ctx, CatalogConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`DELETE FROM server_index`,
		`UPDATE servers SET last_source_crawl = 2 WHERE name = 's'`,
		`UPDATE approvals SET kinds = '{}'`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err == nil {
			t.Errorf("%s: accepted", stmt)
		}
	}
}
