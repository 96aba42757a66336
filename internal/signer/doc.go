// Package signer is the port for the key that signs toolwarrant's audit log: every audit
// entry's hash is signed, so a verifier holding only the public key can tell a record
// written by toolwarrant from one written by someone who merely holds the database.
//
// Two algorithms are supported, both over the 32-byte entry hash: ECDSA P-256 (the hash
// is the digest signed, ASN.1 DER signature — what AWS KMS ECC_NIST_P256 /
// ECDSA_SHA_256 with MessageType DIGEST produces) and Ed25519 (the hash is the message).
// Drivers: internal/keysigner (a local key file), kmssigner (AWS KMS, later). The
// conformance suite is internal/signer/signertest. The package uses only the standard library.
package signer
