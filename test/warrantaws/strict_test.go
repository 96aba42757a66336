package warrantaws_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp/awsapptest"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/kmssigner/kmstest"
)

// TestLogKeyPolicyInForce: template.yaml's key policy decides who signs with the audit
// log key, as KMS would: the three toolwarrant roles sign; the pads function's role and
// the account's administrator (who administers the key) do not; anyone in the account
// reads the public key; KMS's message limits hold.
func TestLogKeyPolicyInForce(t *testing.T) {
	if awstest.External() {
		t.Skip("the key policy is enforced by the in-process KMS the harness runs")
	}
	d := awsapptest.Deploy(t)
	pads := awstest.Role(t, "PadsFunction", d.Res)
	client := func(cfg aws.Config) *kms.Client { return kms.NewFromConfig(cfg, kmstest.Options(t)) }
	digest := sha256.Sum256([]byte("entry"))
	sign := func(c *kms.Client, msg []byte, typ kmstypes.MessageType) error {
		_, err := c.Sign(t.Context(), &kms.SignInput{KeyId: aws.String(d.Key), Message: msg, MessageType: typ, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
		return err
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}
	for _, role := range []string{"CrawlRole", "ApprovalsRole", "CheckpointRole"} {
		if err := sign(client(d.Config(t, role)), digest[:], kmstypes.MessageTypeDigest); err != nil {
			t.Errorf("%s cannot sign: %v", role, err)
		}
	}
	if err := sign(client(pads.Config(t)), digest[:], kmstypes.MessageTypeDigest); code(err) != "AccessDeniedException" {
		t.Errorf("the pads role signed with the audit key: %v", err)
	}
	if err := sign(client(awstest.Config(t)), digest[:], kmstypes.MessageTypeDigest); code(err) != "AccessDeniedException" {
		t.Errorf("the account administrator signed with the audit key: %v", err)
	}
	if _, err := client(pads.Config(t)).GetPublicKey(t.Context(), &kms.GetPublicKeyInput{KeyId: aws.String(d.Key)}); err != nil {
		t.Errorf("a principal of the account cannot read the public key: %v", err)
	}
	crawl := client(d.Config(t, "CrawlRole"))
	if err := sign(crawl, bytes.Repeat([]byte{1}, awstest.MaxKMSMessageBytes+1), kmstypes.MessageTypeRaw); code(err) != "ValidationException" {
		t.Errorf("a RAW message of 4097 bytes: %v", err)
	}
	if err := sign(crawl, digest[:31], kmstypes.MessageTypeDigest); code(err) != "ValidationException" {
		t.Errorf("a 31-byte digest: %v", err)
	}
}
