package checkpoint

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Cosigner is a witness's key as a cosignature/v1 signer (c2sp.org/tlog-cosignature): a
// note.Signer whose signature of a checkpoint's note text is the timestamp (8 bytes,
// big-endian POSIX seconds) followed by the Ed25519 signature of
//
//	cosignature/v1
//	time <timestamp>
//	<the checkpoint's note text>
//
// under the key name and a key hash of type 0x04. note.Sign with a Cosigner writes the
// cosignature line a witness returns; WitnessVerifier checks it.
type Cosigner struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
	key  MessageSigner
	now  func() time.Time
}

var _ note.Signer = (*Cosigner)(nil)

// NewCosigner returns the cosigner named name (a schema-less URL such as
// witness.example/w1: no spaces, no '+') over the Ed25519 key s, stamping each signature
// with now (time.Now when nil).
func NewCosigner(name string, s MessageSigner, now func() time.Time) (*Cosigner, error) {
	pub, ok := s.Public().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the witness key must be Ed25519, not %T", s.Public())
	}
	if !ValidOrigin(name) {
		return nil, fmt.Errorf("witness name %q: must be non-empty, without spaces or '+' (a schema-less URL such as witness.example.com/w1)", name)
	}
	if now == nil {
		now = time.Now
	}
	return &Cosigner{name: name, hash: keyHash(name, algCosignatureV1, pub), pub: pub, key: s, now: now}, nil
}

// Name implements note.Signer.
func (c *Cosigner) Name() string { return c.name }

// KeyHash implements note.Signer.
func (c *Cosigner) KeyHash() uint32 { return c.hash }

// VerifierKey returns the cosigner's verifier key, "<name>+<key hash>+base64(0x04 ||
// public key)": what verifiers list (--witness-key, a policy's witness line).
func (c *Cosigner) VerifierKey() string { return CosignerVerifierKey(c.name, c.pub) }

// CosignerVerifierKey returns the cosignature/v1 verifier key of the Ed25519 key pub
// under name.
func CosignerVerifierKey(name string, pub ed25519.PublicKey) string {
	raw := append([]byte{algCosignatureV1}, pub...)
	return fmt.Sprintf("%s+%08x+%s", name, keyHash(name, algCosignatureV1, pub), base64.StdEncoding.EncodeToString(raw))
}

// Sign implements note.Signer: msg is the checkpoint's note text.
func (c *Cosigner) Sign(msg []byte) ([]byte, error) {
	return c.SignContext(context.Background(), msg)
}

// SignContext is Sign with a context for the key.
func (c *Cosigner) SignContext(ctx context.Context, msg []byte) ([]byte, error) {
	t := c.now().Unix()
	if t <= 0 {
		return nil, errors.New("cosignature/v1: the clock is before 1970")
	}
	m := cosignedMessage(uint64(t), msg)
	sig, err := c.key.SignMessage(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("cosign: %w", err)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(c.pub, m, sig) {
		return nil, errors.New("cosign: the witness key's signature does not verify under its public key")
	}
	out := make([]byte, 8, 8+len(sig))
	binary.BigEndian.PutUint64(out, uint64(t))
	return append(out, sig...), nil
}

// cosignedMessage is what a cosignature/v1 signs: the header line, the time line, the
// note text.
func cosignedMessage(t uint64, text []byte) []byte {
	return []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n" + string(text))
}
