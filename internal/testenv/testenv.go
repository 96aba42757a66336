package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Kind names a class of external dependency and the variable that makes it required.
type Kind string

const (
	// AWS is an AWS-compatible endpoint (moto_server, LocalStack, a real account).
	AWS Kind = "AGENTGATE_REQUIRE_AWS"
	// External is any other tool outside Go: node, npm packages, protoc, aws-lambda-rie.
	External Kind = "AGENTGATE_REQUIRE_EXTERNAL"
	// NPMRegistry is the public npm registry (registry.npmjs.org): the one place a test may
	// reach beyond loopback, and only when this is set (test/packages).
	NPMRegistry Kind = "AGENTGATE_REQUIRE_NPM_REGISTRY"
)

// Required reports whether missing dependencies of kind k must fail the test.
func Required(k Kind) bool { return os.Getenv(string(k)) == "1" }

// Missing skips the test with reason, or fails it when kind k is required.
func Missing(t testing.TB, k Kind, reason string) {
	t.Helper()
	if Required(k) {
		t.Fatalf("%s (required because %s=1)", reason, k)
	}
	t.Skip(reason)
}

// LookPath returns the path of the named program, or skips/fails as Missing does.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, External, name+" is not on PATH")
	}
	return p
}

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testenv: cannot locate source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// NodeModule returns the path of an npm package installed under test/node_modules (by
// `npm ci --prefix test`), or skips/fails as Missing does.
func NodeModule(t testing.TB, pkg string) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "test", "node_modules", filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		Missing(t, External, "npm package "+pkg+" is not installed; run: npm ci --prefix test")
	}
	return dir
}

// Event returns the committed sample event events/<name> (the files `sam local invoke -e`
// takes), failing the test if it cannot be read.
func Event(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BuildCommands builds every binary of ./cmd (CGO_ENABLED=0, stamped with version and
// commit as the Makefile stamps them) into a new temporary directory and returns it. A
// build failure fails the test.
func BuildCommands(t testing.TB, version, commit string) string {
	t.Helper()
	dir := t.TempDir()
	gobin := LookPath(t, "go")
	const pkg = "github.com/agentgate-dev/agentgate/internal/version"
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", dir+string(filepath.Separator),
		"-ldflags", "-X "+pkg+".Version="+version+" -X "+pkg+".Commit="+commit, "./cmd/...")
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
	return dir
}
