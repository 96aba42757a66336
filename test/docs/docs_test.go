// Package docs_test keeps the documentation honest: every relative link in a Markdown file
// must point at a file that exists, and every test, benchmark or fuzz target cited in
// backquotes (`TestXxx`) must exist in some _test.go file. Docs that cite evidence which was
// renamed or deleted fail here instead of misleading a reader.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var (
	linkRE  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	citedRE = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)(?:`|/|\\(| )") // a name, not TestToken.sol
	funcRE  = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]+)\(`)
)

func skipDir(name string) bool {
	return name == ".git" || name == "node_modules" || name == "testdata" || name == ".aws-sam"
}

func walk(t *testing.T, root string, fn func(path string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDocsLinksAndCitedTests(t *testing.T) {
	root := testenv.RepoRoot(t)
	tests := map[string]bool{}
	walk(t, root, func(path string, data []byte) {
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range funcRE.FindAllSubmatch(data, -1) {
				tests[string(m[1])] = true
			}
		}
	})
	if len(tests) < 50 {
		t.Fatalf("found only %d test functions; the walk is broken", len(tests))
	}
	docs := 0
	walk(t, root, func(path string, data []byte) {
		if !strings.HasSuffix(path, ".md") {
			return
		}
		docs++
		rel, _ := filepath.Rel(root, path)
		for _, m := range linkRE.FindAllSubmatch(data, -1) {
			target := string(m[1])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), filepath.FromSlash(target))); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
		for _, m := range citedRE.FindAllSubmatch(data, -1) {
			if name := string(m[1]); !tests[name] {
				t.Errorf("%s cites %s, which no _test.go file defines", rel, name)
			}
		}
	})
	if docs < 5 {
		t.Fatalf("found only %d Markdown files", docs)
	}
}
