// Package arch_test enforces the dependency rules with `go list -deps`, as tailscale does:
// one table of what each domain package may link (domain_test.go), and the rules between
// binaries and adapters (this file): the embedded binaries and their wiring do not link the
// AWS SDK, the Lambda functions do not link SQLite, gRPC or the local key signer, the pads
// function links none of toolwarrant's AWS wiring, the AgentCore interceptor none of the other
// enforcement points, the crawl or the approvals API, and the approvals transport does not
// link the Lambda runtime or its API Gateway proxy.
package arch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg)
	cmd.Dir = testenv.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestDependencyRules(t *testing.T) {
	root := testenv.RepoRoot(t)
	fns, _ := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	rules := []struct {
		pkgs   []string
		banned []string
		why    string
	}{
		{pkgs: []string{"./cmd/lockerd", "./cmd/agentgate", "./cmd/lockermcp"}, banned: []string{"github.com/aws/"},
			why: "embedded binaries run without an AWS account; AWS wiring lives in internal/app/awsapp"},
		{pkgs: []string{"./internal/app/localapp"}, banned: []string{"github.com/aws/"},
			why: "the embedded wiring runs without an AWS account; AWS wiring lives in internal/app/awsapp"},
		{pkgs: []string{"./internal/app"}, banned: []string{"github.com/aws/", "modernc.org/sqlite"},
			why: "the shared wiring serves lockerd and the pads Lambda alike; adapters are built in localapp and awsapp"},
		{pkgs: []string{"./internal/approvalsapi"}, banned: []string{"github.com/awslabs/aws-lambda-go-api-proxy", "github.com/aws/aws-lambda-go", "modernc.org/sqlite"},
			why: "the approvals transport gets its caller from a function of the request; awsapp reads API Gateway's context"},
		{pkgs: []string{"./functions/pads"}, banned: []string{"github.com/agentgate-dev/agentgate/internal/app/awsapp",
			"github.com/aws/aws-sdk-go-v2/service/kms", "github.com/aws/aws-sdk-go-v2/service/s3", "github.com/aws/aws-sdk-go-v2/service/ssm",
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "github.com/modelcontextprotocol/", "golang.org/x/crypto/ssh",
			"github.com/agentgate-dev/agentgate/internal/approvalsapi", "github.com/agentgate-dev/agentgate/internal/crawler",
			"github.com/agentgate-dev/agentgate/internal/audit"},
			why: "every package a Lambda links is initialised at its cold start: the pads function links the pad store's wiring (internal/app/awsbase), none of toolwarrant's (docs/aws.md, Cold start)"},
		{pkgs: []string{"./functions/interceptor"}, banned: []string{"github.com/agentgate-dev/agentgate/internal/app/awsapp",
			"github.com/agentgate-dev/agentgate/internal/extmcp", "github.com/agentgate-dev/agentgate/internal/mcpproxy",
			"github.com/agentgate-dev/agentgate/internal/crawler", "github.com/agentgate-dev/agentgate/internal/mcpclient",
			"github.com/agentgate-dev/agentgate/internal/netguard", "github.com/agentgate-dev/agentgate/internal/approvalsapi",
			"github.com/agentgate-dev/agentgate/internal/httpapi", "github.com/agentgate-dev/agentgate/internal/review",
			"github.com/agentgate-dev/agentgate/internal/checkpoint", "github.com/awslabs/aws-lambda-go-api-proxy",
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/modelcontextprotocol/",
			"golang.org/x/crypto/ssh", "net/http/httptest", "google.golang.org/grpc"},
			why: "the interceptor is a thin transport on every MCP message, so its cold start is on a client's path: it links the catalog, the log signer and the decision core (internal/app/awsinterceptor), none of the other points, the crawl, the approvals API or their HTTP servers"},
		{pkgs: []string{"./internal/agentcore"}, banned: []string{"github.com/aws/aws-sdk-go-v2", "github.com/agentgate-dev/agentgate/internal/app",
			"github.com/agentgate-dev/agentgate/internal/dynamostore"},
			why: "the interceptor transport translates AgentCore events to enforce.Messages; the catalog and the SDK are wired in internal/app/awsinterceptor"},
		{pkgs: []string{"./internal/witness"}, banned: []string{"github.com/aws/", "modernc.org/sqlite", "database/sql", "google.golang.org/grpc",
			"github.com/agentgate-dev/agentgate/internal/app", "github.com/agentgate-dev/agentgate/internal/sqlitestore",
			"github.com/agentgate-dev/agentgate/internal/keysigner", "github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"},
			why: "the witness is a small service of its own: its state is one file, its key comes through checkpoint.MessageSigner (the key file is wired in cmd/toolwarrant); it links no catalog, store or SDK"},
		{pkgs: []string{"./internal/approvalproof"}, banned: []string{"github.com/aws/", "modernc.org/sqlite", "database/sql", "google.golang.org/grpc", "github.com/modelcontextprotocol/",
			"github.com/agentgate-dev/agentgate/internal/app/", "github.com/agentgate-dev/agentgate/internal/sqlitestore", "github.com/agentgate-dev/agentgate/internal/dynamostore",
			"github.com/agentgate-dev/agentgate/internal/keysigner", "github.com/agentgate-dev/agentgate/internal/mcpclient"},
			why: "agentgate ci --approvals reads a published log and a committed bundle: checkpoint, tiles and audit's tree over HTTP or files, no catalog, store, SDK or MCP client"},
		{pkgs: []string{"./internal/review"}, banned: []string{"github.com/aws/", "modernc.org/sqlite", "github.com/agentgate-dev/agentgate/internal/sqlitestore", "github.com/agentgate-dev/agentgate/internal/sshsig"},
			why: "the review page is a transport over a Source: the catalog, the SSH signer and the approvals API client are wired in cmd/toolwarrant"},
	}
	var lambdas []string
	for _, f := range fns {
		lambdas = append(lambdas, "./"+filepath.ToSlash(mustRel(t, root, filepath.Dir(f))))
	}
	if len(lambdas) > 0 {
		rules = append(rules, struct {
			pkgs   []string
			banned []string
			why    string
		}{pkgs: lambdas, banned: []string{"modernc.org/sqlite", "database/sql", "google.golang.org/grpc",
			"github.com/agentgate-dev/agentgate/internal/sqlitestore", "github.com/agentgate-dev/agentgate/internal/keysigner"},
			why: "Lambda functions use DynamoDB and KMS, never the embedded store, gRPC or a local key, and stay small"})
	}
	for _, r := range rules {
		for _, pkg := range r.pkgs {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(pkg))); err != nil {
				t.Logf("%s does not exist in this tree; rule not applied", pkg)
				continue
			}
			for _, d := range deps(t, pkg) {
				for _, b := range r.banned {
					if strings.HasPrefix(d, b) {
						t.Errorf("%s links %s: %s", pkg, d, r.why)
					}
				}
			}
		}
	}
}

func mustRel(t *testing.T, base, path string) string {
	t.Helper()
	rel, err := filepath.Rel(base, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
