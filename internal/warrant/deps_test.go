package warrant

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDependencies keeps the domain pure: the standard library, canon (and its tokenizer,
// jsontok) and textguard (and textguard's golang.org/x/text tables); no database, network
// or AWS package.
func TestDependencies(t *testing.T) {
	goBin := testenv.LookPath(t, "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/agentgate-dev/agentgate/internal/warrant",
			dep == "github.com/agentgate-dev/agentgate/internal/canon",
			dep == "github.com/agentgate-dev/agentgate/internal/jsontok",
			dep == "github.com/agentgate-dev/agentgate/internal/textguard",
			strings.HasPrefix(dep, "golang.org/x/text/"):
		default:
			t.Errorf("warrant depends on %s", dep)
		}
	}
	std, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(std)) {
		if dep == "database/sql" || dep == "net/http" || dep == "net" || dep == "os/exec" {
			t.Errorf("warrant imports %s; the domain does no I/O", dep)
		}
	}
}
