package signer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
)

// Signer signs audit entry hashes. Implementations are safe for concurrent use.
type Signer interface {
	// KeyID names the key: KeyIDOf(Public()).
	KeyID() string
	// Public returns the public key: *ecdsa.PublicKey (P-256) or ed25519.PublicKey.
	Public() crypto.PublicKey
	// Sign signs a 32-byte hash. The signature verifies with Verify(Public(), hash, sig).
	// Errors wrap ErrUnavailable when the key cannot be used right now (a KMS outage);
	// nothing is signed then.
	Sign(ctx context.Context, hash []byte) ([]byte, error)
}

// Errors.
var (
	// ErrUnavailable: the key could not be used now; retry later.
	ErrUnavailable = errors.New("signer unavailable")
	// ErrBadSignature: a signature does not verify under the key.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrUnsupportedKey: the key is neither ECDSA P-256 nor Ed25519.
	ErrUnsupportedKey = errors.New("unsupported key type (want ECDSA P-256 or Ed25519)")
)

// KeyIDOf returns "sha256:" and the hex SHA-256 of the key's PKIX (SubjectPublicKeyInfo)
// DER encoding, the same for a key file and for the KMS key it was imported into.
func KeyIDOf(pub crypto.PublicKey) (string, error) {
	if err := check(pub); err != nil {
		return "", err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func check(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return ErrUnsupportedKey
		}
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return ErrUnsupportedKey
		}
	default:
		return ErrUnsupportedKey
	}
	return nil
}

// Verify checks sig over hash under pub. It returns nil, or an error wrapping
// ErrBadSignature or ErrUnsupportedKey.
func Verify(pub crypto.PublicKey, hash, sig []byte) error {
	if err := check(pub); err != nil {
		return err
	}
	ok := false
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		ok = ecdsa.VerifyASN1(k, hash, sig)
	case ed25519.PublicKey:
		ok = ed25519.Verify(k, hash, sig)
	}
	if !ok {
		return ErrBadSignature
	}
	return nil
}

// ParsePublicKey parses a PKIX DER public key and checks its type.
func ParsePublicKey(der []byte) (crypto.PublicKey, error) {
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	if err := check(pub); err != nil {
		return nil, err
	}
	return pub, nil
}
