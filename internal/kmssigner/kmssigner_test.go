package kmssigner_test

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/signer/signertest"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestMain(m *testing.M) { os.Exit(kmstest.Main(m)) }

func newSigner(t *testing.T, calls *awstest.Calls) *kmssigner.Signer {
	t.Helper()
	cfg := kmstest.Config(t)
	arn := kmstest.CreateKey(t, kms.NewFromConfig(cfg))
	var opts []func(*kms.Options)
	if calls != nil {
		opts = append(opts, func(o *kms.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware) })
	}
	s, err := kmssigner.New(t.Context(), kmssigner.Config{Client: kms.NewFromConfig(cfg, opts...), KeyID: arn})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	signertest.Run(t, func(t *testing.T) signer.Signer { return newSigner(t, nil) })
}

// TestOfflineVerifyOfKMSChain chains and signs audit entries with KMS, exports them, and
// verifies the export with nothing but the PEM public key: no KMS call, no catalog.
func TestOfflineVerifyOfKMSChain(t *testing.T) {
	calls := awstest.NewCalls()
	s := newSigner(t, calls)
	if got := calls.Take(); got["GetPublicKey"] != 1 || len(got) != 1 {
		t.Fatalf("New made %v, want exactly one GetPublicKey", got)
	}
	ch := &audit.Chainer{Signer: s}
	at := time.Date(2026, 10, 12, 9, 30, 0, 0, time.UTC)
	var events []warrant.Event
	for i, typ := range []string{warrant.EventServerAdded, warrant.EventCrawlObserved, warrant.EventVersionRecorded, "approved"} {
		events = append(events, warrant.Event{Type: typ, Actor: "arn:aws:sts::123456789012:assumed-role/crawl/fn", At: at.Add(time.Duration(i) * time.Second),
			Body: json.RawMessage(`{"server":"weather","n":` + string(rune('0'+i)) + `}`)})
	}
	recs, err := ch.Chain(t.Context(), warrant.Genesis(), events)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Take(); got["Sign"] != len(events) || len(got) != 1 {
		t.Fatalf("chaining %d entries made %v, want one Sign each and nothing else", len(events), got)
	}
	var export bytes.Buffer
	if err := audit.WriteExport(&export, recs); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(s.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	// Offline: only the export and the PEM.
	verify := func(exported []byte) audit.Report {
		t.Helper()
		block, _ := pem.Decode(pemKey)
		pub, err := signer.ParsePublicKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := signer.KeyIDOf(pub)
		parsed, err := audit.ParseExport(bytes.NewReader(exported))
		if err != nil {
			t.Fatal(err)
		}
		return audit.Verify(parsed, audit.Options{Keys: map[string]crypto.PublicKey{id: pub}})
	}
	if rep := verify(export.Bytes()); !rep.OK() || rep.Entries != len(events) || rep.Head.Hash != recs[len(recs)-1].Hash {
		t.Fatalf("verify the KMS-signed export: %+v", rep)
	}
	if got := calls.Take(); len(got) != 0 {
		t.Errorf("offline verification called KMS: %v", got)
	}
	// A changed body is caught at its entry.
	tampered := bytes.Replace(export.Bytes(), []byte(`"n":2`), []byte(`"n":9`), 1)
	if rep := verify(tampered); rep.OK() || rep.Problems[0].Seq != 3 {
		t.Errorf("tampered export: %+v", rep)
	}
}

func TestRefusesUnsuitableKeys(t *testing.T) {
	client := kms.NewFromConfig(kmstest.Config(t))
	for _, k := range []struct {
		spec  kmstypes.KeySpec
		usage kmstypes.KeyUsageType
	}{
		{kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt},
		{kmstypes.KeySpecEccNistP384, kmstypes.KeyUsageTypeSignVerify},
		{kmstypes.KeySpecRsa2048, kmstypes.KeyUsageTypeSignVerify},
	} {
		arn := kmstest.CreateOtherKey(t, client, k.spec, k.usage)
		_, err := kmssigner.New(t.Context(), kmssigner.Config{Client: client, KeyID: arn})
		if err == nil {
			t.Errorf("%s/%s key accepted", k.spec, k.usage)
		} else if k.spec != kmstypes.KeySpecSymmetricDefault && !errors.Is(err, kmssigner.ErrKeySpec) {
			t.Errorf("%s/%s key: %v, want ErrKeySpec", k.spec, k.usage, err)
		}
	}
	if _, err := kmssigner.New(t.Context(), kmssigner.Config{Client: client, KeyID: "alias/does-not-exist"}); err == nil || errors.Is(err, signer.ErrUnavailable) {
		t.Errorf("missing key: %v, want a plain error", err)
	}
}

// TestMotoDigestGap pins moto_server 5.2.1's KMS behaviour: it ignores MessageType DIGEST
// and signs SHA-256(message), so a DIGEST signature from moto does not verify over the
// digest. When this test fails, moto implements DIGEST: run signertest against it too
// (kmstest's doc explains why the suite uses local-kms meanwhile).
func TestMotoDigestGap(t *testing.T) {
	if awstest.External() {
		t.Skip("AWS_ENDPOINT_URL is set: the KMS there is not moto")
	}
	client := kms.NewFromConfig(awstest.Config(t))
	arn := kmstest.CreateKey(t, client)
	h := sha256.Sum256([]byte("entry"))
	out, err := client.Sign(t.Context(), &kms.SignInput{KeyId: &arn, Message: h[:], MessageType: kmstypes.MessageTypeDigest, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
	if err != nil {
		t.Fatal(err)
	}
	pk, err := client.GetPublicKey(t.Context(), &kms.GetPublicKeyInput{KeyId: &arn})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.ParsePublicKey(pk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rehashed := sha256.Sum256(h[:])
	if signer.Verify(pub, h[:], out.Signature) == nil {
		t.Fatal("moto now signs DIGEST messages as digests: run signertest against moto as well")
	}
	if err := signer.Verify(pub, rehashed[:], out.Signature); err != nil {
		t.Errorf("moto's DIGEST signature verifies neither over the digest nor over its hash: %v", err)
	}
	if _, err := kmssigner.New(t.Context(), kmssigner.Config{Client: client, KeyID: arn}); err != nil {
		t.Errorf("New on moto: %v", err)
	} else if s, _ := kmssigner.New(t.Context(), kmssigner.Config{Client: client, KeyID: arn}); s != nil {
		if _, err := s.Sign(t.Context(), h[:]); err == nil {
			t.Error("kmssigner accepted a signature that does not verify over the digest")
		}
	}
}
