// Package kmstest gives integration tests a KMS endpoint and throwaway keys shaped like
// template.yaml's audit log key (ECC_NIST_P256, SIGN_VERIFY).
//
// The endpoint is AWS_ENDPOINT_URL when set (LocalStack, a real account), like the rest of
// the harness (internal/awstest). Otherwise it is local-kms (github.com/nsmithuk/local-kms)
// served in-process on a loopback httptest server, once per test binary: moto_server 5.2.1
// does not implement Sign's MessageType DIGEST (moto/kms/models.py says so; it hashes the
// digest again and signs SHA-256(digest)), so a correct DIGEST signer cannot verify its
// own signatures there. TestMotoDigestGap in package kmssigner pins that behaviour, so the
// day moto implements DIGEST the suite says so.
//
// A package using Config must call Main from its TestMain (it wraps awstest.Main).
package kmstest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	lkconfig "github.com/nsmithuk/local-kms/src/config"
	lkdata "github.com/nsmithuk/local-kms/src/data"
	lkhandler "github.com/nsmithuk/local-kms/src/handler"
	"github.com/sirupsen/logrus"

	"github.com/agentgate-dev/agentgate/internal/awstest"
)

// db is local-kms's database, while the in-process KMS runs.
var db *lkdata.Database

// local is the in-process local-kms this binary starts on first use.
var local = &awstest.Local{Pkg: "kmstest", What: "the KMS", Start: startKMS,
	Failed: func(t testing.TB, err error) {
		t.Helper()
		t.Fatalf("kmstest: %v", err)
	},
}

// Main runs the tests through awstest.Main and then stops the in-process KMS.
func Main(m *testing.M) int { return local.Run(m, awstest.Main) }

// Endpoint returns the KMS endpoint URL: AWS_ENDPOINT_URL when set, else the in-process
// local-kms (started on first use).
func Endpoint(t testing.TB) string {
	t.Helper()
	return local.Endpoint(t)
}

func startKMS() (string, func(), error) {
	dir, err := os.MkdirTemp("", "agentgate-local-kms-")
	if err != nil {
		return "", nil, err
	}
	lkconfig.AWSRegion, lkconfig.AWSAccountId, lkconfig.DatabasePath = awstest.CurrentRegion(), awstest.Account, dir
	db = lkdata.NewDatabase(dir)
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel) // local-kms logs every request at info
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, log) }))
	return srv.URL, func() {
		srv.Close()
		db.Close()
		os.RemoveAll(dir)
	}, nil
}

// serve dispatches one KMS JSON request to local-kms's handler, as its own server does,
// once awstest.KMSAuthorize has allowed it: the caller's identity and the key's policy,
// as KMS checks them (local-kms checks neither), and KMS's input limits.
func serve(w http.ResponseWriter, r *http.Request, log *logrus.Logger) {
	target := strings.Split(r.Header.Get("X-Amz-Target"), ".")
	if r.Method != http.MethodPost || len(target) < 2 {
		http.Error(w, "not a KMS request", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read the request", http.StatusBadRequest)
		return
	}
	if e := awstest.KMSAuthorize(r, body); e != nil {
		e.Write(w)
		return
	}
	if serveEd25519(w, target[1], body) {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h := lkhandler.NewRequestHandler(r, log, db)
	m := reflect.ValueOf(h).MethodByName(target[1])
	if !m.IsValid() {
		http.Error(w, "operation not implemented by local-kms", http.StatusNotImplemented)
		return
	}
	resp, _ := m.Call(nil)[0].Interface().(lkhandler.Response)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(resp.Code)
	_, _ = w.Write([]byte(resp.Body))
}

// adminKey is the access key of Config's KMS-only administrator.
const adminKey = "AKIAKMSTESTADMIN0000"

// Config returns an aws.Config whose KMS calls reach Endpoint, signed as an administrator (other services are not
// configured: use awstest.Config for DynamoDB and S3, and Options for the KMS client).
func Config(t testing.TB) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		return awstest.Config(t)
	}
	awstest.RegisterIdentity(adminKey, "arn:aws:iam::"+awstest.Account+":user/kmstest-admin")
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(awstest.CurrentRegion()),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(adminKey, "kmstest", "")))
	if err != nil {
		t.Fatalf("kmstest: load AWS config: %v", err)
	}
	cfg.BaseEndpoint = aws.String(ep)
	return cfg
}

// Options points a KMS client built on another service's aws.Config (awstest.Config) at
// Endpoint: kms.NewFromConfig(cfg, kmstest.Options(t)).
func Options(t testing.TB) func(*kms.Options) {
	t.Helper()
	ep := Endpoint(t)
	return func(o *kms.Options) { o.BaseEndpoint = aws.String(ep) }
}

// Env returns the environment that points a child process's KMS client at Endpoint
// (AWS_ENDPOINT_URL_KMS overrides AWS_ENDPOINT_URL for KMS only).
func Env(t testing.TB) []string {
	t.Helper()
	return []string{"AWS_ENDPOINT_URL_KMS=" + Endpoint(t)}
}

// CreateCheckpointKey creates an ECC_NIST_EDWARDS25519 SIGN_VERIFY key, shaped like
// template.yaml's checkpoint key, and schedules its deletion when the test ends.
func CreateCheckpointKey(t testing.TB, client *kms.Client) string {
	t.Helper()
	return CreateOtherKey(t, client, kmstypes.KeySpecEccNistEdwards25519, kmstypes.KeyUsageTypeSignVerify)
}

// CreateKey creates an ECC_NIST_P256 SIGN_VERIFY key through client and schedules its
// deletion when the test ends. It returns the key's ARN.
func CreateKey(t testing.TB, client *kms.Client) string {
	t.Helper()
	return CreateOtherKey(t, client, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
}

// CreateOtherKey creates a key of any spec and usage (for refusal tests).
func CreateOtherKey(t testing.TB, client *kms.Client, spec kmstypes.KeySpec, usage kmstypes.KeyUsageType) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: spec, KeyUsage: usage, Description: aws.String("agentgate test audit key")})
	if err != nil {
		t.Fatalf("kmstest: create %s key: %v", spec, err)
	}
	arn := aws.ToString(out.KeyMetadata.Arn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Best effort: throwaway emulator keys need no deletion, a real account's do.
		_, _ = client.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: aws.String(arn), PendingWindowInDays: aws.Int32(7)})
	})
	return arn
}
