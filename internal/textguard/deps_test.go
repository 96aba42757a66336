package textguard

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDependencies keeps the package pure: the standard library and the
// golang.org/x/text normalization tables, nothing that does I/O on our behalf.
func TestDependencies(t *testing.T) {
	goBin := testenv.LookPath(t, "go")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/agentgate-dev/agentgate/internal/textguard":
		case strings.HasPrefix(dep, "golang.org/x/text/"):
		default:
			t.Errorf("textguard depends on %s", dep)
		}
	}
	std, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(std)) {
		if dep == "net" || dep == "os/exec" || dep == "net/http" {
			t.Errorf("textguard imports %s; it must do no I/O", dep)
		}
	}
}
