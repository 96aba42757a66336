// Package kmssigner is the AWS KMS driver of the signer.Signer port: the toolwarrant audit
// log key is an asymmetric KMS key (KeySpec ECC_NIST_P256, KeyUsage SIGN_VERIFY) that no
// person holds. Every audit entry hash is signed with Sign(SigningAlgorithm ECDSA_SHA_256,
// MessageType DIGEST): the 32-byte entry hash is the digest, and the ASN.1 DER signature
// verifies with signer.Verify under the public key, offline, exactly like a keysigner
// P-256 signature.
//
// New fetches the public key once (GetPublicKey) and checks the key's spec, usage and
// algorithms; verification never calls KMS again. Each signature is checked against that
// public key before it is returned, so a wrong key or a broken response fails closed.
// Throttling, KMS 5xx, network errors and timeouts wrap signer.ErrUnavailable: nothing is
// signed and the caller records nothing.
package kmssigner
