package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies enforces the architecture rule that Lambda mains link neither SQLite nor
// gRPC nor the local signer: the pads binary is DynamoDB-only and stays small.
func TestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-tags", "lambda.norpc", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	banned := []string{"modernc.org/sqlite", "database/sql", "google.golang.org/grpc",
		"github.com/agentgate-dev/agentgate/internal/sqlitestore", "github.com/agentgate-dev/agentgate/internal/keysigner"}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, b+"/") {
				t.Errorf("functions/pads links %s", dep)
			}
		}
	}
}
