package keysigner

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/agentgate-dev/agentgate/internal/signer"
)

var _ signer.Signer = (*Signer)(nil)

// Algorithm is the kind of key to create.
type Algorithm string

// Algorithms.
const (
	ECDSAP256 Algorithm = "ecdsa-p256"
	Ed25519   Algorithm = "ed25519"
)

// ErrPermissions is wrapped when a key file is accessible to group or others.
var ErrPermissions = errors.New("key file is accessible to group or others")

// Signer signs with a private key loaded from a file.
type Signer struct {
	key   crypto.Signer
	keyID string
	path  string
}

// Create writes a new key of algorithm alg to path (which must not exist) with mode 0600
// and returns its signer.
func Create(path string, alg Algorithm) (*Signer, error) {
	var key crypto.Signer
	var err error
	switch alg {
	case ECDSAP256, "":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case Ed25519:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("keysigner: unknown algorithm %q (want %s or %s)", alg, ECDSAP256, Ed25519)
	}
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	err = f.Chmod(0o600) // the umask must not widen it
	if err == nil {
		err = pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("write key file %s: %w", path, err)
	}
	return newSigner(key, path)
}

// Load reads the key at path, refusing a file readable or writable by group or others.
func Load(path string) (*Signer, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no log key at %s: %w", path, err)
		}
		return nil, fmt.Errorf("log key %s: %w", path, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run: chmod 600 %s", ErrPermissions, path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read log key %s: %w", path, err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("log key %s: not a PEM PKCS #8 private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w", path, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("log key %s: %w", path, signer.ErrUnsupportedKey)
	}
	return newSigner(key, path)
}

func newSigner(key crypto.Signer, path string) (*Signer, error) {
	id, err := signer.KeyIDOf(key.Public())
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w", path, err)
	}
	return &Signer{key: key, keyID: id, path: path}, nil
}

// KeyID implements signer.Signer.
func (s *Signer) KeyID() string { return s.keyID }

// Public implements signer.Signer.
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// Sign implements signer.Signer.
func (s *Signer) Sign(ctx context.Context, hash []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch k := s.key.(type) {
	case *ecdsa.PrivateKey:
		return ecdsa.SignASN1(rand.Reader, k, hash)
	case ed25519.PrivateKey:
		return ed25519.Sign(k, hash), nil
	}
	return nil, signer.ErrUnsupportedKey
}

// LogValue shows the key's identity, never its material.
func (s *Signer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("key_id", s.keyID), slog.String("path", s.path))
}

// SignMessage signs msg as pure Ed25519 (checkpoint.MessageSigner, the checkpoint key's
// port): only an Ed25519 key can, since a signed note's verifiers check Ed25519.
func (s *Signer) SignMessage(ctx context.Context, msg []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, ok := s.key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key %s is not Ed25519: %w", s.path, signer.ErrUnsupportedKey)
	}
	return ed25519.Sign(k, msg), nil
}
