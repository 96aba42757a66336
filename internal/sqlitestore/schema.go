package sqlitestore

// schemaVersion is stored in meta.schema_version and checked on open: a file written by a
// newer, incompatible build is refused rather than misread.
const schemaVersion = "1"

// schema creates the tables. History is append-only: triggers refuse UPDATE and DELETE of
// blocks and payment receipts, and DELETE of pads and tickets, so no code path (and no
// operator typo through this driver) can remove evidence.
const schema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS pads (
	id             TEXT PRIMARY KEY,
	write_key_hash TEXT NOT NULL,
	state          TEXT NOT NULL CHECK (state IN ('open', 'sealed', 'expired')),
	created_at     INTEGER NOT NULL,
	expires_at     INTEGER NOT NULL,
	sealed_at      INTEGER,
	max_blocks     INTEGER NOT NULL,
	max_bytes      INTEGER NOT NULL,
	block_count    INTEGER NOT NULL DEFAULT 0,
	total_bytes    INTEGER NOT NULL DEFAULT 0,
	head_hash      TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS blocks (
	pad_id       TEXT NOT NULL REFERENCES pads (id),
	seq          INTEGER NOT NULL,
	prev_hash    TEXT NOT NULL,
	curr_hash    TEXT NOT NULL,
	content_type TEXT NOT NULL,
	payload      BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (pad_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tickets (
	hash             TEXT PRIMARY KEY,
	pad_id           TEXT NOT NULL REFERENCES pads (id),
	type             TEXT NOT NULL CHECK (type IN ('read_once', 'read_unlimited')),
	redeemed_count   INTEGER NOT NULL DEFAULT 0,
	max_reads        INTEGER NOT NULL DEFAULT 1,
	lease_started_at INTEGER,
	created_at       INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS payment_receipts (
	tx_hash      TEXT PRIMARY KEY,
	pad_id       TEXT NOT NULL REFERENCES pads (id),
	amount_units TEXT NOT NULL,
	payer        TEXT NOT NULL,
	created_at   INTEGER NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS blocks_no_update BEFORE UPDATE ON blocks
	BEGIN SELECT RAISE(ABORT, 'blocks are append-only'); END;
CREATE TRIGGER IF NOT EXISTS blocks_no_delete BEFORE DELETE ON blocks
	BEGIN SELECT RAISE(ABORT, 'blocks are append-only'); END;
CREATE TRIGGER IF NOT EXISTS receipts_no_update BEFORE UPDATE ON payment_receipts
	BEGIN SELECT RAISE(ABORT, 'payment receipts are append-only'); END;
CREATE TRIGGER IF NOT EXISTS receipts_no_delete BEFORE DELETE ON payment_receipts
	BEGIN SELECT RAISE(ABORT, 'payment receipts are append-only'); END;
CREATE TRIGGER IF NOT EXISTS pads_no_delete BEFORE DELETE ON pads
	BEGIN SELECT RAISE(ABORT, 'pads are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS tickets_no_delete BEFORE DELETE ON tickets
	BEGIN SELECT RAISE(ABORT, 'tickets are never deleted'); END;
`
