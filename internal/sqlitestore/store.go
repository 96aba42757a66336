package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

var _ locker.Store = (*Store)(nil)

// Config configures Open. Only Path is required.
type Config struct {
	// Path is the database file. It is created (mode 0600) unless ReadOnly is set.
	Path string
	// ReadOnly opens the file for reading only and changes nothing in it (check-integrity).
	// Every write method then fails.
	ReadOnly bool
	// BusyTimeout is how long a statement waits for another process's lock. Default 5s.
	BusyTimeout time.Duration
	// ReadConns is the size of the read-only pool. Default 4.
	ReadConns int
}

// Store is the SQLite implementation of locker.Store.
type Store struct {
	path     string
	readOnly bool
	w        *sql.DB    // the one writer connection; nil when read-only
	commits  *committer // owns w after Open: every write goes through it (groupcommit.go)
	r        *sql.DB    // read-only pool for request reads
	h        *sql.DB    // read-only connection for /health, no transaction control

	// Request-path reads, prepared once: preparing is a tenth of a /blocks read's cost.
	padStmt, ticketStmt, blocksStmt, padTicketStmt *sql.Stmt
}

// Open opens (and, unless read-only, creates and migrates) the database at cfg.Path.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlitestore: Config.Path is required")
	}
	abs, err := openDefaults(cfg.Path, &cfg.BusyTimeout, &cfg.ReadConns)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	s := &Store{path: abs, readOnly: cfg.ReadOnly}
	if cfg.ReadOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
		}
	} else {
		// Create the file ourselves so it is private from the first byte.
		f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
		}
		f.Close()
		s.w, err = openDB(abs, "rw", cfg.BusyTimeout, 1)
		if err != nil {
			return nil, err
		}
		if err := s.migrate(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
		}
		s.commits = newCommitter(s.w)
	}
	if s.r, err = openDB(abs, "ro", cfg.BusyTimeout, cfg.ReadConns); err != nil {
		s.Close()
		return nil, err
	}
	if s.h, err = openDB(abs, "ro", cfg.BusyTimeout, 1); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkVersion(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", cfg.Path, err)
	}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&s.padStmt, `SELECT ` + padColumns + ` FROM pads WHERE id = ?`},
		{&s.ticketStmt, `SELECT ` + ticketColumns + ` FROM tickets WHERE hash = ?`},
		{&s.padTicketStmt, padTicketQuery},
		{&s.blocksStmt, `SELECT seq, prev_hash, curr_hash, content_type, payload, created_at
			FROM blocks WHERE pad_id = ? AND seq BETWEEN ? AND ? ORDER BY seq`},
	} {
		if *p.dst, err = s.r.PrepareContext(ctx, p.query); err != nil {
			s.Close()
			return nil, fmt.Errorf("open %s: prepare: %w", cfg.Path, err)
		}
	}
	return s, nil
}

// openDefaults fills the defaults Config and CatalogConfig share (a 5 s busy timeout, four
// read connections) and returns the file's absolute path.
func openDefaults(path string, busy *time.Duration, readConns *int) (string, error) {
	if *busy <= 0 {
		*busy = 5 * time.Second
	}
	if *readConns <= 0 {
		*readConns = 4
	}
	return filepath.Abs(path)
}

func openDB(path, mode string, busy time.Duration, conns int) (*sql.DB, error) {
	// A file: URI of a relative path would read its first segment as an authority
	// ("file://locker.db"), which SQLite refuses: always name the file absolutely.
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if mode == "rw" {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	}
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	return db, nil
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrap("begin migration", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return wrap("create schema", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING`, schemaVersion); err != nil {
		return wrap("record schema version", err)
	}
	return wrap("commit migration", tx.Commit())
}

func (s *Store) checkVersion(ctx context.Context) error {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
	if err != nil {
		return fmt.Errorf("not a Padlock database (no schema version): %w", err)
	}
	if v != schemaVersion {
		return fmt.Errorf("database schema version %q is not understood by this build (it understands %q)", v, schemaVersion)
	}
	return nil
}

// Close closes every handle, after the writes already queued are committed. It is safe to
// call more than once.
func (s *Store) Close() error {
	var errs []error
	if s.commits != nil {
		s.commits.close()
	}
	for _, st := range []*sql.Stmt{s.padStmt, s.ticketStmt, s.blocksStmt, s.padTicketStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	s.padStmt, s.ticketStmt, s.blocksStmt, s.padTicketStmt = nil, nil, nil, nil
	for _, db := range []*sql.DB{s.w, s.r, s.h} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	s.w, s.r, s.h = nil, nil, nil
	return errors.Join(errs...)
}

// Path returns the database file's absolute path.
func (s *Store) Path() string { return s.path }

// sqliteCode returns the primary result code of a SQLite error, or 0 for any other error.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// transient reports a SQLite code that means "not now": another writer, a full disk or an
// I/O error. The pads and the catalog map it to their ports' ErrUnavailable.
func transient(code int) bool {
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED || code == sqlite3.SQLITE_FULL || code == sqlite3.SQLITE_IOERR
}

// refusesWrites reports whether err (a driver error, or one wrap made of it) means the file
// cannot take writes now: the disk or a size limit is full (SQLITE_FULL, which is what
// ENOSPC is to SQLite), the file or its file system is read-only, the journal cannot be
// opened, or writing failed with an I/O error. Another writer's lock (BUSY, LOCKED) is not
// one: the store still takes writes.
func refusesWrites(err error) bool {
	if err == nil {
		return false
	}
	code := sqliteCode(err)
	var c driverCode
	if errors.As(err, &c) {
		code = c.code
	}
	switch code {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR:
		return true
	}
	return false
}

// driverCode keeps a SQLite error's primary code inspectable inside this package (for
// refusesWrites) while the driver's error itself stays out of the port's contract: its
// text is the driver's, and it does not unwrap to it.
type driverCode struct {
	code int
	text string
}

func (e driverCode) Error() string { return e.text }

// wrap translates driver errors into the port's sentinels and adds context.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	switch code := sqliteCode(err); {
	case transient(code):
		return fmt.Errorf("%s: %w: %w", op, locker.ErrUnavailable, driverCode{code: code, text: err.Error()})
	case code == sqlite3.SQLITE_CONSTRAINT:
		return fmt.Errorf("%s: %w: %v", op, locker.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

var errReadOnly = errors.New("sqlitestore: store opened read-only")

// write runs fn in an IMMEDIATE transaction on the writer connection, possibly shared with
// other writes that arrived meanwhile (group commit, groupcommit.go), and returns nil only
// once that transaction committed. fn's changes are rolled back on its error or panic,
// whatever the others do; a caller whose ctx ends before its write runs is skipped. fn
// gets ctx without its cancellation: interrupting a statement inside a shared transaction
// would make SQLite roll back the whole transaction, the other callers' writes with it.
func (s *Store) write(ctx context.Context, op string, fn func(context.Context, *sql.Tx) error) error {
	if s.w == nil || s.commits == nil {
		return fmt.Errorf("%s: %w", op, errReadOnly)
	}
	return s.commits.submit(ctx, op, fn)
}

// CreatePad implements locker.Store.
func (s *Store) CreatePad(ctx context.Context, np locker.NewPad) error {
	p := np.Pad
	return s.write(ctx, "create pad", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO pads (id, write_key_hash, state, created_at, expires_at, max_blocks, max_bytes, block_count, total_bytes, head_hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?) ON CONFLICT (id) DO NOTHING`,
			p.ID, p.WriteKeyHash, string(p.State), p.CreatedAt, p.ExpiresAt, p.MaxBlocks, p.MaxBytes, p.HeadHash)
		if err := inserted(res, err, "insert pad", locker.ErrConflict); err != nil {
			return err
		}
		if t := np.Ticket; t.Hash != "" {
			res, err := tx.ExecContext(ctx, `INSERT INTO tickets (hash, pad_id, type, redeemed_count, max_reads, created_at)
				VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (hash) DO NOTHING`, t.Hash, p.ID, string(t.Type), t.MaxReads, t.CreatedAt)
			if err := inserted(res, err, "insert ticket", locker.ErrConflict); err != nil {
				return err
			}
		}
		if r := np.Receipt; r != nil {
			res, err := tx.ExecContext(ctx, `INSERT INTO payment_receipts (tx_hash, pad_id, amount_units, payer, created_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (tx_hash) DO NOTHING`, r.TxHash, p.ID, r.AmountUnits, r.Payer, r.CreatedAt)
			if err := inserted(res, err, "insert receipt", locker.ErrRedeemed); err != nil {
				return err
			}
		}
		return nil
	})
}

// inserted turns "ON CONFLICT DO NOTHING inserted nothing" into the given sentinel.
func inserted(res sql.Result, err error, op string, sentinel error) error {
	if err != nil {
		return wrap(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, sentinel)
	}
	return nil
}

const padColumns = `id, write_key_hash, state, created_at, expires_at, COALESCE(sealed_at, 0), max_blocks, max_bytes, block_count, total_bytes, head_hash`

func scanPad(row interface{ Scan(...any) error }) (locker.Pad, error) {
	var p locker.Pad
	var state string
	err := row.Scan(&p.ID, &p.WriteKeyHash, &state, &p.CreatedAt, &p.ExpiresAt, &p.SealedAt, &p.MaxBlocks, &p.MaxBytes, &p.BlockCount, &p.TotalBytes, &p.HeadHash)
	p.State = locker.State(state)
	return p, err
}

// Pad implements locker.Store.
func (s *Store) Pad(ctx context.Context, id string) (locker.Pad, error) {
	ctx, err := quick(ctx, "read pad")
	if err != nil {
		return locker.Pad{}, err
	}
	p, err := scanPad(s.padStmt.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return locker.Pad{}, fmt.Errorf("pad: %w", locker.ErrNotFound)
	}
	return p, wrap("read pad", err)
}

// padMissing distinguishes "condition failed" from "no such pad" after an update hit no row.
func padMissing(ctx context.Context, tx *sql.Tx, op, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM pads WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, locker.ErrNotFound)
	}
	if err != nil {
		return wrap(op, err)
	}
	return fmt.Errorf("%s: %w", op, locker.ErrConflict)
}

// AppendBlock implements locker.Store: one transaction that advances the pad row only if
// it is still exactly as the caller read it, then inserts the block.
func (s *Store) AppendBlock(ctx context.Context, b locker.Block) error {
	n := len(b.Payload)
	return s.write(ctx, "append block", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pads SET block_count = block_count + 1, total_bytes = total_bytes + ?, head_hash = ?
			WHERE id = ? AND state = 'open' AND expires_at > ? AND block_count = ? AND head_hash = ?
			AND block_count < max_blocks AND total_bytes + ? <= max_bytes`,
			n, b.CurrHash, b.PadID, b.CreatedAt, b.Seq, b.PrevHash, n)
		if err != nil {
			return wrap("append block: advance pad", err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return wrap("append block", err)
		} else if k == 0 {
			return padMissing(ctx, tx, "append block", b.PadID)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO blocks (pad_id, seq, prev_hash, curr_hash, content_type, payload, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, b.PadID, b.Seq, b.PrevHash, b.CurrHash, b.ContentType, b.Payload, b.CreatedAt)
		return wrap("append block: insert", err)
	})
}

// Seal implements locker.Store.
func (s *Store) Seal(ctx context.Context, padID string, blockCount int, head string, sealedAt int64) error {
	return s.write(ctx, "seal pad", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pads SET state = 'sealed', sealed_at = ?
			WHERE id = ? AND state = 'open' AND block_count = ? AND head_hash = ?`, sealedAt, padID, blockCount, head)
		if err != nil {
			return wrap("seal pad", err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return wrap("seal pad", err)
		} else if k == 0 {
			return padMissing(ctx, tx, "seal pad", padID)
		}
		return nil
	})
}

// Expire implements locker.Store.
func (s *Store) Expire(ctx context.Context, padID string) error {
	return s.write(ctx, "expire pad", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pads SET state = 'expired' WHERE id = ? AND state = 'open'`, padID)
		if err != nil {
			return wrap("expire pad", err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return wrap("expire pad", err)
		} else if k == 0 {
			if err := padMissing(ctx, tx, "expire pad", padID); errors.Is(err, locker.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}

// Blocks implements locker.Store.
func (s *Store) Blocks(ctx context.Context, padID string, from, to int) ([]locker.Block, error) {
	ctx, err := quick(ctx, "read blocks")
	if err != nil {
		return nil, err
	}
	rows, err := s.blocksStmt.QueryContext(ctx, padID, from, to)
	if err != nil {
		return nil, wrap("read blocks", err)
	}
	defer rows.Close()
	var out []locker.Block
	for rows.Next() {
		b := locker.Block{PadID: padID}
		if err := rows.Scan(&b.Seq, &b.PrevHash, &b.CurrHash, &b.ContentType, &b.Payload, &b.CreatedAt); err != nil {
			return nil, wrap("read blocks", err)
		}
		out = append(out, b)
	}
	return out, wrap("read blocks", rows.Err())
}

// PutTicket implements locker.Store.
func (s *Store) PutTicket(ctx context.Context, t locker.Ticket) error {
	return s.write(ctx, "put ticket", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO tickets (hash, pad_id, type, redeemed_count, max_reads, created_at)
			VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (hash) DO NOTHING`, t.Hash, t.PadID, string(t.Type), t.MaxReads, t.CreatedAt)
		return inserted(res, err, "put ticket", locker.ErrConflict)
	})
}

const ticketColumns = `hash, pad_id, type, redeemed_count, max_reads, COALESCE(lease_started_at, 0), created_at`

func scanTicket(row interface{ Scan(...any) error }) (locker.Ticket, error) {
	var t locker.Ticket
	var typ string
	err := row.Scan(&t.Hash, &t.PadID, &typ, &t.RedeemedCount, &t.MaxReads, &t.LeaseStartedAt, &t.CreatedAt)
	t.Type = locker.TicketType(typ)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("ticket: %w", locker.ErrNotFound)
	}
	return t, wrap("read ticket", err)
}

// Ticket implements locker.Store.
func (s *Store) Ticket(ctx context.Context, hash string) (locker.Ticket, error) {
	ctx, err := quick(ctx, "read ticket")
	if err != nil {
		return locker.Ticket{}, err
	}
	return scanTicket(s.ticketStmt.QueryRowContext(ctx, hash))
}

// quick is ctx for a request-path read that takes microseconds (a point read by key, a
// pad's blocks): ctx's values without its cancellation. For a cancellable context,
// database/sql and the SQLite driver each start a goroutine per statement to watch it —
// the pad-and-ticket read took 18–21 µs watched and 14.6 µs unwatched here
// (BenchmarkReadPadAndTicket), and each watcher is a thread wake-up under load. SQLite's
// busy timeout still bounds any wait for a lock; a context already done is refused before
// the statement starts.
func quick(ctx context.Context, op string) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return context.WithoutCancel(ctx), nil
}

// padTicketQuery reads padColumns and ticketColumns, in their order, of one pad (?1) and
// one ticket (?2) in one statement; the ticket's columns are NULL when it does not exist.
const padTicketQuery = `SELECT p.id, p.write_key_hash, p.state, p.created_at, p.expires_at, COALESCE(p.sealed_at, 0),
	p.max_blocks, p.max_bytes, p.block_count, p.total_bytes, p.head_hash,
	t.hash, t.pad_id, t.type, t.redeemed_count, t.max_reads, COALESCE(t.lease_started_at, 0), t.created_at
	FROM pads AS p LEFT JOIN tickets AS t ON t.hash = ?2 WHERE p.id = ?1`

// PadAndTicket implements locker.PadTicketReader: one statement, one read transaction.
func (s *Store) PadAndTicket(ctx context.Context, padID, ticketHash string) (locker.Pad, *locker.Ticket, error) {
	var p locker.Pad
	var state string
	var hash, tpad, typ sql.NullString
	var redeemed, maxReads, lease, created sql.NullInt64
	ctx, err := quick(ctx, "read pad and ticket")
	if err != nil {
		return locker.Pad{}, nil, err
	}
	err = s.padTicketStmt.QueryRowContext(ctx, padID, ticketHash).Scan(&p.ID, &p.WriteKeyHash, &state, &p.CreatedAt, &p.ExpiresAt, &p.SealedAt,
		&p.MaxBlocks, &p.MaxBytes, &p.BlockCount, &p.TotalBytes, &p.HeadHash, &hash, &tpad, &typ, &redeemed, &maxReads, &lease, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return locker.Pad{}, nil, fmt.Errorf("pad: %w", locker.ErrNotFound)
	}
	if err != nil {
		return locker.Pad{}, nil, wrap("read pad and ticket", err)
	}
	p.State = locker.State(state)
	if !hash.Valid {
		return p, nil, nil
	}
	return p, &locker.Ticket{Hash: hash.String, PadID: tpad.String, Type: locker.TicketType(typ.String), RedeemedCount: int(redeemed.Int64),
		MaxReads: int(maxReads.Int64), LeaseStartedAt: lease.Int64, CreatedAt: created.Int64}, nil
}

var _ locker.PadTicketReader = (*Store)(nil)

// RecordRead implements locker.Store.
func (s *Store) RecordRead(ctx context.Context, hash string, now int64) (locker.Ticket, error) {
	var t locker.Ticket
	err := s.write(ctx, "record read", func(ctx context.Context, tx *sql.Tx) error {
		var err error
		t, err = scanTicket(tx.QueryRowContext(ctx, `UPDATE tickets SET lease_started_at = COALESCE(lease_started_at, ?),
			redeemed_count = redeemed_count + 1 WHERE hash = ? RETURNING `+ticketColumns, now, hash))
		return err
	})
	return t, err
}

// HasReceipt implements locker.Store.
func (s *Store) HasReceipt(ctx context.Context, txHash string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM payment_receipts WHERE tx_hash = ?`, txHash).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, wrap("read receipt", err)
}

// Health implements locker.Store. It reads on its own read-only connection and issues no
// BEGIN, COMMIT or ROLLBACK there. Writable is false for a store opened read-only, a file
// this process may not write, and a store whose last write the file refused (a full disk,
// a file system remounted read-only, I/O errors: refusesWrites). While the store refuses,
// Health queues a write probe through the committer (at most one a second, in a
// transaction of its own, serialized with every other write, so it cannot end, join or
// fail another request's transaction) and reports its outcome: Writable comes back once
// a write — the probe or a client's — commits again.
func (s *Store) Health(ctx context.Context) (locker.StoreHealth, error) {
	var h locker.StoreHealth
	var mode string
	if err := s.h.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return h, wrap("health: journal mode", err)
	}
	h.WALMode = mode == "wal"
	err := s.h.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(state = 'open'), 0), COALESCE(SUM(state = 'sealed'), 0) FROM pads`).
		Scan(&h.Pads.Total, &h.Pads.Unsealed, &h.Pads.Sealed)
	if err != nil {
		return h, wrap("health: count pads", err)
	}
	h.Writable = s.writable(ctx)
	return h, nil
}

// writable is Health's Writable.
func (s *Store) writable(ctx context.Context) bool {
	if s.readOnly || s.w == nil || s.commits == nil || !fileWritable(s.path) {
		return false
	}
	if s.commits.refusing() {
		s.commits.probe(ctx)
	}
	return !s.commits.refusing()
}

// EachPad calls fn for every pad in ID order (for check-integrity; not a request path).
func (s *Store) EachPad(ctx context.Context, fn func(locker.Pad) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT `+padColumns+` FROM pads ORDER BY id`)
	if err != nil {
		return wrap("list pads", err)
	}
	var pads []locker.Pad
	for rows.Next() {
		p, err := scanPad(rows)
		if err != nil {
			rows.Close()
			return wrap("list pads", err)
		}
		pads = append(pads, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrap("list pads", err)
	}
	for _, p := range pads {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
