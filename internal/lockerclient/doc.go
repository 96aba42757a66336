// Package lockerclient is the verifying HTTP client of the Padlock daemon (lockerd, or any
// daemon that serves the wire contract in docs/spec/padlock-wire.md). lockermcp's tools and its
// inspect command use it; nothing else should talk to a daemon on a model's behalf.
//
// Reads fail closed. [Client.Read] fetches the manifest, walks the whole chain from genesis
// in pages of up to 256 blocks (halving the page on 413), recomputes every hash from the
// payload bytes and returns either a verified [Chain] or an error that carries no payload:
// a [*DaemonError] when the daemon refused or could not be reached, a [*VerificationError]
// when what it served is incoherent (short page, changing total_blocks, wrong seq, foreign
// pad_id, undecodable base64, payload_utf8 differing from the bytes, a chain that does not
// land on the head it aimed at, a malformed or mismatching expected head).
//
// Writes are the daemon's assertion, except [Client.Deposit], which computes the chain of
// the bytes it sends and checks every acknowledgment and the seal against it.
//
// Secrets (write keys, read tickets) never appear in errors or logs: URLs in error texts are
// reduced to scheme, host and path, and every daemon-supplied text is scrubbed of the secrets
// the request carried. The Logger, if any, receives method, route template, status and
// duration only.
package lockerclient
