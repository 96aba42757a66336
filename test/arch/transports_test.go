package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// transports are the enforcement points: each translates its wire form to an
// enforce.Message and the enforce.Decision back, and decides nothing itself.
var transports = []string{"internal/extmcp", "internal/mcpproxy", "internal/agentcore"}

// parsePkg parses the non-test Go files of the package in dir.
func parsePkg(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// TestOneDecisionFunction: the decision core has exactly one exported way to decide
// (Processor.Decide; Observe takes a listing in without deciding); every transport calls
// it, and none computes or compares digests itself (no internal/canon, no crypto/sha256):
// a change of rule is made in internal/enforce, once, for every point.
func TestOneDecisionFunction(t *testing.T) {
	root := testenv.RepoRoot(t)
	_, core := parsePkg(t, filepath.Join(root, "internal", "enforce"))
	var deciders []string
	for _, f := range core {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			for _, r := range fn.Type.Results.List {
				if id, ok := r.Type.(*ast.Ident); ok && id.Name == "Decision" {
					deciders = append(deciders, fn.Name.Name)
				}
			}
		}
	}
	if !slices.Equal(deciders, []string{"Decide"}) {
		t.Errorf("internal/enforce's exported functions returning a Decision are %v; want only Decide, which every transport calls", deciders)
	}
	found := 0
	for _, pkg := range transports {
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		if _, err := os.Stat(dir); err != nil {
			t.Logf("%s does not exist in this tree", pkg)
			continue
		}
		found++
		fset, files := parsePkg(t, dir)
		calls := 0
		for _, f := range files {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == "crypto/sha256" || strings.HasSuffix(p, "/internal/canon") {
					t.Errorf("%s imports %s: a transport translates and asks internal/enforce; digests and the rule that compares them live there", fset.File(f.Pos()).Name(), p)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Decide" {
					calls++
				}
				return true
			})
		}
		if calls == 0 {
			t.Errorf("%s never calls Processor.Decide: every enforcement point decides through the one core", pkg)
		}
	}
	if found < 2 {
		t.Errorf("only %d of the transports %v exist", found, transports)
	}
}

// TestCoreLinksNoTransport: the decision core links no gRPC, no AWS SDK and no SQLite, so
// each enforcement point pays only for its own wire (the interceptor Lambda starts cold
// without gRPC; the proxy without the AWS SDK).
func TestCoreLinksNoTransport(t *testing.T) {
	for _, d := range deps(t, "./internal/enforce") {
		for _, banned := range []string{"google.golang.org/grpc", "github.com/aws/", "modernc.org/sqlite", "github.com/agentgate-dev/agentgate/internal/extmcp"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("internal/enforce links %s: the core is shared by every enforcement point; its wire belongs in the transport", d)
			}
		}
	}
	for _, d := range deps(t, "./internal/mcpproxy") {
		for _, banned := range []string{"google.golang.org/grpc", "github.com/aws/"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("internal/mcpproxy links %s", d)
			}
		}
	}
}
