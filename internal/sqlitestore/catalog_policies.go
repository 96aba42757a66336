package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Review policies (warrant.PolicySet) live in their own append-only table, one row per
// change holding the whole active set after it, so the newest row is the set and the
// table is its history. Like the package pins, a catalog written before they existed
// needs no new schema version: a writable open creates the table, and a read-only open of
// such a catalog reads an empty set.
const policiesSchema = `
CREATE TABLE IF NOT EXISTS review_policies (
	seq    INTEGER PRIMARY KEY CHECK (seq >= 1),
	body   TEXT NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS review_policies_no_update BEFORE UPDATE ON review_policies
	BEGIN SELECT RAISE(ABORT, 'review policy changes are append-only'); END;
CREATE TRIGGER IF NOT EXISTS review_policies_no_delete BEFORE DELETE ON review_policies
	BEGIN SELECT RAISE(ABORT, 'review policy changes are append-only'); END;
CREATE TRIGGER IF NOT EXISTS review_policies_in_order BEFORE INSERT ON review_policies
	WHEN NEW.seq <> 1 + (SELECT COALESCE(MAX(seq), 0) FROM review_policies)
	BEGIN SELECT RAISE(ABORT, 'review policy changes are numbered in order'); END;
`

// openPolicies creates the policies table on a writable catalog and records whether it
// is there to read.
func (c *Catalog) openPolicies(ctx context.Context) error {
	if c.w != nil {
		if _, err := c.w.ExecContext(ctx, policiesSchema); err != nil {
			return cwrap("create the review policies table", err)
		}
	}
	var n int
	if err := c.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'review_policies'`).Scan(&n); err != nil {
		return cwrap("look for the review policies table", err)
	}
	c.policies = n == 1
	return nil
}

// Policies implements warrant.Catalog.
func (c *Catalog) Policies(ctx context.Context) (warrant.PolicySet, error) {
	if !c.policies {
		return warrant.PolicySet{Policies: []warrant.ActivePolicy{}}, nil
	}
	return readPolicies(ctx, c.r)
}

func readPolicies(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (warrant.PolicySet, error) {
	var seq int64
	var body string
	err := q.QueryRowContext(ctx, `SELECT seq, body FROM review_policies ORDER BY seq DESC LIMIT 1`).Scan(&seq, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return warrant.PolicySet{Policies: []warrant.ActivePolicy{}}, nil
	}
	if err != nil {
		return warrant.PolicySet{}, cwrap("read review policies", err)
	}
	var ps warrant.PolicySet
	if err := json.Unmarshal([]byte(body), &ps); err != nil || ps.Seq != seq {
		return warrant.PolicySet{}, fmt.Errorf("read review policies: change %d is unreadable (run 'toolwarrant audit verify'): %v", seq, err)
	}
	if ps.Policies == nil {
		ps.Policies = []warrant.ActivePolicy{}
	}
	return ps, nil
}

// SetPolicies implements warrant.Catalog: the set's row and the audit records in one
// transaction, if the newest row is next.Seq-1.
func (c *Catalog) SetPolicies(ctx context.Context, next warrant.PolicySet, a warrant.AuditAppend) error {
	if err := next.Validate(); err != nil {
		return err
	}
	op := fmt.Sprintf("record review policy change %d", next.Seq)
	if !c.policies {
		return fmt.Errorf("%s: %w", op, errCatalogReadOnly)
	}
	body, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return c.write(ctx, op, func(tx *sql.Tx) error {
		if err := checkAuditHead(ctx, tx, a); err != nil {
			return err
		}
		cur, err := readPolicies(ctx, tx)
		if err != nil {
			return err
		}
		if next.Seq != cur.Seq+1 {
			return fmt.Errorf("%s: the policies were changed since they were read (change %d): %w", op, cur.Seq, warrant.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO review_policies (seq, body) VALUES (?, ?)`, next.Seq, string(body)); err != nil {
			return cwrap(op, err)
		}
		return appendAudit(ctx, tx, a)
	})
}
