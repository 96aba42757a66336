package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// derived is the state the domain derives from a catalog's history (catalogSchemaV2):
// each server's last crawl of source 'crawl' and index, each tool's approval state.
type derived struct {
	lsc       map[string]int64
	indexes   map[string]*warrant.Index
	approvals map[string]map[string]warrant.ApprovalState // server → tool → state
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// deriveFromHistory derives, once, the state a version 1 catalog does not keep, from its
// history, through the domain (warrant.RebuildIndex, warrant.RebuildApproval).
func deriveFromHistory(ctx context.Context, q queryer) (*derived, error) {
	d := &derived{lsc: map[string]int64{}, indexes: map[string]*warrant.Index{}, approvals: map[string]map[string]warrant.ApprovalState{}}
	crawls := map[string][]warrant.Crawl{}
	err := each(ctx, q, `SELECT name FROM servers`, nil, func(rows *sql.Rows) error {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		crawls[name] = nil
		return nil
	})
	if err != nil {
		return nil, cwrap("derive: servers", err)
	}
	at := map[[2]any]int{} // (server, seq) → index in crawls[server]
	err = each(ctx, q, `SELECT server, seq, source FROM crawls ORDER BY server, seq`, nil, func(rows *sql.Rows) error {
		var c warrant.Crawl
		var src string
		if err := rows.Scan(&c.Server, &c.Seq, &src); err != nil {
			return err
		}
		c.Source = warrant.Source(src)
		if c.Source == warrant.SourceCrawl {
			d.lsc[c.Server] = c.Seq
		}
		at[[2]any{c.Server, c.Seq}] = len(crawls[c.Server])
		crawls[c.Server] = append(crawls[c.Server], c)
		return nil
	})
	if err != nil {
		return nil, cwrap("derive: crawls", err)
	}
	err = each(ctx, q, `SELECT server, seq, tool, COALESCE(digest, ''), COALESCE(refused, '') FROM observations ORDER BY server, seq, tool`, nil, func(rows *sql.Rows) error {
		var server, dg string
		var seq int64
		var o warrant.Observation
		if err := rows.Scan(&server, &seq, &o.Tool, &dg, &o.Refused); err != nil {
			return err
		}
		o.Digest = warrant.Digest(dg)
		i, ok := at[[2]any{server, seq}]
		if !ok {
			return fmt.Errorf("observation of crawl %d of %s, which does not exist", seq, server)
		}
		crawls[server][i].Observations = append(crawls[server][i].Observations, o)
		return nil
	})
	if err != nil {
		return nil, cwrap("derive: observations", err)
	}
	// Versions and proposals alike: (server, tool, digest) first seen or opened, at, by crawl.
	versions, proposals := map[string][]warrant.Version{}, map[string][]warrant.Proposal{}
	err = each(ctx, q, `SELECT 'v', server, tool, digest, first_seen_at, first_crawl FROM versions
		UNION ALL SELECT 'p', server, tool, digest, opened_at, crawl FROM proposals`, nil, func(rows *sql.Rows) error {
		var kind, server, tool, dg string
		var when, seq int64
		if err := rows.Scan(&kind, &server, &tool, &dg, &when, &seq); err != nil {
			return err
		}
		if kind == "v" {
			versions[server] = append(versions[server], warrant.Version{Server: server, Tool: tool, Digest: warrant.Digest(dg), FirstSeenAt: fromNanos(when), FirstCrawl: seq})
		} else {
			proposals[server] = append(proposals[server], warrant.Proposal{Server: server, Tool: tool, Digest: warrant.Digest(dg), OpenedAt: fromNanos(when), Crawl: seq})
		}
		return nil
	})
	if err != nil {
		return nil, cwrap("derive: versions and proposals", err)
	}
	for server, cs := range crawls {
		d.indexes[server] = warrant.RebuildIndex(cs, versions[server], proposals[server])
	}
	decisions := map[[2]string][]warrant.Decision{}
	err = each(ctx, q, `SELECT server, tool, digest, kind, actor, decided_at FROM decisions ORDER BY id`, nil, func(rows *sql.Rows) error {
		var dc warrant.Decision
		var dg, kind string
		var when int64
		if err := rows.Scan(&dc.Server, &dc.Tool, &dg, &kind, &dc.Actor, &when); err != nil {
			return err
		}
		dc.Digest, dc.Kind, dc.At = warrant.Digest(dg), warrant.DecisionKind(kind), fromNanos(when)
		k := [2]string{dc.Server, dc.Tool}
		decisions[k] = append(decisions[k], dc)
		return nil
	})
	if err != nil {
		return nil, cwrap("derive: decisions", err)
	}
	for k, ds := range decisions {
		if d.approvals[k[0]] == nil {
			d.approvals[k[0]] = map[string]warrant.ApprovalState{}
		}
		d.approvals[k[0]][k[1]] = warrant.RebuildApproval(ds)
	}
	return d, nil
}

// each runs query and calls fn for every row.
func each(ctx context.Context, q queryer, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// upgrade makes a version 1 catalog version 2, once, in one IMMEDIATE transaction: it
// adds the derived state's columns and table (catalogSchemaV2), fills them from the
// history (deriveFromHistory), guards them (catalogTriggersV2) and records the new
// version. A catalog another process upgraded meanwhile is left as it is.
func (c *Catalog) upgrade(ctx context.Context) error {
	return c.write(ctx, "upgrade catalog schema", func(tx *sql.Tx) error {
		var version string
		if err := tx.QueryRowContext(ctx, `SELECT value FROM catalog_meta WHERE key = 'schema_version'`).Scan(&version); err != nil {
			return cwrap("read schema version", err)
		}
		if version != catalogSchemaV1 {
			return nil // upgraded by another process since we looked
		}
		return upgradeTx(ctx, tx)
	})
}

// upgradeTx is upgrade's work inside tx: on a version 1 catalog, new or not.
func upgradeTx(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, catalogSchemaV2); err != nil {
		return cwrap("add derived state", err)
	}
	d, err := deriveFromHistory(ctx, tx)
	if err != nil {
		return err
	}
	for server, ix := range d.indexes {
		if err := putIndex(ctx, tx, server, ix); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE servers SET last_source_crawl = ? WHERE name = ?`, d.lsc[server], server); err != nil {
			return cwrap("derive last source crawl of "+server, err)
		}
	}
	// Every decision now moves its tool's row to it; the rows move to their tool's latest
	// decision here, which the guard refuses when a row is there already.
	if _, err := tx.ExecContext(ctx, `DROP TRIGGER approvals_follow_decisions_update`); err != nil {
		return cwrap("lift the approvals guard", err)
	}
	for server, tools := range d.approvals {
		for tool, st := range tools {
			kinds, err := json.Marshal(kindsOrEmpty(st.Latest))
			if err != nil {
				return fmt.Errorf("derive approval of %s/%s: %w", server, tool, err)
			}
			// The row exists for every tool with an approval so far; a tool whose only
			// decisions were rejections of digests never approved gets its row now.
			if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (server, tool, digest, decision, approved_by, approved_at, decisions, kinds)
				VALUES (?, ?, ?, (SELECT MAX(id) FROM decisions WHERE server = ? AND tool = ?), ?, ?, ?, ?)
				ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest, decision = excluded.decision, approved_by = excluded.approved_by, approved_at = excluded.approved_at,
					decisions = excluded.decisions, kinds = excluded.kinds`,
				server, tool, nullStr(string(st.Approved)), server, tool, st.By, approvedAt(st), st.Decisions, string(kinds)); err != nil {
				return cwrap(fmt.Sprintf("derive approval of %s/%s", server, tool), err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, approvalsFollowDecisions+catalogTriggersV2); err != nil {
		return cwrap("guard derived state", err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE catalog_meta SET value = ? WHERE key = 'schema_version'`, catalogSchemaVersion)
	return cwrap("record schema version", err)
}

func kindsOrEmpty(m map[warrant.Digest]warrant.DecisionKind) map[warrant.Digest]warrant.DecisionKind {
	if m == nil {
		return map[warrant.Digest]warrant.DecisionKind{}
	}
	return m
}

func approvedAt(st warrant.ApprovalState) int64 {
	if st.At.IsZero() {
		return 0
	}
	return nanos(st.At)
}

// putIndex stores a server's index.
func putIndex(ctx context.Context, tx *sql.Tx, server string, ix *warrant.Index) error {
	b, err := json.Marshal(ix)
	if err != nil {
		return fmt.Errorf("encode index of %s: %w", server, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO server_index (server, idx) VALUES (?, ?) ON CONFLICT (server) DO UPDATE SET idx = excluded.idx`, server, b)
	return cwrap("store index of "+server, err)
}
