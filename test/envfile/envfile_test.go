// Package envfile_test keeps .env.example true: every environment variable the configuration
// code reads must be listed there, and every variable listed must be read by something. The
// readers are internal/config (the only place that parses the environment), the mains under
// cmd/ and functions/, and internal/app; a variable is "read" when its name is a string
// literal argument of a call there (getenv("LOCKER_PORT"), intVar(getenv, "LOCKER_PORT", …),
// pick("lockfile", "AGENTGATE_LOCKFILE")) or an element of a composite literal (a table of
// flags and their variables read in a loop). Variables the AWS SDK reads on its own are listed
// under the "[aws-sdk]" marker and exempt from the second rule.
package envfile_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// notEnv are literals of that shape that are not environment variables.
var notEnv = map[string]bool{"ECDSA_SHA_256": true, "ECC_NIST_P256": true, "SIGN_VERIFY": true}

func readers(t *testing.T, root string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	var dirs []string
	for _, pattern := range []string{"internal/config", "internal/app", "internal/app/*", "cmd/*", "functions/*"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		dirs = append(dirs, m...)
	}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, f)
			ast.Inspect(file, func(n ast.Node) bool {
				var args []ast.Expr
				switch n := n.(type) {
				case *ast.CallExpr:
					args = n.Args
				case *ast.CompositeLit:
					// A table of settings ({kind, "what", "AGENTGATE_MAX_MESSAGE_BYTES", def})
					// read in a loop.
					args = n.Elts
				default:
					return true
				}
				for _, a := range args {
					lit, ok := a.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err == nil && envName.MatchString(s) && !notEnv[s] {
						found[s] = append(found[s], rel)
					}
				}
				return true
			})
		}
	}
	return found
}

func listed(t *testing.T, path string) (names map[string]bool, sdk map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, sdk = map[string]bool{}, map[string]bool{}
	line := regexp.MustCompile(`^#?\s*([A-Z][A-Z0-9_]*)=`)
	inSDK := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := sc.Text()
		if strings.Contains(text, "[aws-sdk]") {
			inSDK = true
		} else if strings.HasPrefix(text, "# [") {
			inSDK = false
		}
		if m := line.FindStringSubmatch(text); m != nil {
			names[m[1]] = true
			if inSDK {
				sdk[m[1]] = true
			}
		}
	}
	return names, sdk
}

func TestEnvExampleMatchesConfiguration(t *testing.T) {
	root := testenv.RepoRoot(t)
	read := readers(t, root)
	if len(read) < 10 {
		t.Fatalf("found only %d variables read; the scan is broken", len(read))
	}
	names, sdk := listed(t, filepath.Join(root, ".env.example"))
	var missing, unread []string
	for name, where := range read {
		if !names[name] {
			missing = append(missing, name+" (read in "+strings.Join(where, ", ")+")")
		}
	}
	for name := range names {
		if read[name] == nil && !sdk[name] {
			unread = append(unread, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(unread)
	for _, m := range missing {
		t.Errorf(".env.example does not list %s", m)
	}
	for _, u := range unread {
		t.Errorf(".env.example lists %s, which no configuration code reads", u)
	}
}
