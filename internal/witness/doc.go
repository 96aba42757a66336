// Package witness is a c2sp.org/tlog-witness witness: the add-checkpoint handler
// (`toolwarrant witness serve`) that cosigns a log's checkpoint (c2sp.org/tlog-cosignature,
// cosignature/v1, timestamped Ed25519) only when it is consistent with the last one it
// cosigned for that origin, and its state file.
//
// The state file holds the witness's name and verifier key, and per log origin the log's
// checkpoint verifier key and the size, root hash and note of the latest checkpoint
// cosigned. Every change takes an exclusive lock beside it (STATE.lock, flock), reads the
// file again, and replaces it atomically and durably (a temporary file written and
// fsynced, renamed over it, the directory fsynced), so two processes on one state cannot
// both cosign from the same size, and a crash leaves the old state or the new one. A
// checkpoint is cosigned only after its new state is on disk, as tlog-witness requires.
//
// Statuses (tlog-witness): 200 with the cosignature lines; 400 a malformed request or an
// old size larger than the checkpoint's; 403 no valid signature of the log's key; 404 an
// unknown origin; 409 the old size is not the size last cosigned (the body says it, as
// text/x.tlog.size); 413 a body over MaxBodyBytes; 422 a consistency proof that does not
// verify, or the same size with another root hash (a fork); 503 the state is locked
// longer than LockTimeout. GET /<hex SHA-256 of origin>/checkpoint serves the latest
// cosigned checkpoint (the monitoring API).
package witness
