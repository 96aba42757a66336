package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// How the harness makes moto as strict as an AWS account:
//
//   - At start it creates one IAM user, the harness's administrator (policy Allow * on *),
//     then switches moto's authorization on (POST /moto-api/reset-auth 0). From then on
//     every request must be signed by a known identity and moto checks its actions.
//   - Config and Env hand out the administrator's keys: creating tables, keys and buckets
//     is the deployer's job, as CloudFormation's is.
//   - Role creates a role holding exactly the statements of a role in template.yaml,
//     assumes it, and returns the session: what a Lambda function runs as.
//   - moto checks DynamoDB (and Secrets Manager, SSM, SQS) actions against Resource "*" only
//     and no Condition, and TransactWriteItems as an action of its own, which IAM does
//     not have. So the harness's proxy authorizes those calls itself, as IAM does — each
//     transaction item as PutItem/UpdateItem/DeleteItem/ConditionCheckItem on its table
//     ARN with dynamodb:LeadingKeys, an SQS call on its queue's ARN — and re-signs what it
//     allows as the administrator. S3 calls are checked by moto (it does model object and bucket ARNs). KMS runs
//     in-process (internal/kmssigner/kmstest), which asks KMSAuthorize: key policy and
//     identity policy together.

// identity is a caller the harness knows by access key ID.
type identity struct {
	arn        string
	statements []Statement
	admin      bool
	creds      aws.Credentials
}

var (
	idMu       sync.Mutex
	identities = map[string]*identity{} // access key ID → identity
	adminCreds aws.Credentials
)

func lookup(akid string) *identity {
	idMu.Lock()
	defer idMu.Unlock()
	return identities[akid]
}

// enableIAM creates the administrator in a fresh moto and turns authorization on.
func enableIAM(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(CurrentRegion()),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("bootstrap", "bootstrap", "")))
	if err != nil {
		return err
	}
	cfg.BaseEndpoint = aws.String(endpoint)
	c := iam.NewFromConfig(cfg)
	const user = "agentgate-test-admin"
	if _, err := c.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String(user)}); err != nil {
		return fmt.Errorf("create the admin user: %w", err)
	}
	admin := []Statement{{Effect: "Allow", Action: []string{"*"}, Resource: []string{"*"}}}
	if _, err := c.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String(user), PolicyName: aws.String("admin"),
		PolicyDocument: aws.String(policyJSON(admin))}); err != nil {
		return fmt.Errorf("admin policy: %w", err)
	}
	key, err := c.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(user)})
	if err != nil {
		return fmt.Errorf("admin access key: %w", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/moto-api/reset-auth", strings.NewReader("0"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("turn moto's authorization on: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("turn moto's authorization on: %s", resp.Status)
	}
	idMu.Lock()
	defer idMu.Unlock()
	adminCreds = aws.Credentials{AccessKeyID: aws.ToString(key.AccessKey.AccessKeyId), SecretAccessKey: aws.ToString(key.AccessKey.SecretAccessKey), Source: "awstest"}
	identities[adminCreds.AccessKeyID] = &identity{arn: fmt.Sprintf("arn:aws:iam::%s:user/%s", Account, user), statements: admin, admin: true, creds: adminCreds}
	return nil
}

// Principal is an assumed-role session the harness created: what a function runs as.
type Principal struct {
	// RoleARN is the role's ARN (what template.yaml's !GetAtt Role.Arn stands for); ARN
	// is the session's (arn:aws:sts::…:assumed-role/NAME/SESSION), what the function's
	// calls are made as.
	RoleARN, ARN string
	// Statements are the role's identity-policy statements, resolved.
	Statements []Statement
	creds      aws.Credentials
	external   bool
}

// Credentials returns the session's credentials.
func (p *Principal) Credentials() aws.Credentials { return p.creds }

// Config returns an aws.Config for Endpoint signed as the principal.
func (p *Principal) Config(t testing.TB) aws.Config {
	t.Helper()
	cfg := Config(t)
	if !p.external {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(p.creds.AccessKeyID, p.creds.SecretAccessKey, p.creds.SessionToken)
	}
	return cfg
}

// Env is Env(t) with the principal's credentials: for a function's process under RIE.
func (p *Principal) Env(t testing.TB) []string {
	t.Helper()
	env := Env(t)
	if p.external {
		return env
	}
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") && !strings.HasPrefix(kv, "AWS_SESSION_TOKEN=") {
			out = append(out, kv)
		}
	}
	return append(out, "AWS_ACCESS_KEY_ID="+p.creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+p.creds.SecretAccessKey, "AWS_SESSION_TOKEN="+p.creds.SessionToken)
}

// Role creates a role holding exactly the identity-policy statements of template.yaml's
// logicalID (an AWS::IAM::Role, or a SAM function with inline Policies), resolved against
// res, assumes it and returns the session. It records the role's ARN in res[logicalID],
// so key policies naming !GetAtt logicalID.Arn resolve to it.
//
// On an external endpoint (AWS_ENDPOINT_URL: LocalStack, a real account) the harness
// creates no IAM: the principal is the caller's own credentials, and that endpoint's own
// enforcement (if any) applies.
func Role(t testing.TB, logicalID string, res Resources) *Principal {
	t.Helper()
	st, err := LoadTemplate(t).RoleStatements(logicalID, res)
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	return RoleWith(t, logicalID, st, res)
}

// RoleWith is Role for statements from elsewhere (infra/ecs's task role policy).
func RoleWith(t testing.TB, logicalID string, st []Statement, res Resources) *Principal {
	t.Helper()
	if External() {
		return &Principal{RoleARN: "external", ARN: "external", Statements: st, external: true}
	}
	cfg := Config(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := "t-" + hex.EncodeToString(b[:]) + "-" + logicalID
	if len(name) > 64 {
		name = name[:64]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := iam.NewFromConfig(cfg)
	idMu.Lock()
	adminARN := identities[adminCreds.AccessKeyID].arn
	idMu.Unlock()
	trust := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":%q},"Action":"sts:AssumeRole"}]}`, adminARN)
	out, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trust)})
	if err != nil {
		t.Fatalf("awstest: create role %s: %v", name, err)
	}
	if len(st) > 0 {
		if _, err := c.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String(name), PolicyName: aws.String("template"),
			PolicyDocument: aws.String(policyJSON(st))}); err != nil {
			t.Fatalf("awstest: role policy of %s: %v", name, err)
		}
	}
	roleARN := aws.ToString(out.Role.Arn)
	sess, err := sts.NewFromConfig(cfg).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(roleARN), RoleSessionName: aws.String(logicalID)})
	if err != nil {
		t.Fatalf("awstest: assume %s: %v", roleARN, err)
	}
	p := &Principal{RoleARN: roleARN, ARN: aws.ToString(sess.AssumedRoleUser.Arn), Statements: st,
		creds: aws.Credentials{AccessKeyID: aws.ToString(sess.Credentials.AccessKeyId), SecretAccessKey: aws.ToString(sess.Credentials.SecretAccessKey),
			SessionToken: aws.ToString(sess.Credentials.SessionToken), Source: "awstest"}}
	idMu.Lock()
	identities[p.creds.AccessKeyID] = &identity{arn: p.ARN, statements: st, creds: p.creds}
	idMu.Unlock()
	if res != nil {
		res[logicalID] = roleARN
	}
	return p
}

// admin returns the administrator's credentials.
func admin() aws.Credentials {
	idMu.Lock()
	defer idMu.Unlock()
	return adminCreds
}
