package kmssigner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/signer"
)

// fake is a function-field KMS that signs with a local key and returns the SDK's own error
// types when told to.
type fake struct {
	key     *ecdsa.PrivateKey
	signErr error
	badSig  bool
	spec    kmstypes.KeySpec
}

func (f *fake) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	der, _ := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	spec := f.spec
	if spec == "" {
		spec = kmstypes.KeySpecEccNistP256
	}
	return &kms.GetPublicKeyOutput{KeyId: aws.String("arn:aws:kms:us-east-1:123456789012:key/" + aws.ToString(in.KeyId)), PublicKey: der,
		KeySpec: spec, KeyUsage: kmstypes.KeyUsageTypeSignVerify, SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEcdsaSha256}}, nil
}

func (f *fake) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	if f.signErr != nil {
		return nil, f.signErr
	}
	if in.MessageType != kmstypes.MessageTypeDigest || in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "want DIGEST / ECDSA_SHA_256"}
	}
	msg := in.Message
	if f.badSig {
		msg = append([]byte{1}, msg[1:]...)
	}
	sig, err := ecdsa.SignASN1(rand.Reader, f.key, msg)
	return &kms.SignOutput{Signature: sig}, err
}

func TestErrorTranslation(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	h := sha256.Sum256([]byte("entry"))
	tests := []struct {
		name        string
		err         error
		badSig      bool
		unavailable bool
	}{
		{name: "throttled", err: &smithy.GenericAPIError{Code: "ThrottlingException", Message: "slow down"}, unavailable: true},
		{name: "kms internal", err: &kmstypes.KMSInternalException{Message: aws.String("boom")}, unavailable: true},
		{name: "dependency timeout", err: &kmstypes.DependencyTimeoutException{Message: aws.String("hsm")}, unavailable: true},
		{name: "retries exhausted", err: &retry.MaxAttemptsError{Attempt: 3, Err: errors.New("503")}, unavailable: true},
		{name: "network", err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}, unavailable: true},
		{name: "deadline", err: context.DeadlineExceeded, unavailable: true},
		{name: "access denied", err: &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not allowed"}},
		{name: "disabled key", err: &kmstypes.DisabledException{Message: aws.String("disabled")}},
		{name: "signature that does not verify", badSig: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{key: key, signErr: tc.err, badSig: tc.badSig}
			s, err := New(t.Context(), Config{Client: f, KeyID: "k"})
			if err != nil {
				t.Fatal(err)
			}
			sig, err := s.Sign(t.Context(), h[:])
			if err == nil || sig != nil {
				t.Fatalf("Sign = %x, %v; want an error and no signature", sig, err)
			}
			if got := errors.Is(err, signer.ErrUnavailable); got != tc.unavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v, want %v", err, got, tc.unavailable)
			}
		})
	}
	s, err := New(t.Context(), Config{Client: &fake{key: key}, KeyID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign(t.Context(), []byte("short")); err == nil {
		t.Error("signed a message that is not a 32-byte hash")
	}
	if _, err := New(t.Context(), Config{Client: &fake{key: key, spec: kmstypes.KeySpecEccNistP384}, KeyID: "k"}); !errors.Is(err, ErrKeySpec) {
		t.Errorf("P-384 spec: %v", err)
	}
	if s.KeyARN() != "arn:aws:kms:us-east-1:123456789012:key/k" {
		t.Errorf("KeyARN = %s", s.KeyARN())
	}
}
