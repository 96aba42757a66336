// Package keysigner is the local driver of the signer.Signer port: an ECDSA P-256 or
// Ed25519 private key in a PEM (PKCS #8) file, created with mode 0600 and refused when
// group or others can read it. It is what `toolwarrant init` creates beside the catalog.
package keysigner
