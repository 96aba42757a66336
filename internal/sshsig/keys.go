package sshsig

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Key types.
const (
	TypeEd25519   = "ssh-ed25519"
	TypeECDSAP256 = "ecdsa-sha2-nistp256"
)

// ErrUnsupported is wrapped for key types other than ssh-ed25519 and ecdsa-sha2-nistp256.
var ErrUnsupported = errors.New("unsupported SSH key type (use ssh-ed25519 or ecdsa-sha2-nistp256)")

// PublicKey is an SSH public key.
type PublicKey struct {
	// Type is TypeEd25519 or TypeECDSAP256.
	Type string
	// Blob is the key in SSH wire format.
	Blob []byte
	// Key is ed25519.PublicKey or *ecdsa.PublicKey.
	Key crypto.PublicKey
}

// Fingerprint returns "SHA256:" and the unpadded base64 SHA-256 of the blob, as
// ssh-keygen -l prints it.
func (k PublicKey) Fingerprint() string {
	sum := sha256.Sum256(k.Blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// AuthorizedKey returns the key as an authorized_keys line without a comment.
func (k PublicKey) AuthorizedKey() string {
	return k.Type + " " + base64.StdEncoding.EncodeToString(k.Blob)
}

// ParseAuthorizedKey parses one authorized_keys / .pub line: "TYPE BASE64 [comment]".
// Options before the type are not accepted.
func ParseAuthorizedKey(line string) (PublicKey, string, error) {
	f := strings.Fields(strings.TrimSpace(line))
	if len(f) < 2 {
		return PublicKey{}, "", errors.New("not an SSH public key line (TYPE BASE64 [comment])")
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return PublicKey{}, "", fmt.Errorf("SSH public key: %v", err)
	}
	k, err := ParsePublicKey(blob)
	if err != nil {
		return PublicKey{}, "", err
	}
	if k.Type != f[0] {
		return PublicKey{}, "", fmt.Errorf("SSH public key: line says %s, key is %s", f[0], k.Type)
	}
	return k, strings.Join(f[2:], " "), nil
}

// ParsePublicKey parses a wire-format public key blob.
func ParsePublicKey(blob []byte) (PublicKey, error) {
	r := &reader{b: blob}
	typ := string(r.string())
	k := PublicKey{Type: typ, Blob: bytes.Clone(blob)}
	switch typ {
	case TypeEd25519:
		pub := r.string()
		if r.err != nil || len(pub) != ed25519.PublicKeySize {
			return PublicKey{}, errors.New("malformed ssh-ed25519 key")
		}
		k.Key = ed25519.PublicKey(bytes.Clone(pub))
	case TypeECDSAP256:
		curve := string(r.string())
		q := r.string()
		if r.err != nil || curve != "nistp256" {
			return PublicKey{}, errors.New("malformed ecdsa-sha2-nistp256 key")
		}
		if _, err := ecdh.P256().NewPublicKey(q); err != nil {
			return PublicKey{}, fmt.Errorf("ecdsa-sha2-nistp256 key: %v", err)
		}
		pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), q)
		if err != nil {
			return PublicKey{}, fmt.Errorf("ecdsa-sha2-nistp256 key: %w", err)
		}
		k.Key = pk
	default:
		return PublicKey{}, fmt.Errorf("%w: %q", ErrUnsupported, typ)
	}
	if r.err != nil || len(r.b) != 0 {
		return PublicKey{}, errors.New("malformed SSH public key")
	}
	return k, nil
}
