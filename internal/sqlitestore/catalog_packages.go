package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Package pins (warrant.PackagePin) live in their own append-only table, so a catalog
// written before they existed needs no new schema version: a writable open creates the
// table if it is missing, and a read-only open of such a catalog reads no pins.
const packagesSchema = `
CREATE TABLE IF NOT EXISTS server_packages (
	server    TEXT NOT NULL REFERENCES servers (name),
	seq       INTEGER NOT NULL CHECK (seq >= 1),
	spec      TEXT NOT NULL,
	identity  TEXT NOT NULL,
	pinned_at INTEGER NOT NULL,
	pinned_by TEXT NOT NULL,
	PRIMARY KEY (server, seq)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS server_packages_no_update BEFORE UPDATE ON server_packages
	BEGIN SELECT RAISE(ABORT, 'package pins are append-only'); END;
CREATE TRIGGER IF NOT EXISTS server_packages_no_delete BEFORE DELETE ON server_packages
	BEGIN SELECT RAISE(ABORT, 'package pins are append-only'); END;
CREATE TRIGGER IF NOT EXISTS server_packages_in_order BEFORE INSERT ON server_packages
	WHEN NEW.seq <> 1 + (SELECT COALESCE(MAX(seq), 0) FROM server_packages WHERE server = NEW.server)
	BEGIN SELECT RAISE(ABORT, 'package pins are numbered in order'); END;
`

// openPackages creates the pins table on a writable catalog and records whether it is
// there to read.
func (c *Catalog) openPackages(ctx context.Context) error {
	if c.w != nil {
		if _, err := c.w.ExecContext(ctx, packagesSchema); err != nil {
			return cwrap("create the package pins table", err)
		}
	}
	var n int
	if err := c.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'server_packages'`).Scan(&n); err != nil {
		return cwrap("look for the package pins table", err)
	}
	c.pins = n == 1
	return nil
}

const pinColumns = `server, seq, spec, identity, pinned_at, pinned_by`

func scanPin(row interface{ Scan(...any) error }) (warrant.PackagePin, error) {
	var p warrant.PackagePin
	var id string
	var at int64
	if err := row.Scan(&p.Server, &p.Seq, &p.Spec, &id, &at, &p.PinnedBy); err != nil {
		return p, err
	}
	p.Identity, p.PinnedAt = []byte(id), fromNanos(at)
	return p, nil
}

// newestPins returns each server's newest pin (one server's when name is not "").
func (c *Catalog) newestPins(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, name string) (map[string]*warrant.PackagePin, error) {
	out := map[string]*warrant.PackagePin{}
	if !c.pins {
		return out, nil
	}
	query := `SELECT ` + pinColumns + ` FROM server_packages p WHERE seq = (SELECT MAX(seq) FROM server_packages WHERE server = p.server)`
	args := []any{}
	if name != "" {
		query += ` AND server = ?`
		args = append(args, name)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPin(rows)
		if err != nil {
			return nil, err
		}
		out[p.Server] = &p
	}
	return out, rows.Err()
}

// PinPackage implements warrant.Catalog.
func (c *Catalog) PinPackage(ctx context.Context, p warrant.PackagePin, a warrant.AuditAppend) error {
	if err := p.Validate(); err != nil {
		return err
	}
	op := fmt.Sprintf("pin package %d of %s", p.Seq, p.Server)
	if !c.pins {
		return fmt.Errorf("%s: %w", op, errCatalogReadOnly)
	}
	return c.write(ctx, op, func(tx *sql.Tx) error {
		var newest int64
		err := tx.QueryRowContext(ctx, `SELECT (SELECT COALESCE(MAX(seq), 0) FROM server_packages WHERE server = s.name) FROM servers s WHERE s.name = ?`, p.Server).Scan(&newest)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: server %q: %w", op, p.Server, warrant.ErrNotFound)
		}
		if err != nil {
			return cwrap(op, err)
		}
		if p.Seq != newest+1 {
			return fmt.Errorf("%s: the server's newest pin is %d: %w", op, newest, warrant.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO server_packages (`+pinColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			p.Server, p.Seq, p.Spec, string(p.Identity), nanos(p.PinnedAt), p.PinnedBy); err != nil {
			return cwrap(op, err)
		}
		return appendAudit(ctx, tx, a)
	})
}
