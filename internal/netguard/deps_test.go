package netguard

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDependencies keeps netguard on the standard library alone, so the policy code is
// small enough to audit — with one exception: golang.org/x/net/idna (and the x/text
// packages it needs), the Go project's own UTS 46 implementation, which net/http itself
// vendors to put international host names on the wire. Checking a host as resolvers will
// see it needs exactly that mapping; a second copy of it here would be worse.
func TestDependencies(t *testing.T) {
	goBin := testenv.LookPath(t, "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/agentgate-dev/agentgate/internal/netguard" && dep != "golang.org/x/net/idna" && !strings.HasPrefix(dep, "golang.org/x/text/") {
			t.Errorf("netguard depends on %s", dep)
		}
	}
}
