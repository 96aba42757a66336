package kmssigner

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/agentgate-dev/agentgate/internal/signer"
)

// ErrNoteKeySpec is wrapped by NewNoteSigner for a key that cannot sign checkpoint notes.
var ErrNoteKeySpec = errors.New("KMS key is not an ECC_NIST_EDWARDS25519 SIGN_VERIFY key with ED25519_SHA_512")

// NoteSigner is the checkpoint key in KMS (checkpoint.MessageSigner): an
// ECC_NIST_EDWARDS25519 SIGN_VERIFY key that signs the checkpoint note's text with
// ED25519_SHA_512 over the RAW message — pure Ed25519 (RFC 8032), what a signed-note
// verifier checks. (ED25519_PH_SHA_512, the pre-hashed variant, would not verify as a
// note signature.) The private key never leaves KMS.
type NoteSigner struct {
	client API
	kmsKey string
	pub    ed25519.PublicKey
	log    *slog.Logger
}

// NewNoteSigner fetches the key's public key once and checks its spec. Errors wrap
// signer.ErrUnavailable when KMS could not be reached, ErrNoteKeySpec for another key.
func NewNoteSigner(ctx context.Context, cfg Config) (*NoteSigner, error) {
	if cfg.Client == nil || cfg.KeyID == "" {
		return nil, errors.New("kmssigner: Config.Client and Config.KeyID are required")
	}
	out, err := cfg.Client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(cfg.KeyID)})
	if err != nil {
		return nil, classify("get public key of "+cfg.KeyID, err)
	}
	if out.KeySpec != kmstypes.KeySpecEccNistEdwards25519 || out.KeyUsage != kmstypes.KeyUsageTypeSignVerify ||
		!slices.Contains(out.SigningAlgorithms, kmstypes.SigningAlgorithmSpecEd25519Sha512) {
		return nil, fmt.Errorf("kmssigner: key %s (spec %s, usage %s, algorithms %v): %w", cfg.KeyID, out.KeySpec, out.KeyUsage, out.SigningAlgorithms, ErrNoteKeySpec)
	}
	pub, err := signer.ParsePublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("kmssigner: key %s: %w", cfg.KeyID, err)
	}
	ed, ok := pub.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("kmssigner: key %s: %w", cfg.KeyID, ErrNoteKeySpec)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &NoteSigner{client: cfg.Client, kmsKey: cfg.KeyID, pub: ed, log: log}, nil
}

// Public returns the ed25519.PublicKey fetched by NewNoteSigner.
func (s *NoteSigner) Public() crypto.PublicKey { return s.pub }

// SignMessage signs msg (at most 4096 bytes, KMS's limit for RAW) with one KMS Sign call
// and checks the signature against the public key before returning it.
func (s *NoteSigner) SignMessage(ctx context.Context, msg []byte) ([]byte, error) {
	if len(msg) > 4096 {
		return nil, fmt.Errorf("kmssigner: a %d-byte message is over KMS's 4096-byte limit for RAW", len(msg))
	}
	sig, err := kmsSign(ctx, s.client, s.log, s.kmsKey, msg, kmstypes.MessageTypeRaw, kmstypes.SigningAlgorithmSpecEd25519Sha512)
	if err != nil {
		return nil, err
	}
	if !ed25519.Verify(s.pub, msg, sig) {
		return nil, fmt.Errorf("kmssigner: KMS returned a signature that does not verify under checkpoint key %s", s.kmsKey)
	}
	return sig, nil
}

// LogValue shows the key's identity, never anything else.
func (s *NoteSigner) LogValue() slog.Value {
	return slog.GroupValue(slog.String("kms_key", s.kmsKey))
}
