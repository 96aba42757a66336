package sqlitestore

// catalogFormat and catalogSchemaVersion are stored in catalog_meta and checked on open:
// a Padlock database, or a catalog written by a newer incompatible build, is refused
// rather than misread. Version 1 catalogs (written before the driver kept the derived
// state below) are upgraded once (catalog_upgrade.go).
const (
	catalogFormat        = "toolwarrant-catalog"
	catalogSchemaVersion = "2"
	// catalogSchemaV1 is the version upgraded from.
	catalogSchemaV1 = "1"
)

// catalogSchema creates the toolwarrant catalog of schema version 1; catalogSchemaV2 then
// makes it version 2, for a new catalog and an upgraded one alike. Times are Unix
// nanoseconds (UTC).
//
// History tables — crawls, observations, versions, proposals, decisions, audit — refuse
// every UPDATE and DELETE through triggers. The three mutable rows are guarded too: a
// server's configuration never changes and only its last_crawl advances, by exactly one,
// to a crawl that exists; an approval row is never deleted and always points at a decision
// on that tool; the audit head only moves forward, to a record that exists. Dropping a
// trigger takes a deliberate DROP TRIGGER, which `audit verify` then catches.
const catalogSchema = `
CREATE TABLE IF NOT EXISTS catalog_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS servers (
	name          TEXT PRIMARY KEY,
	url           TEXT NOT NULL,
	allow_private INTEGER NOT NULL CHECK (allow_private IN (0, 1)),
	headers       TEXT NOT NULL,
	added_at      INTEGER NOT NULL,
	added_by      TEXT NOT NULL,
	last_crawl    INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE IF NOT EXISTS crawls (
	server      TEXT NOT NULL REFERENCES servers (name),
	seq         INTEGER NOT NULL CHECK (seq >= 1),
	source      TEXT NOT NULL CHECK (source IN ('crawl', 'gateway')),
	started_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL,
	crawled_by  TEXT NOT NULL,
	PRIMARY KEY (server, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observations (
	server  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	tool    TEXT NOT NULL,
	digest  TEXT,
	refused TEXT,
	PRIMARY KEY (server, seq, tool),
	FOREIGN KEY (server, seq) REFERENCES crawls (server, seq),
	CHECK ((digest IS NULL) <> (refused IS NULL))
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS observations_by_tool ON observations (server, tool, seq);
CREATE TABLE IF NOT EXISTS versions (
	server        TEXT NOT NULL REFERENCES servers (name),
	tool          TEXT NOT NULL,
	digest        TEXT NOT NULL,
	canonical     BLOB NOT NULL,
	first_seen_at INTEGER NOT NULL,
	first_seen_by TEXT NOT NULL,
	first_crawl   INTEGER NOT NULL,
	PRIMARY KEY (server, tool, digest)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS proposals (
	server    TEXT NOT NULL,
	tool      TEXT NOT NULL,
	digest    TEXT NOT NULL,
	opened_at INTEGER NOT NULL,
	crawl     INTEGER NOT NULL,
	PRIMARY KEY (server, tool, digest),
	FOREIGN KEY (server, tool, digest) REFERENCES versions (server, tool, digest)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS decisions (
	id                  INTEGER PRIMARY KEY,
	server              TEXT NOT NULL,
	tool                TEXT NOT NULL,
	digest              TEXT NOT NULL,
	kind                TEXT NOT NULL CHECK (kind IN ('approved', 'rejected', 'rolled_back')),
	actor               TEXT NOT NULL,
	decided_at          INTEGER NOT NULL,
	expect              TEXT NOT NULL,
	accepted_suspicious INTEGER NOT NULL CHECK (accepted_suspicious IN (0, 1)),
	note                TEXT NOT NULL,
	FOREIGN KEY (server, tool, digest) REFERENCES versions (server, tool, digest)
) STRICT;
CREATE INDEX IF NOT EXISTS decisions_by_tool ON decisions (server, tool, digest, id);
CREATE TABLE IF NOT EXISTS approvals (
	server   TEXT NOT NULL,
	tool     TEXT NOT NULL,
	digest   TEXT,
	decision INTEGER NOT NULL REFERENCES decisions (id),
	PRIMARY KEY (server, tool)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
	seq       INTEGER PRIMARY KEY CHECK (seq >= 1),
	type      TEXT NOT NULL,
	actor     TEXT NOT NULL,
	at        INTEGER NOT NULL,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL UNIQUE,
	body      BLOB NOT NULL,
	key_id    TEXT NOT NULL,
	signature BLOB NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS audit_head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  INTEGER NOT NULL,
	hash TEXT NOT NULL
) STRICT;

CREATE TRIGGER IF NOT EXISTS crawls_no_update BEFORE UPDATE ON crawls
	BEGIN SELECT RAISE(ABORT, 'crawls are append-only'); END;
CREATE TRIGGER IF NOT EXISTS crawls_no_delete BEFORE DELETE ON crawls
	BEGIN SELECT RAISE(ABORT, 'crawls are append-only'); END;
CREATE TRIGGER IF NOT EXISTS observations_no_update BEFORE UPDATE ON observations
	BEGIN SELECT RAISE(ABORT, 'observations are append-only'); END;
CREATE TRIGGER IF NOT EXISTS observations_no_delete BEFORE DELETE ON observations
	BEGIN SELECT RAISE(ABORT, 'observations are append-only'); END;
CREATE TRIGGER IF NOT EXISTS versions_no_update BEFORE UPDATE ON versions
	BEGIN SELECT RAISE(ABORT, 'versions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS versions_no_delete BEFORE DELETE ON versions
	BEGIN SELECT RAISE(ABORT, 'versions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS proposals_no_update BEFORE UPDATE ON proposals
	BEGIN SELECT RAISE(ABORT, 'proposals are append-only'); END;
CREATE TRIGGER IF NOT EXISTS proposals_no_delete BEFORE DELETE ON proposals
	BEGIN SELECT RAISE(ABORT, 'proposals are append-only'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
	BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
	BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
	BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
	BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;

CREATE TRIGGER IF NOT EXISTS servers_no_delete BEFORE DELETE ON servers
	BEGIN SELECT RAISE(ABORT, 'servers are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS servers_config_immutable
	BEFORE UPDATE OF name, url, allow_private, headers, added_at, added_by ON servers
	BEGIN SELECT RAISE(ABORT, 'a server''s configuration is never updated'); END;
CREATE TRIGGER IF NOT EXISTS servers_crawl_advances BEFORE UPDATE OF last_crawl ON servers
	WHEN NEW.last_crawl <> OLD.last_crawl + 1
	  OR NOT EXISTS (SELECT 1 FROM crawls WHERE server = NEW.name AND seq = NEW.last_crawl)
	BEGIN SELECT RAISE(ABORT, 'last_crawl only advances by one, to a recorded crawl'); END;
CREATE TRIGGER IF NOT EXISTS approvals_no_delete BEFORE DELETE ON approvals
	BEGIN SELECT RAISE(ABORT, 'approvals are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS approvals_follow_decisions_insert BEFORE INSERT ON approvals
	WHEN NOT EXISTS (SELECT 1 FROM decisions WHERE id = NEW.decision AND server = NEW.server AND tool = NEW.tool)
	BEGIN SELECT RAISE(ABORT, 'an approval must point at a decision on its tool'); END;
` + approvalsFollowDecisions + `
CREATE TRIGGER IF NOT EXISTS audit_head_no_delete BEFORE DELETE ON audit_head
	BEGIN SELECT RAISE(ABORT, 'the audit head is never deleted'); END;
CREATE TRIGGER IF NOT EXISTS audit_head_advances BEFORE UPDATE ON audit_head
	WHEN NEW.seq <= OLD.seq OR NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq AND hash = NEW.hash)
	BEGIN SELECT RAISE(ABORT, 'the audit head only moves forward, to a recorded entry'); END;
`

// approvalsFollowDecisions guards the approval rows' updates (part of catalogSchema; the
// upgrade to version 2 lifts it while it fills the new columns).
const approvalsFollowDecisions = `CREATE TRIGGER IF NOT EXISTS approvals_follow_decisions_update BEFORE UPDATE ON approvals
	WHEN NEW.server <> OLD.server OR NEW.tool <> OLD.tool OR NEW.decision <= OLD.decision
	  OR NOT EXISTS (SELECT 1 FROM decisions WHERE id = NEW.decision AND server = NEW.server AND tool = NEW.tool)
	BEGIN SELECT RAISE(ABORT, 'an approval only moves to a newer decision on its tool'); END;`

// catalogSchemaV2 adds, to a version 1 catalog, the state the domain derives from the
// history and the driver persists in the same transaction as the write it derives from
// (warrant.Index, warrant.ApprovalState), so no read derives it again:
//
//   - servers.last_source_crawl: the server's last crawl of source 'crawl'
//     (warrant.Server.After);
//   - server_index: each server's warrant.Index, in its JSON form, written by the crawls
//     that change it;
//   - approvals.approved_by, approved_at, decisions, kinds: the rest of the tool's
//     warrant.ApprovalState (digest is its approved digest), written by every decision.
//
// catalogUpgradeV2 fills them from the history between the two (catalog_upgrade.go);
// catalogTriggersV2 then guards them.
const catalogSchemaV2 = `
ALTER TABLE servers ADD COLUMN last_source_crawl INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN approved_by TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN approved_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN decisions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN kinds TEXT NOT NULL DEFAULT '{}';
CREATE TABLE server_index (
	server TEXT PRIMARY KEY REFERENCES servers (name),
	idx    BLOB NOT NULL
) STRICT, WITHOUT ROWID;
`

// catalogTriggersV2 guards the derived state: a server's last crawl of source 'crawl'
// only moves with last_crawl, to a crawl of that source; an index is never deleted.
const catalogTriggersV2 = `
CREATE TRIGGER servers_source_crawl_follows BEFORE UPDATE OF last_source_crawl ON servers
	WHEN NEW.last_source_crawl <> OLD.last_source_crawl
	 AND (NEW.last_source_crawl <> NEW.last_crawl
	  OR NOT EXISTS (SELECT 1 FROM crawls WHERE server = NEW.name AND seq = NEW.last_source_crawl AND source = 'crawl'))
	BEGIN SELECT RAISE(ABORT, 'last_source_crawl only moves to the last crawl, of source crawl'); END;
CREATE TRIGGER server_index_no_delete BEFORE DELETE ON server_index
	BEGIN SELECT RAISE(ABORT, 'a server''s index is never deleted'); END;
`
