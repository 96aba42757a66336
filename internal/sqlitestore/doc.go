// Package sqlitestore holds the embedded SQLite drivers: Padlock pads (Open, this file's
// subject) and the toolwarrant catalog (OpenCatalog; its data model and write steps are at the
// top of catalog.go). Both are pure Go (modernc.org/sqlite) with history tables guarded by
// triggers that refuse UPDATE and DELETE.
//
// Pads live in one SQLite file in WAL mode with synchronous=FULL, so an acknowledged append
// survives a crash or power loss once its 201 has been sent.
//
// Three handles share the file: one writer connection, owned by a committer goroutine that
// runs the pad writes waiting at once in one IMMEDIATE transaction, each in its own savepoint
// (rolled back alone on its error), and commits them with one fsync — group commit, see
// groupcommit.go: a write is acknowledged only after that commit —, a small read-only pool for
// request reads, and a separate read-only connection for /health that issues no transaction
// control at all, so polling health can never end or corrupt another request's transaction.
// Health's writable is false once the file refuses a write (SQLITE_FULL — a full disk —,
// a read-only file, I/O errors); while it does, Health queues a write probe through the
// committer, in a transaction of its own, so the store says writable again as soon as a
// write commits (Store.Health).
// Writes are check-and-set on the pad row (see README.md), which is what the locker.Store
// port promises and what the DynamoDB driver does with condition expressions.
package sqlitestore
