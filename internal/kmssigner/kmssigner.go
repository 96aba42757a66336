package kmssigner

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/signer"
)

var _ signer.Signer = (*Signer)(nil)

// API is the part of the KMS client the signer uses (*kms.Client implements it; unit tests
// pass a fake returning the SDK's own error types).
type API interface {
	Sign(ctx context.Context, in *kms.SignInput, optFns ...func(*kms.Options)) (*kms.SignOutput, error)
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
}

// Config configures New.
type Config struct {
	// Client is the KMS client, built by the caller on its aws.Config (so tests, moto and
	// LocalStack inject endpoints). Required.
	Client API
	// KeyID names the KMS key: a key ID, key ARN, alias name ("alias/...") or alias ARN.
	// Required. The template passes the key's ARN.
	KeyID string
	// Logger receives one debug line per failed Sign. Default: discard.
	Logger *slog.Logger
}

// Signer signs 32-byte hashes with a KMS ECC_NIST_P256 key. It is safe for concurrent use.
type Signer struct {
	client API
	kmsKey string // as configured: what Sign names
	keyARN string // as KMS reported it
	pub    *ecdsa.PublicKey
	keyID  string // signer.KeyIDOf(pub)
	log    *slog.Logger
}

// ErrKeySpec is wrapped by New when the KMS key cannot sign audit entries: not an
// ECC_NIST_P256 SIGN_VERIFY key offering ECDSA_SHA_256.
var ErrKeySpec = errors.New("KMS key is not an ECC_NIST_P256 SIGN_VERIFY key with ECDSA_SHA_256")

// New fetches the key's public key once (one GetPublicKey call) and checks that the key
// can sign audit entries. Errors wrap signer.ErrUnavailable when KMS could not be reached
// or throttled, ErrKeySpec for an unsuitable key.
func New(ctx context.Context, cfg Config) (*Signer, error) {
	if cfg.Client == nil || cfg.KeyID == "" {
		return nil, errors.New("kmssigner: Config.Client and Config.KeyID are required")
	}
	out, err := cfg.Client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(cfg.KeyID)})
	if err != nil {
		return nil, classify("get public key of "+cfg.KeyID, err)
	}
	spec := out.KeySpec
	if spec == "" { // older emulators (moto 5.2) fill only the deprecated field
		spec = kmstypes.KeySpec(out.CustomerMasterKeySpec) //nolint:staticcheck // read only as a fallback for emulators
	}
	if spec != kmstypes.KeySpecEccNistP256 || out.KeyUsage != kmstypes.KeyUsageTypeSignVerify ||
		!slices.Contains(out.SigningAlgorithms, kmstypes.SigningAlgorithmSpecEcdsaSha256) {
		return nil, fmt.Errorf("kmssigner: key %s (spec %s, usage %s, algorithms %v): %w", cfg.KeyID, spec, out.KeyUsage, out.SigningAlgorithms, ErrKeySpec)
	}
	pub, err := signer.ParsePublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("kmssigner: key %s: %w", cfg.KeyID, err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("kmssigner: key %s: %w", cfg.KeyID, ErrKeySpec)
	}
	id, err := signer.KeyIDOf(ec)
	if err != nil {
		return nil, fmt.Errorf("kmssigner: key %s: %w", cfg.KeyID, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Signer{client: cfg.Client, kmsKey: cfg.KeyID, keyARN: aws.ToString(out.KeyId), pub: ec, keyID: id, log: log}, nil
}

// KeyID implements signer.Signer: "sha256:" and the hex SHA-256 of the key's PKIX DER.
func (s *Signer) KeyID() string { return s.keyID }

// Public implements signer.Signer: the *ecdsa.PublicKey fetched by New.
func (s *Signer) Public() crypto.PublicKey { return s.pub }

// KeyARN returns the KMS key's ARN as GetPublicKey reported it.
func (s *Signer) KeyARN() string { return s.keyARN }

// Sign implements signer.Signer with one KMS Sign call (ECDSA_SHA_256, MessageType DIGEST).
// The signature is verified against the public key before it is returned.
func (s *Signer) Sign(ctx context.Context, hash []byte) ([]byte, error) {
	if len(hash) != sha256.Size {
		return nil, fmt.Errorf("kmssigner: sign: want a %d-byte hash, got %d bytes", sha256.Size, len(hash))
	}
	sig, err := kmsSign(ctx, s.client, s.log, s.kmsKey, hash, kmstypes.MessageTypeDigest, kmstypes.SigningAlgorithmSpecEcdsaSha256)
	if err != nil {
		return nil, err
	}
	if err := signer.Verify(s.pub, hash, sig); err != nil {
		return nil, fmt.Errorf("kmssigner: KMS returned a signature that does not verify under key %s: %w", s.keyID, err)
	}
	return sig, nil
}

// LogValue shows the key's identity, never anything else.
func (s *Signer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("kms_key", s.kmsKey), slog.String("key_id", s.keyID))
}

// unavailableCodes are KMS error codes meaning "cannot sign right now; retry later".
var unavailableCodes = map[string]bool{
	"ThrottlingException":        true,
	"KMSInternalException":       true,
	"DependencyTimeoutException": true,
	"KeyUnavailableException":    true,
	"LimitExceededException":     true,
	"ServiceUnavailable":         true,
	"InternalFailure":            true,
}

// classify wraps err: signer.ErrUnavailable for throttling, server faults, exhausted
// retries, timeouts and network errors; otherwise a plain error (access denied, a disabled
// or missing key), whose cause is kept as text — it is not part of the port's contract.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("kmssigner: %s: %w", op, err)
	}
	if awserr.Transient(err, unavailableCodes) {
		return fmt.Errorf("kmssigner: %s: %w: %v", op, signer.ErrUnavailable, err)
	}
	return fmt.Errorf("kmssigner: %s: %v", op, err)
}

// kmsSign is one KMS Sign call, its error classified (ErrUnavailable for "retry later")
// and logged at debug level; the caller verifies the signature it returns.
func kmsSign(ctx context.Context, c API, log *slog.Logger, key string, msg []byte, typ kmstypes.MessageType, alg kmstypes.SigningAlgorithmSpec) ([]byte, error) {
	out, err := c.Sign(ctx, &kms.SignInput{KeyId: aws.String(key), Message: msg, MessageType: typ, SigningAlgorithm: alg})
	if err != nil {
		err = classify("sign with "+key, err)
		log.DebugContext(ctx, "kms sign failed", slog.String("key", key), slog.String("error", err.Error()))
		return nil, err
	}
	return out.Signature, nil
}
