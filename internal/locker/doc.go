// Package locker is the Padlock domain: tamper-evident, append-only pads for agent-to-agent
// handoff. It holds the hash chain, the block-0 locker.handoff.v1 envelope rules, the limits,
// read tickets and their leases, lazy expiry, the seal-time chain audit, and the Service that
// applies them over a Store.
//
// The package does no I/O of its own: storage is the Store port (implemented by sqlitestore
// and dynamostore and checked by storetest), time is a Clock, randomness an io.Reader.
// Transports (httpapi) translate *Error kinds into wire statuses; nothing here knows HTTP.
//
// The chain: curr_hash = hex(sha256(ascii(prev_hash_hex) || payload)), genesis prev_hash is 64
// ASCII zeros, and a pad's head is its last curr_hash. Appends are check-and-set on the head:
// a block is stored only if the pad still has exactly seq blocks ending in prev_hash, so two
// writers can never fork a pad and an acknowledged block is never overwritten.
package locker
