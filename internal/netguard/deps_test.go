package netguard

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDependencies keeps netguard on the standard library alone, so the policy code is
// small enough to audit.
func TestDependencies(t *testing.T) {
	goBin := testenv.LookPath(t, "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/agentgate-dev/agentgate/internal/netguard" {
			t.Errorf("netguard depends on %s", dep)
		}
	}
}
