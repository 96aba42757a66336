// Package template_test validates the SAM template offline with cfn-lint, which applies the
// SAM transform, so a broken template.yaml fails `make test` rather than a deployment.
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
