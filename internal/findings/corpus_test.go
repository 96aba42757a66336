package findings

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus.golden")

// corpusExample is one file of testdata/corpus: a published tool-poisoning attack, written
// in our own words after the write-up named in Source, and the findings it must produce.
type corpusExample struct {
	Source       string          `json:"source"`
	URL          string          `json:"url"`
	Attack       string          `json:"attack"`
	Kind         warrant.Kind    `json:"kind"`
	Siblings     []string        `json:"siblings"`
	Definition   json.RawMessage `json:"definition"`
	Instructions string          `json:"instructions"`
	Want         []want          `json:"want"`
}

type want struct {
	Rule     warrant.Rule     `json:"rule"`
	Severity warrant.Severity `json:"severity"`
	Pointer  string           `json:"pointer"`
}

func scanExample(t *testing.T, ex corpusExample) []Finding {
	t.Helper()
	if ex.Kind == KindInstructions {
		return Scan(Target{Kind: KindInstructions, Description: ex.Instructions})
	}
	fs, err := ScanObject(ex.Kind, ex.Definition, ex.Siblings)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func loadCorpus(t *testing.T) map[string]corpusExample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	out := map[string]corpusExample{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ex corpusExample
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if ex.Source == "" || ex.Attack == "" || len(ex.Want) == 0 {
			t.Fatalf("%s: source, attack and want are required", f)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = ex
	}
	return out
}

// TestCorpus: every published attack of the corpus is flagged, with exactly the rules,
// severities and pointers its file expects, at least one of them CRITICAL; and the full
// findings (excerpts and reasons) match testdata/corpus.golden, which a reviewer reads to
// judge the wording (go test -run TestCorpus -update rewrites it).
func TestCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	var golden strings.Builder
	golden.WriteString("# The findings on each example of testdata/corpus, as Scan reports them.\n")
	golden.WriteString("# Regenerate with: go test ./internal/findings -run TestCorpus -update\n")
	for _, name := range sortedNames(corpus) {
		ex := corpus[name]
		fs := scanExample(t, ex)
		t.Run(name, func(t *testing.T) {
			var got []want
			for _, f := range fs {
				got = append(got, want{f.Rule, f.Severity, f.Pointer})
			}
			wantSorted := slices.Clone(ex.Want)
			slices.SortStableFunc(wantSorted, func(a, b want) int {
				return compareFindings(Finding{Rule: a.Rule, Severity: a.Severity, Pointer: a.Pointer}, Finding{Rule: b.Rule, Severity: b.Severity, Pointer: b.Pointer})
			})
			if diff := cmp.Diff(wantSorted, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s\nall: %s", diff, dump(fs))
			}
			if Grade(fs) != warrant.Critical {
				t.Errorf("grade %s, want CRITICAL: every corpus example is an attack", Grade(fs))
			}
		})
		fmt.Fprintf(&golden, "\n== %s (%s)\n", name, ex.Kind)
		for _, f := range fs {
			fmt.Fprintf(&golden, "%s %s %s\n  excerpt: %s\n  reason: %s\n", f.Severity, f.Rule, f.Pointer, f.Excerpt, f.Reason)
		}
	}
	path := filepath.Join("testdata", "corpus.golden")
	if *update {
		if err := os.WriteFile(path, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(b), golden.String()); diff != "" {
		t.Errorf("corpus.golden (-file +now), rerun with -update if intended:\n%s", diff)
	}
}

func dump(fs []Finding) string {
	b, _ := json.MarshalIndent(fs, "", "  ")
	return string(b)
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
