// Package checkpoint writes and checks signed audit checkpoints: the audit head (sequence
// number and entry hash) signed by the log key and kept outside the catalog, so that a
// rewrite of the catalog's history — even one re-signed by someone who can use the log key
// — is caught by `audit verify --checkpoints`.
//
// A checkpoint is one JSON file, `checkpoints/<seq>.json` in a bucket (S3 on AWS, written
// once: versioning and Object Lock in governance mode) or `<seq>.json` in a directory:
//
//	{"at":"2026-10-12T09:30:00Z","hash":"<64 hex>","keyId":"sha256:…","seq":42,
//	 "signature":"<base64 ASN.1 ECDSA or Ed25519>","type":"toolwarrant-checkpoint/v1"}
//
// The signature is the log key's over SHA-256 of the RFC 8785 JSON of the same object
// without "signature". [Writer] is what functions/checkpoint runs on a schedule: it checks
// the entries since the last checkpoint (linkage, hashes, log signatures) before it signs
// a new one, so it never certifies a head it could not verify. [Checker] and [Verify]
// check a log against checkpoints as it streams by.
//
// Since issue 18 the checkpoint of record is the C2SP one: checkpoints/<size>.note, a signed
// note (c2sp.org/tlog-checkpoint) of the audit tree's origin, size and RFC 6962 root,
// signed by the Ed25519 checkpoint key ([SignNote], [OpenNote], [MessageSigner]), with
// witness cosignatures in <size>.cosig ([Witness], [Cosign]; a witness's own signer is
// [Cosigner], cosignature/v1, and [WitnessVerifier] checks one). [Policy] is a verifier's
// c2sp.org/tlog-policy file: the log's key, witnesses and a k-of-n quorum. [CheckTree] checks a log's
// tree against notes; [Seen] keeps the last checkpoint a verifier has seen, outside the
// catalog. The JSON heads stay for compatibility. See docs/transparency-log.md. The
// package is pure: the standard library, canon, audit, warrant's types, the signer and
// blob ports, and golang.org/x/mod/sumdb/note and tlog.
package checkpoint
