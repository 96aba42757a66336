package sshsig

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Key types.
const (
	TypeEd25519   = ssh.KeyAlgoED25519
	TypeECDSAP256 = ssh.KeyAlgoECDSA256
)

// ErrUnsupported is wrapped for key types other than ssh-ed25519 and ecdsa-sha2-nistp256.
var ErrUnsupported = errors.New("unsupported SSH key type (use ssh-ed25519 or ecdsa-sha2-nistp256)")

// ErrPrivateKey is returned by [ParseAuthorizedKey] for a private key (PEM or OpenSSH),
// given where its public key belongs.
var ErrPrivateKey = errors.New("this is a private key, not a public key")

// PublicKey is an SSH public key of a supported type.
type PublicKey struct {
	// Type is TypeEd25519 or TypeECDSAP256.
	Type string
	// Blob is the key in SSH wire format.
	Blob []byte
	// Key is ed25519.PublicKey or *ecdsa.PublicKey.
	Key crypto.PublicKey

	ssh ssh.PublicKey // nil in the zero PublicKey
}

// Fingerprint returns "SHA256:" and the unpadded base64 SHA-256 of the blob, as
// ssh-keygen -l prints it.
func (k PublicKey) Fingerprint() string {
	// ssh.FingerprintSHA256 computes the same from an ssh.PublicKey; the blob is used here
	// so that the zero PublicKey (a caller that ignored a parse error) has a fingerprint
	// that matches no key rather than a nil dereference.
	sum := sha256.Sum256(k.Blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// AuthorizedKey returns the key as an authorized_keys line without a comment.
func (k PublicKey) AuthorizedKey() string {
	return k.Type + " " + base64.StdEncoding.EncodeToString(k.Blob)
}

// ParseAuthorizedKey parses one authorized_keys / .pub line: "TYPE BASE64 [comment]".
// Options before the type are not accepted.
//
// The line is split here rather than by ssh.ParseAuthorizedKey, which is made for whole
// authorized_keys files: it accepts options, skips comment lines and, on a malformed
// line, retries the first word as options, so its error is about base64 rather than the
// line a person gave. The blob itself is parsed by ssh.ParsePublicKey.
func ParseAuthorizedKey(line string) (PublicKey, string, error) {
	if t := strings.TrimSpace(line); strings.HasPrefix(t, "-----BEGIN ") && strings.Contains(t, "PRIVATE KEY-----") {
		return PublicKey{}, "", ErrPrivateKey
	}
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

// ParsePublicKey parses a wire-format public key blob of a supported type.
func ParsePublicKey(blob []byte) (PublicKey, error) {
	var head struct {
		Type string
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(blob, &head); err != nil {
		return PublicKey{}, errors.New("malformed SSH public key")
	}
	if !supported(head.Type) {
		return PublicKey{}, fmt.Errorf("%w: %q", ErrUnsupported, head.Type)
	}
	k, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return PublicKey{}, fmt.Errorf("malformed %s key: %v", head.Type, err)
	}
	return fromSSH(k)
}

// fromSSH converts a key x/crypto/ssh parsed, refusing unsupported types.
func fromSSH(k ssh.PublicKey) (PublicKey, error) {
	if !supported(k.Type()) {
		return PublicKey{}, fmt.Errorf("%w: %q", ErrUnsupported, k.Type())
	}
	ck, ok := k.(ssh.CryptoPublicKey)
	if !ok {
		return PublicKey{}, fmt.Errorf("%w: %q", ErrUnsupported, k.Type())
	}
	return PublicKey{Type: k.Type(), Blob: k.Marshal(), Key: ck.CryptoPublicKey(), ssh: k}, nil
}

func supported(typ string) bool { return typ == TypeEd25519 || typ == TypeECDSAP256 }
