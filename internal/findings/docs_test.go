package findings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// TestDocs: docs/findings.md has a row for every rule with its severity, names every
// corpus example and the corpus size, and states the measured false positives that
// TestRealServersFalsePositives pins, with a row for every captured server.
func TestDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "findings.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, ri := range Rules {
		if row := "| `" + string(ri.Rule) + "` | " + ri.Severity.String() + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/findings.md has no row %q", row)
		}
	}
	corpus := loadCorpus(t)
	for name := range corpus {
		if !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("docs/findings.md does not list corpus example %s", name)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("holds %d examples", len(corpus)),
		fmt.Sprintf("**Result: %d definitions, %d findings at any severity", realDefinitions, len(realFalsePositives)),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/findings.md does not say %q", want)
		}
	}
	for _, s := range realServers {
		row := fmt.Sprintf("| `%s` | %s | %d | %d | %s |", s.pkg, s.version, s.tools, s.prompts, map[int]string{0: "no", 1: "yes"}[s.instructions])
		if !strings.Contains(doc, row) {
			t.Errorf("docs/findings.md has no row %q", row)
		}
	}
}
