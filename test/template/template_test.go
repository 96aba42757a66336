// Package template_test checks template.yaml offline, so that a broken or unsafe template
// fails `make test` rather than a deployment: cfn-lint (which applies the SAM transform), and
// assertions on the CloudFormation samtranslator makes of it (translate.py; translate_test.go:
// alarms, dead-letter queues and retries, throttling and access logs, the PadCreation
// authorizer, retention, name lengths), evaluated for the parameter values each test names
// (cfn_test.go), and on the committed samconfig.toml.
package template_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func TestTemplateLints(t *testing.T) {
	lint := testenv.LookPath(t, "cfn-lint")
	path := filepath.Join(testenv.RepoRoot(t), "template.yaml")
	if _, err := os.ReadFile(path); err != nil { // also makes go test's cache notice edits
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), lint, path).CombinedOutput()
	if err != nil {
		t.Fatalf("cfn-lint template.yaml: %v\n%s", err, out)
	}
}
