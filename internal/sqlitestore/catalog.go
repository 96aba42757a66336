package sqlitestore

// The toolwarrant catalog driver. Data model (catalog_schema.go):
//
//	servers       name → url, allow_private, headers (JSON [{header, env}]; names only,
//	              never values), added_at/by, last_crawl (the check-and-set counter),
//	              last_source_crawl                                             guarded
//	crawls        (server, seq) → source, started/finished_at, crawled_by     history
//	observations  (server, seq, tool) → digest | refused                       history
//	versions      (server, tool, digest) → canonical JSON, first seen           history
//	proposals     (server, tool, digest) → opened_at, crawl                    history
//	decisions     id → server, tool, digest, kind, actor, at, expect, ...      history
//	approvals     (server, tool) → digest (NULL: none), decision (the latest),
//	              approved_by/at, decisions, kinds: warrant.ApprovalState       guarded
//	server_index  server → idx: the server's warrant.Index (JSON)               guarded
//	audit         seq → type, actor, at, prev_hash, hash, body, key_id, sig    history
//	audit_head    the one row (seq, hash)                                       guarded
//
// Write algorithm: every write is one IMMEDIATE transaction on the single writer
// connection, so the checks below cannot race with another writer of this file, in this
// process or another:
//
//  1. RecordCrawl reads servers.last_crawl and refuses (ErrConflict) unless the crawl's seq
//     is one more; reads the server's index and applies the crawl to it
//     (warrant.Index.Apply, which checks the record: ErrInvalid); inserts the crawl and its
//     observations; advances last_crawl and last_source_crawl (warrant.Server.After;
//     triggers insist on +1 and an existing crawl); inserts each version and proposal with
//     ON CONFLICT DO NOTHING and, when nothing was inserted, compares the stored bytes
//     (equal: fine, idempotent; different: ErrConflict); stores the index if it changed.
//  2. Decide reads the tool's approval state and applies the decision to it
//     (warrant.ApprovalState.Decide: ErrConflict unless the approved digest is still
//     Decision.Expect); inserts the decision; upserts the approval row with the new state,
//     pointing at the decision.
//  3. Any write carrying audit records reads audit_head and refuses unless it is still
//     AuditAppend.Prev; inserts the records after checking they link (seq+1, prev_hash);
//     moves audit_head to the last one (a trigger insists it moves forward, to a record).
//
// Any error rolls the whole transaction back, so a decision or observation and its audit
// records are stored together or not at all.
//
// Crawls of source 'gateway' (what the gateway processor saw served and did not serve)
// take the next seq like any crawl and carry observations only. The state the domain
// derives from the history — each server's last crawl of source 'crawl' and index, each
// tool's approval state — is stored by the write it derives from and read back: the
// reads derive nothing (Tools, ServerTools and Proposals hand the stored index and
// approval states to warrant.Index). A catalog of schema version 1 (which kept none of
// it) is upgraded once when opened for writing; opened read-only, the state is derived
// from its history once, at open, and kept in memory (catalog_upgrade.go).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var _ warrant.Catalog = (*Catalog)(nil)

// ErrCatalogPermissions is wrapped when a catalog file (or its -wal or -shm companion) can
// be read or written by group or others. The catalog holds who approved what; it is the
// operator's alone.
var ErrCatalogPermissions = errors.New("catalog is accessible to group or others")

// CatalogConfig configures OpenCatalog. Only Path is required.
type CatalogConfig struct {
	// Path is the catalog file.
	Path string
	// Create makes a new catalog (toolwarrant init): the file must not exist; it is
	// created with mode 0600 and the schema. Default false: the file must exist, be a
	// catalog, and be private (mode 0600 or stricter).
	Create bool
	// ReadOnly opens the file for reading only (audit verify); every write method fails.
	// Default false.
	ReadOnly bool
	// BusyTimeout is how long a statement waits for another process's lock. Default 5s.
	BusyTimeout time.Duration
	// ReadConns is the size of the read-only pool. Default 4.
	ReadConns int
}

// Catalog is the SQLite implementation of warrant.Catalog.
type Catalog struct {
	path string
	w    *sql.DB // the one writer connection; nil when read-only
	r    *sql.DB // read-only pool
	// v1 is the derived state of a schema version 1 catalog opened read-only, derived
	// once at open; nil otherwise (the state is in the file).
	v1 *derived
	// pins says the package pins table is there (catalog_packages.go).
	pins bool
	// policies is whether the review policies table exists (catalog_policies.go).
	policies bool
}

// OpenCatalog opens (or, with Create, creates) the catalog at cfg.Path.
//
// It refuses, before opening the database, a file readable or writable by group or others
// (ErrCatalogPermissions), a missing file unless Create (wrapping fs.ErrNotExist), and with
// Create an existing file (wrapping fs.ErrExist). It then refuses a file that is not a
// toolwarrant catalog or has a schema version this build does not understand. A catalog
// of schema version 1 is upgraded to version 2 once, in one transaction, unless opened
// read-only (its derived state is then derived in memory, once).
func OpenCatalog(ctx context.Context, cfg CatalogConfig) (*Catalog, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlitestore: CatalogConfig.Path is required")
	}
	abs, err := openDefaults(cfg.Path, &cfg.BusyTimeout, &cfg.ReadConns)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", cfg.Path, err)
	}
	if cfg.Create {
		if cfg.ReadOnly {
			return nil, errors.New("sqlitestore: Create and ReadOnly exclude each other")
		}
		f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("catalog %s already exists; nothing was changed: %w", cfg.Path, fs.ErrExist)
			}
			return nil, fmt.Errorf("create catalog %s: %w", cfg.Path, err)
		}
		// The umask may have removed bits but never adds any; make the mode exact anyway.
		err = f.Chmod(0o600)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("create catalog %s: %w", cfg.Path, err)
		}
	}
	if err := CheckCatalogPermissions(abs); err != nil {
		return nil, err
	}
	c := &Catalog{path: abs}
	if !cfg.ReadOnly {
		if c.w, err = openDB(abs, "rw", cfg.BusyTimeout, 1); err != nil {
			return nil, err
		}
		if cfg.Create {
			if err := c.migrate(ctx); err != nil {
				c.Close()
				os.Remove(abs)
				return nil, fmt.Errorf("create catalog %s: %w", cfg.Path, err)
			}
		}
	}
	if c.r, err = openDB(abs, "ro", cfg.BusyTimeout, cfg.ReadConns); err != nil {
		c.Close()
		return nil, err
	}
	version, err := c.checkFormat(ctx)
	if err == nil && version == catalogSchemaV1 {
		if c.w != nil {
			err = c.upgrade(ctx)
		} else {
			c.v1, err = deriveFromHistory(ctx, c.r)
		}
	}
	if err == nil {
		err = c.openPackages(ctx)
	}
	if err == nil {
		err = c.openPolicies(ctx)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("catalog %s: %w", cfg.Path, err)
	}
	// SQLite creates -wal and -shm with the database's mode; check them now they exist.
	if err := CheckCatalogPermissions(abs); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// CheckCatalogPermissions returns an error wrapping ErrCatalogPermissions when the catalog
// at path, or its -wal or -shm file, grants any permission to group or others, and one
// wrapping fs.ErrNotExist when path does not exist.
func CheckCatalogPermissions(path string) error {
	for i, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			if i == 0 {
				if errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("no catalog at %s (create one with 'toolwarrant init'): %w", path, fs.ErrNotExist)
				}
				return fmt.Errorf("catalog %s: %w", path, err)
			}
			continue
		}
		if i == 0 && !st.Mode().IsRegular() {
			return fmt.Errorf("catalog %s is not a regular file", path)
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			return fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrCatalogPermissions, p, perm, p)
		}
	}
	return nil
}

func (c *Catalog) migrate(ctx context.Context) error {
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return cwrap("begin migration", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, catalogSchema); err != nil {
		return cwrap("create schema", err)
	}
	for k, v := range map[string]string{"format": catalogFormat, "schema_version": catalogSchemaV1} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO catalog_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, k, v); err != nil {
			return cwrap("record "+k, err)
		}
	}
	g := warrant.Genesis()
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`, g.Seq, g.Hash); err != nil {
		return cwrap("create audit head", err)
	}
	// A new catalog takes the same upgrade as an old one, so both have one schema.
	if err := upgradeTx(ctx, tx); err != nil {
		return err
	}
	return cwrap("commit migration", tx.Commit())
}

// checkFormat returns the catalog's schema version: this build's or the one it upgrades.
func (c *Catalog) checkFormat(ctx context.Context) (string, error) {
	var format, version string
	err := c.r.QueryRowContext(ctx, `SELECT (SELECT value FROM catalog_meta WHERE key = 'format'), (SELECT value FROM catalog_meta WHERE key = 'schema_version')`).Scan(&format, &version)
	if err != nil || format != catalogFormat {
		return "", errors.New("not a toolwarrant catalog (create one with 'toolwarrant init')")
	}
	if version != catalogSchemaVersion && version != catalogSchemaV1 {
		return "", fmt.Errorf("catalog schema version %q is not understood by this build (it understands %q and upgrades %q)", version, catalogSchemaVersion, catalogSchemaV1)
	}
	return version, nil
}

// Close closes every handle. It is safe to call more than once.
func (c *Catalog) Close() error {
	var errs []error
	for _, db := range []*sql.DB{c.w, c.r} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	c.w, c.r = nil, nil
	return errors.Join(errs...)
}

// Path returns the catalog file's absolute path.
func (c *Catalog) Path() string { return c.path }

// cwrap translates driver errors into warrant's sentinels and adds context. The driver's
// text is kept (%v) for people, but is not part of the contract.
func cwrap(op string, err error) error {
	if err == nil {
		return nil
	}
	switch code := sqliteCode(err); {
	case transient(code):
		return fmt.Errorf("%s: %w: %v", op, warrant.ErrUnavailable, err)
	case code == sqlite3.SQLITE_CONSTRAINT:
		return fmt.Errorf("%s: %w: %v", op, warrant.ErrConflict, err)
	case code == sqlite3.SQLITE_READONLY:
		return fmt.Errorf("%s: %w", op, errCatalogReadOnly)
	}
	return fmt.Errorf("%s: %w", op, err)
}

var errCatalogReadOnly = errors.New("sqlitestore: catalog opened read-only")

// write runs fn in one IMMEDIATE transaction on the writer connection, rolled back on any
// error, panic or cancellation.
func (c *Catalog) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if c.w == nil {
		return fmt.Errorf("%s: %w", op, errCatalogReadOnly)
	}
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return cwrap(op+": begin", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return cwrap(op+": commit", tx.Commit())
}

func nanos(t time.Time) int64 { return t.UTC().UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// appendAudit is step 3 of every write: check the head, link and insert the records,
// advance the head.
func appendAudit(ctx context.Context, tx *sql.Tx, a warrant.AuditAppend) error {
	if len(a.Records) == 0 {
		return nil
	}
	if err := checkAuditHead(ctx, tx, a); err != nil {
		return err
	}
	prev := a.Prev
	for _, r := range a.Records {
		if r.Seq != prev.Seq+1 || r.PrevHash != prev.Hash || r.Hash == "" || r.Type == "" {
			return fmt.Errorf("audit record %d does not link to %d (%s): %w", r.Seq, prev.Seq, short(prev.Hash), warrant.ErrInvalid)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit (seq, type, actor, at, prev_hash, hash, body, key_id, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Seq, r.Type, r.Actor, nanos(r.At), r.PrevHash, r.Hash, nonNil(r.Body), r.KeyID, nonNil(r.Signature)); err != nil {
			return cwrap(fmt.Sprintf("append audit record %d", r.Seq), err)
		}
		prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	}
	res, err := tx.ExecContext(ctx, `UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1 AND seq = ? AND hash = ?`, prev.Seq, prev.Hash, a.Prev.Seq, a.Prev.Hash)
	return affectedOne(res, err, "advance audit head")
}

// checkAuditHead refuses a write whose records were chained from a head that is no longer
// the head. Writes call it first, so a lost race is reported as what it is.
func checkAuditHead(ctx context.Context, tx *sql.Tx, a warrant.AuditAppend) error {
	if len(a.Records) == 0 {
		return nil
	}
	var head warrant.AuditHead
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&head.Seq, &head.Hash); err != nil {
		return cwrap("read audit head", err)
	}
	if head != a.Prev {
		return fmt.Errorf("the audit log moved on: its head is at %d (%s), not %d (%s) as read: %w", head.Seq, short(head.Hash), a.Prev.Seq, short(a.Prev.Hash), warrant.ErrConflict)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func affectedOne(res sql.Result, err error, op string) error {
	if err != nil {
		return cwrap(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return cwrap(op, err)
	}
	if n != 1 {
		return fmt.Errorf("%s: %w", op, warrant.ErrConflict)
	}
	return nil
}

// AddServer implements warrant.Catalog.
func (c *Catalog) AddServer(ctx context.Context, s warrant.Server, a warrant.AuditAppend) error {
	if err := s.Validate(); err != nil {
		return err
	}
	headers := slices.Clone(s.Headers)
	warrant.SortHeaders(headers)
	if headers == nil {
		headers = []warrant.HeaderRef{}
	}
	hj, err := json.Marshal(headers)
	if err != nil {
		return fmt.Errorf("add server %q: %w", s.Name, err)
	}
	return c.write(ctx, "add server "+s.Name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO servers (name, url, allow_private, headers, added_at, added_by) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, s.Name, s.URL, boolInt(s.AllowPrivate), string(hj), nanos(s.AddedAt), s.AddedBy)
		if err != nil {
			return cwrap("add server "+s.Name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			old, err := scanServer(tx.QueryRowContext(ctx, `SELECT `+serverColumns+` FROM servers WHERE name = ?`, s.Name))
			if err != nil {
				return cwrap("add server "+s.Name, err)
			}
			if old.URL == s.URL && old.AllowPrivate == s.AllowPrivate && slices.Equal(old.Headers, headers) {
				return nil // idempotent: the same server is already there, and already audited
			}
			return fmt.Errorf("server %q exists with other settings: %w", s.Name, warrant.ErrConflict)
		}
		return appendAudit(ctx, tx, a)
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serverColumns reads a server (scanServer).
const serverColumns = `name, url, allow_private, headers, added_at, added_by, last_crawl, last_source_crawl`

// readServer reads a server through the read pool: serverColumns, or on a version 1
// catalog opened read-only the columns it has, with the LastSourceCrawl derived at open.
func (c *Catalog) readServer(row interface{ Scan(...any) error }) (warrant.Server, error) {
	s, err := scanServer(row)
	if c.v1 != nil {
		s.LastSourceCrawl = c.v1.lsc[s.Name]
	}
	return s, err
}

func (c *Catalog) serverColumns() string {
	if c.v1 != nil {
		return `name, url, allow_private, headers, added_at, added_by, last_crawl, 0`
	}
	return serverColumns
}

func scanServer(row interface{ Scan(...any) error }) (warrant.Server, error) {
	var s warrant.Server
	var hj string
	var at int64
	var ap int
	if err := row.Scan(&s.Name, &s.URL, &ap, &hj, &at, &s.AddedBy, &s.LastCrawl, &s.LastSourceCrawl); err != nil {
		return s, err
	}
	s.AllowPrivate, s.AddedAt = ap == 1, fromNanos(at)
	if err := json.Unmarshal([]byte(hj), &s.Headers); err != nil {
		return s, fmt.Errorf("server %q: stored headers: %w", s.Name, err)
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	return s, nil
}

// Server implements warrant.Catalog.
func (c *Catalog) Server(ctx context.Context, name string) (warrant.Server, error) {
	s, err := c.readServer(c.r.QueryRowContext(ctx, `SELECT `+c.serverColumns()+` FROM servers WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("server %q: %w", name, warrant.ErrNotFound)
	}
	if err != nil {
		return s, cwrap("read server "+name, err)
	}
	pins, err := c.newestPins(ctx, c.r, name)
	s.Package = pins[name]
	return s, cwrap("read the package pin of "+name, err)
}

// Servers implements warrant.Catalog.
func (c *Catalog) Servers(ctx context.Context) ([]warrant.Server, error) {
	rows, err := c.r.QueryContext(ctx, `SELECT `+c.serverColumns()+` FROM servers ORDER BY name`)
	if err != nil {
		return nil, cwrap("list servers", err)
	}
	defer rows.Close()
	out := []warrant.Server{}
	for rows.Next() {
		s, err := c.readServer(rows)
		if err != nil {
			return nil, cwrap("list servers", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, cwrap("list servers", err)
	}
	pins, err := c.newestPins(ctx, c.r, "")
	if err != nil {
		return nil, cwrap("list package pins", err)
	}
	for i := range out {
		out[i].Package = pins[out[i].Name]
	}
	return out, nil
}

// RecordCrawl implements warrant.Catalog.
func (c *Catalog) RecordCrawl(ctx context.Context, r warrant.CrawlRecord, a warrant.AuditAppend) error {
	if err := warrant.ValidateCrawl(r); err != nil {
		return err
	}
	cr := r.Crawl
	op := fmt.Sprintf("record crawl %d of %s", cr.Seq, cr.Server)
	return c.write(ctx, op, func(tx *sql.Tx) error {
		var srv warrant.Server
		err := tx.QueryRowContext(ctx, `SELECT last_crawl, last_source_crawl FROM servers WHERE name = ?`, cr.Server).Scan(&srv.LastCrawl, &srv.LastSourceCrawl)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: server %q: %w", op, cr.Server, warrant.ErrNotFound)
		}
		if err != nil {
			return cwrap(op, err)
		}
		last := srv.LastCrawl
		if cr.Seq != last+1 {
			return fmt.Errorf("%s: the server's last crawl is %d: %w", op, last, warrant.ErrConflict)
		}
		ix, err := readIndex(ctx, tx, cr.Server)
		if err != nil {
			return err
		}
		changed, err := ix.Apply(r, srv.LastSourceCrawl)
		if err != nil {
			return err
		}
		next := srv.After(cr)
		if _, err := tx.ExecContext(ctx, `INSERT INTO crawls (server, seq, source, started_at, finished_at, crawled_by) VALUES (?, ?, ?, ?, ?, ?)`,
			cr.Server, cr.Seq, string(cr.Source), nanos(cr.StartedAt), nanos(cr.FinishedAt), cr.By); err != nil {
			return cwrap(op, err)
		}
		if len(cr.Observations) > 0 {
			st, err := tx.PrepareContext(ctx, `INSERT INTO observations (server, seq, tool, digest, refused) VALUES (?, ?, ?, ?, ?)`)
			if err != nil {
				return cwrap(op, err)
			}
			defer st.Close()
			for _, o := range cr.Observations {
				if _, err := st.ExecContext(ctx, cr.Server, cr.Seq, o.Tool, nullStr(string(o.Digest)), nullStr(o.Refused)); err != nil {
					return cwrap(op+": observation "+o.Tool, err)
				}
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE servers SET last_crawl = ?, last_source_crawl = ? WHERE name = ? AND last_crawl = ?`,
			next.LastCrawl, next.LastSourceCrawl, cr.Server, last)
		if err := affectedOne(res, err, op+": advance last crawl"); err != nil {
			return err
		}
		for _, v := range r.Versions {
			res, err := tx.ExecContext(ctx, `INSERT INTO versions (server, tool, digest, canonical, first_seen_at, first_seen_by, first_crawl)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, v.Server, v.Tool, string(v.Digest), v.Canonical, nanos(v.FirstSeenAt), v.FirstSeenBy, v.FirstCrawl)
			if err != nil {
				return cwrap(op+": version "+v.Tool, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				var stored []byte
				if err := tx.QueryRowContext(ctx, `SELECT canonical FROM versions WHERE server = ? AND tool = ? AND digest = ?`, v.Server, v.Tool, string(v.Digest)).Scan(&stored); err != nil {
					return cwrap(op+": version "+v.Tool, err)
				}
				if string(stored) != string(v.Canonical) {
					return fmt.Errorf("%s: version %s of %s is stored with other bytes: %w", op, v.Digest, v.Tool, warrant.ErrConflict)
				}
			}
		}
		for _, p := range r.Proposals {
			if _, err := tx.ExecContext(ctx, `INSERT INTO proposals (server, tool, digest, opened_at, crawl) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				p.Server, p.Tool, string(p.Digest), nanos(p.OpenedAt), p.Crawl); err != nil {
				return cwrap(op+": proposal "+p.Tool, err)
			}
		}
		if changed {
			if err := putIndex(ctx, tx, cr.Server, ix); err != nil {
				return err
			}
		}
		return appendAudit(ctx, tx, a)
	})
}

// readIndex reads a server's index (an empty one before its first record).
func readIndex(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, server string) (*warrant.Index, error) {
	var b []byte
	err := q.QueryRowContext(ctx, `SELECT idx FROM server_index WHERE server = ?`, server).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return warrant.NewIndex(), nil
	}
	if err != nil {
		return nil, cwrap("read index of "+server, err)
	}
	ix := warrant.NewIndex()
	if err := json.Unmarshal(b, ix); err != nil {
		return nil, fmt.Errorf("read index of %s: %w", server, err)
	}
	return ix, nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Crawl implements warrant.Catalog.
func (c *Catalog) Crawl(ctx context.Context, server string, seq int64) (warrant.Crawl, error) {
	op := fmt.Sprintf("read crawl %d of %s", seq, server)
	tx, err := c.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return warrant.Crawl{}, cwrap(op, err)
	}
	defer tx.Rollback()
	cr := warrant.Crawl{Server: server, Seq: seq}
	var src string
	var started, finished int64
	err = tx.QueryRowContext(ctx, `SELECT source, started_at, finished_at, crawled_by FROM crawls WHERE server = ? AND seq = ?`, server, seq).Scan(&src, &started, &finished, &cr.By)
	if errors.Is(err, sql.ErrNoRows) {
		return cr, fmt.Errorf("%s: %w", op, warrant.ErrNotFound)
	}
	if err != nil {
		return cr, cwrap(op, err)
	}
	cr.Source, cr.StartedAt, cr.FinishedAt = warrant.Source(src), fromNanos(started), fromNanos(finished)
	rows, err := tx.QueryContext(ctx, `SELECT tool, COALESCE(digest, ''), COALESCE(refused, '') FROM observations WHERE server = ? AND seq = ? ORDER BY tool`, server, seq)
	if err != nil {
		return cr, cwrap(op, err)
	}
	defer rows.Close()
	cr.Observations = []warrant.Observation{}
	for rows.Next() {
		var o warrant.Observation
		var d string
		if err := rows.Scan(&o.Tool, &d, &o.Refused); err != nil {
			return cr, cwrap(op, err)
		}
		o.Digest = warrant.Digest(d)
		cr.Observations = append(cr.Observations, o)
	}
	return cr, cwrap(op, rows.Err())
}

const versionColumns = `server, tool, digest, canonical, first_seen_at, first_seen_by, first_crawl`

func scanVersion(row interface{ Scan(...any) error }) (warrant.Version, error) {
	var v warrant.Version
	var d string
	var at int64
	err := row.Scan(&v.Server, &v.Tool, &d, &v.Canonical, &at, &v.FirstSeenBy, &v.FirstCrawl)
	v.Digest, v.FirstSeenAt = warrant.Digest(d), fromNanos(at)
	return v, err
}

// Version implements warrant.Catalog.
func (c *Catalog) Version(ctx context.Context, server, tool string, d warrant.Digest) (warrant.Version, error) {
	v, err := scanVersion(c.r.QueryRowContext(ctx, `SELECT `+versionColumns+` FROM versions WHERE server = ? AND tool = ? AND digest = ?`, server, tool, string(d)))
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("version %s of %s/%s: %w", d, server, tool, warrant.ErrNotFound)
	}
	return v, cwrap("read version", err)
}

// Versions implements warrant.Catalog.
func (c *Catalog) Versions(ctx context.Context, server, tool string) ([]warrant.Version, error) {
	rows, err := c.r.QueryContext(ctx, `SELECT `+versionColumns+` FROM versions WHERE server = ? AND tool = ? ORDER BY first_crawl, first_seen_at, digest`, server, tool)
	if err != nil {
		return nil, cwrap("list versions", err)
	}
	defer rows.Close()
	out := []warrant.Version{}
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, cwrap("list versions", err)
		}
		out = append(out, v)
	}
	return out, cwrap("list versions", rows.Err())
}

// VersionKeys implements warrant.Catalog.
func (c *Catalog) VersionKeys(ctx context.Context, server string) ([]warrant.VersionKey, error) {
	rows, err := c.r.QueryContext(ctx, `SELECT tool, digest FROM versions WHERE server = ? ORDER BY tool, digest`, server)
	if err != nil {
		return nil, cwrap("list version keys", err)
	}
	defer rows.Close()
	out := []warrant.VersionKey{}
	for rows.Next() {
		k := warrant.VersionKey{Server: server}
		var d string
		if err := rows.Scan(&k.Tool, &d); err != nil {
			return nil, cwrap("list version keys", err)
		}
		k.Digest = warrant.Digest(d)
		out = append(out, k)
	}
	return out, cwrap("list version keys", rows.Err())
}

// Tools implements warrant.Catalog: the servers, their indexes and the approval states,
// read in one transaction (one snapshot), handed to warrant.Index.Records.
func (c *Catalog) Tools(ctx context.Context) ([]warrant.ToolRecord, error) {
	out := []warrant.ToolRecord{}
	err := c.state(ctx, "list tools", "", func(s warrant.Server, ix *warrant.Index, aps map[string]warrant.ApprovalState) {
		out = append(out, ix.Records(s.Name, s.LastSourceCrawl, aps)...)
	})
	return out, err
}

// ServerTools implements warrant.Catalog: Tools' reads restricted to the server.
func (c *Catalog) ServerTools(ctx context.Context, server string) ([]warrant.ToolRecord, error) {
	var out []warrant.ToolRecord
	err := c.state(ctx, "list tools of "+server, server, func(s warrant.Server, ix *warrant.Index, aps map[string]warrant.ApprovalState) {
		out = ix.Records(s.Name, s.LastSourceCrawl, aps)
	})
	if err == nil && out == nil {
		return nil, fmt.Errorf("server %q: %w", server, warrant.ErrNotFound)
	}
	return out, err
}

// state reads, in one read transaction, every server (or the one named) with its index
// and its tools' approval states, and calls fn for each, in server order. On a version 1
// catalog opened read-only the index and states are those derived at open.
func (c *Catalog) state(ctx context.Context, op, only string, fn func(warrant.Server, *warrant.Index, map[string]warrant.ApprovalState)) error {
	tx, err := c.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return cwrap(op, err)
	}
	defer tx.Rollback()
	query, args := `SELECT `+c.serverColumns()+` FROM servers ORDER BY name`, []any{}
	if only != "" {
		query, args = `SELECT `+c.serverColumns()+` FROM servers WHERE name = ?`, []any{only}
	}
	var servers []warrant.Server
	if err := each(ctx, tx, query, args, func(rows *sql.Rows) error {
		s, err := c.readServer(rows)
		servers = append(servers, s)
		return err
	}); err != nil {
		return cwrap(op, err)
	}
	aps, err := c.approvalStates(ctx, tx, only)
	if err != nil {
		return cwrap(op, err)
	}
	for _, s := range servers {
		var ix *warrant.Index
		if c.v1 != nil {
			ix = c.v1.indexes[s.Name]
		} else if ix, err = readIndex(ctx, tx, s.Name); err != nil {
			return err
		}
		if ix == nil {
			ix = warrant.NewIndex()
		}
		fn(s, ix, aps[s.Name])
	}
	return nil
}

// approvalStates reads the approval states of every tool (of the server named, if any):
// server → tool → state.
func (c *Catalog) approvalStates(ctx context.Context, q queryer, only string) (map[string]map[string]warrant.ApprovalState, error) {
	if c.v1 != nil {
		return c.v1.approvals, nil
	}
	out := map[string]map[string]warrant.ApprovalState{}
	query, args := `SELECT server, tool, `+approvalColumns+` FROM approvals`, []any{}
	if only != "" {
		query, args = query+` WHERE server = ?`, []any{only}
	}
	err := each(ctx, q, query, args, func(rows *sql.Rows) error {
		var server, tool string
		st, err := scanApproval(rows, &server, &tool)
		if err != nil {
			return err
		}
		if out[server] == nil {
			out[server] = map[string]warrant.ApprovalState{}
		}
		out[server][tool] = st
		return nil
	})
	return out, err
}

// approvalColumns are a tool's warrant.ApprovalState (scanApproval).
const approvalColumns = `COALESCE(digest, ''), approved_by, approved_at, decisions, kinds`

// scanApproval scans approvalColumns, after the columns into lead.
func scanApproval(row interface{ Scan(...any) error }, lead ...any) (warrant.ApprovalState, error) {
	var st warrant.ApprovalState
	var approved, kinds string
	var at int64
	if err := row.Scan(append(lead, &approved, &st.By, &at, &st.Decisions, &kinds)...); err != nil {
		return st, err
	}
	st.Approved = warrant.Digest(approved)
	if at != 0 {
		st.At = fromNanos(at)
	}
	if err := json.Unmarshal([]byte(kinds), &st.Latest); err != nil {
		return st, fmt.Errorf("stored decision kinds: %w", err)
	}
	return st, nil
}

// Proposals implements warrant.Catalog: Tools' reads, handed to warrant.Index.Pending.
func (c *Catalog) Proposals(ctx context.Context) ([]warrant.Proposal, error) {
	out := []warrant.Proposal{}
	err := c.state(ctx, "list proposals", "", func(s warrant.Server, ix *warrant.Index, aps map[string]warrant.ApprovalState) {
		out = append(out, ix.Pending(s.Name, aps)...)
	})
	return out, err
}

// Decide implements warrant.Catalog.
func (c *Catalog) Decide(ctx context.Context, d warrant.Decision, a warrant.AuditAppend) error {
	if err := warrant.ValidateDecision(d); err != nil {
		return err
	}
	op := fmt.Sprintf("record %s of %s/%s", d.Kind, d.Server, d.Tool)
	return c.write(ctx, op, func(tx *sql.Tx) error {
		if err := checkAuditHead(ctx, tx, a); err != nil {
			return err
		}
		if err := decideTx(ctx, tx, op, d); err != nil {
			return err
		}
		return appendAudit(ctx, tx, a)
	})
}

// DecideAll implements warrant.Catalog: the decisions and the audit records in one
// transaction.
func (c *Catalog) DecideAll(ctx context.Context, ds []warrant.Decision, a warrant.AuditAppend) error {
	if len(ds) == 0 {
		return fmt.Errorf("record decisions: none: %w", warrant.ErrInvalid)
	}
	seen := map[[2]string]bool{}
	for _, d := range ds {
		if err := warrant.ValidateDecision(d); err != nil {
			return err
		}
		k := [2]string{d.Server, d.Tool}
		if seen[k] {
			return fmt.Errorf("record decisions: %s/%s twice: %w", d.Server, d.Tool, warrant.ErrInvalid)
		}
		seen[k] = true
	}
	op := fmt.Sprintf("record %d decisions", len(ds))
	return c.write(ctx, op, func(tx *sql.Tx) error {
		if err := checkAuditHead(ctx, tx, a); err != nil {
			return err
		}
		for _, d := range ds {
			if err := decideTx(ctx, tx, fmt.Sprintf("record %s of %s/%s", d.Kind, d.Server, d.Tool), d); err != nil {
				return err
			}
		}
		return appendAudit(ctx, tx, a)
	})
}

// decideTx writes decision d and the approval it leads to within tx.
func decideTx(ctx context.Context, tx *sql.Tx, op string, d warrant.Decision) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM versions WHERE server = ? AND tool = ? AND digest = ?`, d.Server, d.Tool, string(d.Digest)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %s is not a recorded version: %w", op, d.Digest, warrant.ErrNotFound)
	}
	if err != nil {
		return cwrap(op, err)
	}
	cur, err := scanApproval(tx.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE server = ? AND tool = ?`, d.Server, d.Tool))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return cwrap(op, err)
	}
	next, err := cur.Decide(d)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO decisions (server, tool, digest, kind, actor, decided_at, expect, accepted_suspicious, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Server, d.Tool, string(d.Digest), string(d.Kind), d.Actor, nanos(d.At), string(d.Expect), boolInt(d.AcceptedSuspicious), d.Note)
	if err != nil {
		return cwrap(op, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return cwrap(op, err)
	}
	kinds, err := json.Marshal(next.Latest)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (server, tool, digest, decision, approved_by, approved_at, decisions, kinds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest, decision = excluded.decision, approved_by = excluded.approved_by,
			approved_at = excluded.approved_at, decisions = excluded.decisions, kinds = excluded.kinds`,
		d.Server, d.Tool, nullStr(string(next.Approved)), id, next.By, approvedAt(next), next.Decisions, string(kinds)); err != nil {
		return cwrap(op+": approval", err)
	}
	return nil
}

// Decisions implements warrant.Catalog.
func (c *Catalog) Decisions(ctx context.Context, server, tool string) ([]warrant.Decision, error) {
	rows, err := c.r.QueryContext(ctx, `SELECT digest, kind, actor, decided_at, expect, accepted_suspicious, note FROM decisions
		WHERE server = ? AND tool = ? ORDER BY id`, server, tool)
	if err != nil {
		return nil, cwrap("list decisions", err)
	}
	defer rows.Close()
	out := []warrant.Decision{}
	for rows.Next() {
		d := warrant.Decision{Server: server, Tool: tool}
		var dg, kind, expect string
		var at int64
		var acc int
		if err := rows.Scan(&dg, &kind, &d.Actor, &at, &expect, &acc, &d.Note); err != nil {
			return nil, cwrap("list decisions", err)
		}
		d.Digest, d.Kind, d.At, d.Expect, d.AcceptedSuspicious = warrant.Digest(dg), warrant.DecisionKind(kind), fromNanos(at), warrant.Digest(expect), acc == 1
		out = append(out, d)
	}
	return out, cwrap("list decisions", rows.Err())
}

// Approvals implements warrant.Catalog: the approval states with an approved digest.
func (c *Catalog) Approvals(ctx context.Context) ([]warrant.Approval, error) {
	aps, err := c.approvalStates(ctx, c.r, "")
	if err != nil {
		return nil, cwrap("list approvals", err)
	}
	return warrant.Approvals(aps), nil
}

// AppendAudit implements warrant.Catalog.
func (c *Catalog) AppendAudit(ctx context.Context, a warrant.AuditAppend) error {
	if len(a.Records) == 0 {
		return fmt.Errorf("append audit: no records: %w", warrant.ErrInvalid)
	}
	return c.write(ctx, "append audit", func(tx *sql.Tx) error { return appendAudit(ctx, tx, a) })
}

// AuditHead implements warrant.Catalog.
func (c *Catalog) AuditHead(ctx context.Context) (warrant.AuditHead, error) {
	var h warrant.AuditHead
	err := c.r.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&h.Seq, &h.Hash)
	return h, cwrap("read audit head", err)
}

// AuditRecords implements warrant.Catalog.
func (c *Catalog) AuditRecords(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	if limit <= 0 {
		return []warrant.AuditRecord{}, nil
	}
	rows, err := c.r.QueryContext(ctx, `SELECT seq, type, actor, at, prev_hash, hash, body, key_id, signature FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, cwrap("read audit records", err)
	}
	defer rows.Close()
	out := []warrant.AuditRecord{}
	for rows.Next() {
		var r warrant.AuditRecord
		var at int64
		if err := rows.Scan(&r.Seq, &r.Type, &r.Actor, &at, &r.PrevHash, &r.Hash, &r.Body, &r.KeyID, &r.Signature); err != nil {
			return nil, cwrap("read audit records", err)
		}
		r.At = fromNanos(at)
		out = append(out, r)
	}
	return out, cwrap("read audit records", rows.Err())
}
