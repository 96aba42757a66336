package payment

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDependencies keeps the payment rules on the standard library alone: no I/O client, no
// store, no transport can creep into the code that decides whether a pad was paid for.
func TestDependencies(t *testing.T) {
	goBin := testenv.LookPath(t, "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/agentgate-dev/agentgate/internal/payment" {
			t.Errorf("payment depends on %s", dep)
		}
	}
	out, err = exec.CommandContext(t.Context(), goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || dep == "net" || dep == "database/sql" {
			t.Errorf("payment imports %s: the rules must stay free of I/O", dep)
		}
	}
}
