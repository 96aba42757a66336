package awsapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/config"
)

// SecretsAPI is the part of the Secrets Manager and SSM clients the crawl uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// ParametersAPI is the part of the SSM client the crawl uses.
type ParametersAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Secrets reads crawl header values named by ARN: a Secrets Manager secret's SecretString
// (GetSecretValue) or an SSM parameter's decrypted value (GetParameter WithDecryption).
// The crawl role may read exactly the ARNs of template.yaml's CrawlHeaderSecretArns.
type Secrets struct {
	SecretsManager SecretsAPI
	SSM            ParametersAPI
}

// NewSecrets builds the clients on awsCfg (no call is made).
func NewSecrets(awsCfg aws.Config) Secrets {
	return Secrets{SecretsManager: secretsmanager.NewFromConfig(awsCfg), SSM: ssm.NewFromConfig(awsCfg)}
}

// Reader returns a config.SecretReader that reads each ARN at most once: one per crawl
// invocation, so a rotated secret is used by the next crawl and a secret shared by several
// servers costs one call.
func (s Secrets) Reader() config.SecretReader {
	type result struct {
		v   string
		err error
	}
	var mu sync.Mutex
	memo := map[string]result{}
	return func(ctx context.Context, arn string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := memo[arn]; ok {
			return r.v, r.err
		}
		v, err := s.read(ctx, arn)
		memo[arn] = result{v, err}
		return v, err
	}
}

func (s Secrets) read(ctx context.Context, arn string) (string, error) {
	switch {
	case strings.Contains(arn, ":secretsmanager:"):
		if s.SecretsManager == nil {
			return "", fmt.Errorf("secret %s: no Secrets Manager client", arn)
		}
		out, err := s.SecretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return "", secretError("secret", arn, err)
		}
		if out.SecretString == nil {
			return "", fmt.Errorf("secret %s holds binary data; a header value must be a SecretString", arn)
		}
		return *out.SecretString, nil
	case strings.Contains(arn, ":ssm:"):
		if s.SSM == nil {
			return "", fmt.Errorf("parameter %s: no SSM client", arn)
		}
		out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(arn), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", secretError("parameter", arn, err)
		}
		return aws.ToString(out.Parameter.Value), nil
	}
	return "", fmt.Errorf("%s is neither a Secrets Manager secret nor an SSM parameter ARN", arn)
}

// secretError says what went wrong reading a secret and what to do, never its value.
func secretError(kind, arn string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDeniedException", "AccessDenied":
			return fmt.Errorf("the crawl role may not read %s %s: add its ARN to the CrawlHeaderSecretArns parameter and redeploy", kind, arn)
		case "ResourceNotFoundException", "ParameterNotFound":
			return fmt.Errorf("%s %s does not exist (check the ARN in ToolwarrantServers)", kind, arn)
		case "DecryptionFailure", "InvalidKeyId", "KMSAccessDeniedException":
			return fmt.Errorf("%s %s cannot be decrypted by the crawl role (a customer managed KMS key needs kms:Decrypt for the role): %s", kind, arn, ae.ErrorCode())
		}
		return fmt.Errorf("read %s %s: %s", kind, arn, ae.ErrorCode())
	}
	return fmt.Errorf("read %s %s: %w", kind, arn, err)
}
