// Package audit builds and verifies toolwarrant's hash-chained, signed audit log.
//
// Every entry has a sequence number (from 1, no gaps), a type (server_added,
// crawl_observed, version_recorded, approved, rejected, rolled_back, trust_changed, ...),
// an actor, a time and an event body. Its canonical body is the RFC 8785 JSON of
//
//	{"seq": N, "type": T, "actor": A, "at": "RFC 3339 UTC, nanoseconds", "event": {...}}
//
// and its hash is
//
//	entry_hash = SHA-256(prev_hash || JCS(body))
//
// where prev_hash is the previous entry's hash as 32 raw bytes (32 zero bytes before the
// first entry) and hashes are written as 64 lower-case hex digits. Each entry hash is
// signed by the log key (signer.Signer: keysigner locally, KMS on AWS).
//
// [Chainer] is the warrant.Auditor that turns a write's events into signed records; the
// store appends them in the same transaction as the write, only if the head is still the
// one they were chained from. [Verify] recomputes every hash and signature and reports
// every problem with the sequence number it is at; given the head or trust root the
// operator kept outside the database, it also catches a history rewritten and re-signed
// by someone holding the log key. [WriteExport] and [ParseExport] are the JSON Lines
// export `toolwarrant audit export` writes and `audit verify --export` reads.
//
// The entry bodies are also the leaves of an RFC 6962 Merkle tree ([Tree], [LeafHash]):
// leaf i is SHA-256(0x00 || body of entry i+1). The tree commits to the same bodies as the
// chain; it gives the C2SP checkpoints (internal/checkpoint) their root, and inclusion and
// consistency proofs (docs/transparency-log.md).
//
// The package is pure: the standard library, canon, warrant's types, the signer port and
// golang.org/x/mod/sumdb/tlog (RFC 6962 hashing and proofs, itself standard-library only).
package audit
