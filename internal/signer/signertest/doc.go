// Package signertest is the conformance suite of the signer.Signer port, run by every
// driver (keysigner, kmssigner) from its own _test.go.
package signertest
