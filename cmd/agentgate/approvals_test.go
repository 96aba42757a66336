package main

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentgate-dev/agentgate/internal/approvalproof"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var (
	toolwarrantOnce sync.Once
	toolwarrantDir  string
	toolwarrantErr  error
)

// toolwarrantBin builds cmd/toolwarrant once per test binary.
func toolwarrantBin(t *testing.T) string {
	t.Helper()
	toolwarrantOnce.Do(func() {
		if toolwarrantDir, toolwarrantErr = os.MkdirTemp("", "agentgate-toolwarrant-"); toolwarrantErr != nil {
			return
		}
		cmd := exec.Command(testenv.LookPath(t, "go"), "build", "-o", filepath.Join(toolwarrantDir, "toolwarrant"), "./cmd/toolwarrant")
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			toolwarrantErr = fmt.Errorf("go build ./cmd/toolwarrant: %v\n%s", err, out)
		}
	})
	if toolwarrantErr != nil {
		t.Fatal(toolwarrantErr)
	}
	return filepath.Join(toolwarrantDir, "toolwarrant")
}

// warrantLog is a toolwarrant catalog in a directory of its own, run through the built
// binary, whose audit log is published as tlog-tiles.
type warrantLog struct {
	t       *testing.T
	bin     string
	dir     string
	key     string // the approver's OpenSSH private key file
	tiles   string // the published tiles directory
	vkey    string // the checkpoint verifier key
	checkps string
}

func (w *warrantLog) run(args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "TOOLWARRANT_CATALOG="+filepath.Join(w.dir, "toolwarrant.db"), "TOOLWARRANT_IDENTITY=crawler@test",
		"TOOLWARRANT_CONFIG_DIR="+filepath.Join(w.dir, "config"), "HOME="+w.dir)
	code, stdout, stderr := testenv.RunCommand(w.t, cmd)
	return result{code, stdout, stderr}
}

func (w *warrantLog) ok(args ...string) string {
	w.t.Helper()
	r := w.run(args...)
	if r.code != 0 {
		w.t.Fatalf("toolwarrant %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// sshKeyPair writes an unencrypted Ed25519 OpenSSH key pair (path, path.pub), made here
// rather than by ssh-keygen.
func sshKeyPair(t *testing.T, path, comment string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newWarrantLog makes a catalog, a one-key trust list and a checkpoint key, and adds and
// crawls the MCP server at url as wx.
func newWarrantLog(t *testing.T, url string) *warrantLog {
	t.Helper()
	w := &warrantLog{t: t, bin: toolwarrantBin(t), dir: t.TempDir()}
	w.key = filepath.Join(w.dir, "approver")
	w.tiles = filepath.Join(w.dir, "www")
	w.checkps = filepath.Join(w.dir, "checkpoints")
	sshKeyPair(t, w.key, "approver@example")
	w.ok("init")
	w.ok("trust", "init", "--ssh-key", w.key+".pub", "--principal", "approver@example")
	w.ok("server", "add", "wx", url, "--allow-private")
	w.crawl()
	w.publish() // creates the checkpoint key
	w.vkey = strings.TrimSpace(w.ok("audit", "key", "--checkpoint"))
	return w
}

func (w *warrantLog) crawl() {
	w.t.Helper()
	if r := w.run("crawl"); r.code > 1 {
		w.t.Fatalf("toolwarrant crawl: %+v", r)
	}
}

func (w *warrantLog) decide(kind, tool, raw string) {
	w.t.Helper()
	w.ok(kind, "wx", tool, "--hash", string(toolDigest(w.t, raw)), "--sign-key", w.key)
}

// publish signs a checkpoint and publishes the tiles.
func (w *warrantLog) publish() {
	w.t.Helper()
	w.ok("audit", "checkpoint", "--dir", w.checkps, "--tiles", w.tiles)
}

func toolDigest(t *testing.T, raw string) warrant.Digest {
	t.Helper()
	d, _, err := warrant.DigestTool([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	wxForecast = `{"name":"get_forecast","description":"Get the weather forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	wxAlerts   = `{"name":"get_alerts","description":"Get weather alerts for a US state.","inputSchema":{"type":"object","properties":{"state":{"type":"string"}}}}`
	wxEcho     = `{"name":"echo","description":"Echo the text back.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`
)

// ciJSON is what the approvals test reads of ci --json.
type ciJSON struct {
	Failing   int                   `json:"failing"`
	Drift     bool                  `json:"drift"`
	Approvals *approvalproof.Report `json:"approvals"`
}

// TestCIApprovals is ci --approvals against a real toolwarrant log: a catalog made by the
// toolwarrant binary crawls a fixture MCP server on loopback, a person approves its tools
// with an SSH key, and the audit log is published as tlog-tiles and served over loopback
// HTTP. ci passes when every locked digest is approved, fails with a CRITICAL per digest
// never approved or since rejected, and cannot run (2) on a log it cannot read, a policy
// of another key, a witness quorum not met or an altered entry bundle. lock --approvals
// writes the bundle, refuses (nothing written) while a digest is not approved, and ci
// verifies the bundle offline; an altered bundle does not verify.
func TestCIApprovals(t *testing.T) {
	f := fixture.New(wxForecast, wxAlerts)
	mcpSrv := httptest.NewServer(f)
	defer mcpSrv.Close()
	w := newWarrantLog(t, mcpSrv.URL+"/mcp")
	w.decide("approve", "get_forecast", wxForecast)
	w.decide("approve", "get_alerts", wxAlerts)
	w.publish()
	web := httptest.NewServer(http.FileServer(http.Dir(w.tiles)))
	defer web.Close()
	logURL := web.URL + "/"

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".vscode", "mcp.json"), fmt.Sprintf(`{"servers": {"wx": {"type": "http", "url": %q}}}`, mcpSrv.URL+"/mcp"))
	policy := filepath.Join(dir, "toolwarrant.policy")
	writeFile(t, policy, "# the team's log, no witness required\nlog "+w.vkey+"\nquorum none\n")
	d := testDeps(dir)
	if r := runCLI(t, d, nil, "lock"); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}

	// Every locked digest approved: exit 0, online.
	r := runCLI(t, d, nil, "ci", "--approvals", logURL, "--policy", policy)
	if r.code != 0 || !strings.Contains(r.stdout, "ok: 2 locked tool digests approved as of checkpoint ") || !strings.Contains(r.stdout, "in "+logURL) {
		t.Fatalf("ci --approvals with every tool approved: %+v", r)
	}
	// The same from the directory, the flags from the environment.
	env := map[string]string{"AGENTGATE_APPROVALS": w.tiles, "AGENTGATE_APPROVALS_POLICY": policy}
	if r := runCLI(t, d, env, "ci"); r.code != 0 || !strings.Contains(r.stdout, "ok: 2 locked tool digests approved") {
		t.Fatalf("ci with AGENTGATE_APPROVALS (a directory): %+v", r)
	}

	// lock --approvals writes the bundle; ci verifies it offline.
	r = runCLI(t, d, nil, "lock", "--approvals", logURL, "--policy", policy)
	bundle := filepath.Join(dir, "agentgate.approvals.json")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote agentgate.approvals.json: 2 approvals proven in checkpoint ") {
		t.Fatalf("lock --approvals: %+v", r)
	}
	goodBundle := readFile(t, bundle)
	if r := runCLI(t, d, nil, "lock", "--approvals", logURL, "--policy", policy); r.code != 0 || !strings.Contains(r.stdout, "agentgate.approvals.json is up to date") {
		t.Errorf("a second lock --approvals: %+v", r)
	}
	var lj struct {
		Approvals *lockApprovalsResult `json:"approvals"`
	}
	r = runCLI(t, d, nil, "lock", "--approvals", logURL, "--policy", policy, "--json", "--approvals-bundle", filepath.Join(dir, "other.approvals.json"))
	if err := json.Unmarshal([]byte(r.stdout), &lj); r.code != 0 || err != nil || lj.Approvals == nil || !lj.Approvals.Written || lj.Approvals.Approvals != 2 ||
		lj.Approvals.Bundle != "other.approvals.json" || readFile(t, filepath.Join(dir, "other.approvals.json")) != goodBundle {
		t.Errorf("lock --approvals --json --approvals-bundle: %v %+v", err, r)
	}
	for _, args := range [][]string{{"ci", "--approvals", "agentgate.approvals.json", "--policy", policy}, {"ci", "--offline", "--policy", policy}} {
		r := runCLI(t, d, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "ok (offline): 2 locked tool digests approved as of checkpoint ") || !strings.Contains(r.stdout, "only seen online") {
			t.Errorf("%v: %+v", args, r)
		}
	}

	// A new tool, locked but not approved: approval-missing, and lock --approvals refuses.
	f.SetTools(wxForecast, wxAlerts, wxEcho)
	w.crawl()
	w.publish()
	lockBefore := readFile(t, filepath.Join(dir, "agentgate.lock"))
	r = runCLI(t, d, nil, "lock", "--approvals", logURL, "--policy", policy)
	if r.code != 1 || !strings.Contains(r.stderr, `approval-missing`) || !strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("lock --approvals with echo unapproved: %+v", r)
	}
	if readFile(t, filepath.Join(dir, "agentgate.lock")) != lockBefore || readFile(t, bundle) != goodBundle {
		t.Error("lock --approvals refused, but wrote the lockfile or the bundle")
	}
	if r := runCLI(t, d, nil, "lock"); r.code != 0 {
		t.Fatalf("lock with echo: %+v", r)
	}
	echo := string(toolDigest(t, wxEcho))
	r = runCLI(t, d, nil, "ci", "--approvals", logURL, "--policy", policy)
	wantLine := `CRITICAL server "wx" tool "echo" ` + echo + `: approval-missing: never approved; the log has no decision on this tool; review it: toolwarrant show wx echo --version ` + echo +
		`, then toolwarrant approve wx echo --hash ` + echo + ` --sign-key KEY`
	if r.code != 1 || !strings.Contains(r.stdout, wantLine+"\n") || !strings.Contains(r.stdout, "approvals: 1 of 3 locked tool digests are not approved") {
		t.Fatalf("ci --approvals with echo never approved: %+v\nwant the line %s", r, wantLine)
	}

	// get_alerts rejected since: approval-revoked as well. The JSON and SARIF say both.
	w.decide("reject", "get_alerts", wxAlerts)
	w.publish()
	sarif := filepath.Join(dir, "agentgate.sarif")
	r = runCLI(t, d, nil, "ci", "--approvals", logURL, "--policy", policy, "--json", "--sarif", sarif)
	var rep ciJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 1 || err != nil || rep.Approvals == nil {
		t.Fatalf("ci --approvals --json: %v %+v", err, r)
	}
	got := map[string]approvalproof.Result{}
	for _, x := range rep.Approvals.Tools {
		got[x.Tool] = x
	}
	if rep.Failing != 2 || rep.Drift || rep.Approvals.Critical != 2 || rep.Approvals.Approved != 1 || rep.Approvals.Offline ||
		got["echo"].Rule != approvalproof.RuleApprovalMissing || got["get_alerts"].Rule != approvalproof.RuleApprovalRevoked ||
		got["get_forecast"].Status != approvalproof.StatusApproved || got["get_alerts"].Revocation == nil || got["get_alerts"].Revocation.Type != "rejected" ||
		!strings.Contains(got["get_alerts"].Reason, "then rejected by approver@example") || got["get_alerts"].Review == "" {
		t.Errorf("ci --approvals --json: %+v", rep)
	}
	s := readFile(t, sarif)
	for _, want := range []string{`"ruleId": "approval-missing"`, `"ruleId": "approval-revoked"`, `"id": "approval-revoked"`, `"startLine": `} {
		if !strings.Contains(s, want) {
			t.Errorf("the SARIF has no %s:\n%s", want, s)
		}
	}
	if r := runCLI(t, d, map[string]string{"GITHUB_ACTIONS": "true"}, "ci", "--approvals", logURL, "--policy", policy); r.code != 1 ||
		!strings.Contains(r.stdout, "::error file=agentgate.lock,line=") || !strings.Contains(r.stdout, "review it: toolwarrant show wx get_alerts --version ") {
		t.Errorf("ci --approvals under GitHub Actions: %+v", r)
	}
	md := filepath.Join(dir, "pr.md")
	if r := runCLI(t, d, nil, "ci", "--approvals", logURL, "--policy", policy, "--markdown", md); r.code != 1 ||
		!strings.Contains(readFile(t, md), "### Approvals\n\n**CRITICAL**: 2 of 3 locked tool digests are not approved") || !strings.Contains(readFile(t, md), "| approval-revoked | `wx` | `get_alerts` |") {
		t.Errorf("ci --approvals --markdown: %+v\n%s", r, readFile(t, md))
	}
	// Offline, the old bundle still proves get_alerts' approval: a rejection after it is
	// only seen online. echo, which it does not hold, is missing.
	r = runCLI(t, d, nil, "ci", "--offline", "--policy", policy)
	if r.code != 1 || !strings.Contains(r.stdout, `tool "echo" `+echo+`: approval-missing: the bundle proves no approval`) || strings.Contains(r.stdout, "get_alerts") ||
		!strings.Contains(r.stdout, "a rejection or a newer approval not in it is only seen online") {
		t.Errorf("ci --offline after the rejection: %+v", r)
	}

	// Could not check (2): an unreadable log, another log's key, a quorum not met, an
	// altered entry bundle, a policy that does not parse.
	other := filepath.Join(dir, "other.policy")
	otherKey, err := checkpoint.VerifierKey("example.com/other", ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, other, "log "+otherKey+"\nquorum none\n")
	_, wk, _ := ed25519.GenerateKey(rand.Reader)
	cs, err := checkpoint.NewCosigner("witness.example.com/w1", edKey{wk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	quorum := filepath.Join(dir, "quorum.policy")
	writeFile(t, quorum, "log "+w.vkey+"\nwitness w1 "+cs.VerifierKey()+"\nquorum w1\n")
	badPolicy := filepath.Join(dir, "bad.policy")
	writeFile(t, badPolicy, "log "+w.vkey+"\n")
	altered := filepath.Join(t.TempDir(), "www")
	if err := os.CopyFS(altered, os.DirFS(w.tiles)); err != nil {
		t.Fatal(err)
	}
	// The newest partial bundle is the one the checkpoint names (the older ones are kept).
	var newest string
	for w := 255; w > 0 && newest == ""; w-- {
		if p := filepath.Join(altered, "tile", "entries", "000.p", fmt.Sprint(w)); fileExists(p) {
			newest = p
		}
	}
	entries := []string{newest}
	b, _ := os.ReadFile(entries[0])
	i := strings.LastIndex(string(b), `"type":"rejected"`)
	if i < 0 {
		t.Fatal("no rejection in the entry bundle")
	}
	copy(b[i:], `"type":"approved"`) // same length: only the root tells
	if err := os.WriteFile(entries[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	alteredWeb := httptest.NewServer(http.FileServer(http.Dir(altered)))
	defer alteredWeb.Close()
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unreadable log", []string{"--approvals", web.URL + "/nowhere/", "--policy", policy}, "cannot read: its checkpoint: GET " + web.URL + "/nowhere/checkpoint: 404 Not Found"},
		{"log not running", []string{"--approvals", "http://127.0.0.1:1/", "--policy", policy}, "cannot read: its checkpoint: GET http://127.0.0.1:1/checkpoint"},
		{"another log's key", []string{"--approvals", logURL, "--policy", other}, "is not signed by the policy's log key example.com/other"},
		{"quorum not met", []string{"--approvals", logURL, "--policy", quorum}, "short of its quorum witness w1"},
		{"altered entry bundle", []string{"--approvals", alteredWeb.URL + "/", "--policy", policy}, "the entry bundles do not hash to the root of checkpoint"},
		{"policy without quorum", []string{"--approvals", logURL, "--policy", badPolicy}, "no quorum line"},
		{"no policy", []string{"--approvals", logURL}, "--approvals needs --policy FILE"},
		{"offline URL", []string{"--approvals", logURL, "--policy", policy, "--offline"}, "--offline reads no network"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, d, nil, append([]string{"ci"}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
				t.Errorf("ci %v: %+v\nwant exit 2 and %q", tc.args, r, tc.stderr)
			}
		})
	}

	// The offline bundle, altered: a changed digest or proof hash does not verify (2); an
	// approval taken out leaves its digest missing (1).
	var gb approvalproof.Bundle
	if err := json.Unmarshal([]byte(goodBundle), &gb); err != nil || len(gb.Approvals) != 2 {
		t.Fatalf("the bundle: %v\n%s", err, goodBundle)
	}
	f.SetTools(wxForecast, wxAlerts) // back to what the bundle covers
	if r := runCLI(t, d, nil, "lock"); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	write := func(mutate func(b *approvalproof.Bundle)) string {
		c := gb
		c.Approvals = append([]approvalproof.Approval(nil), gb.Approvals...)
		for i := range c.Approvals {
			c.Approvals[i].Proof = append([]string(nil), gb.Approvals[i].Proof...)
		}
		mutate(&c)
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "agentgate.approvals.json")
		writeFile(t, p, string(data))
		return p
	}
	bundleTests := []struct {
		name string
		path string
		code int
		out  string
	}{
		{"as written", write(func(*approvalproof.Bundle) {}), 0, "ok (offline): 2 locked tool digests approved"},
		{"digest changed", write(func(b *approvalproof.Bundle) { b.Approvals[0].Digest = echo }), 2, "not what the bundle says"},
		{"proof changed", write(func(b *approvalproof.Bundle) { b.Approvals[1].Proof[0] = b.Approvals[0].Proof[0] + "x" }), 2, "proof hash 1 is not a base64 SHA-256"},
		{"proof hash swapped", write(func(b *approvalproof.Bundle) {
			b.Approvals[1].Proof[0], b.Approvals[1].Proof[len(b.Approvals[1].Proof)-1] = b.Approvals[1].Proof[len(b.Approvals[1].Proof)-1], b.Approvals[1].Proof[0]
		}), 2, "is not proven in checkpoint"},
		{"entry changed", write(func(b *approvalproof.Bundle) {
			b.Approvals[0].Entry = []byte(strings.Replace(string(b.Approvals[0].Entry), "approver@example", "approver@exampl3", 1))
		}), 2, "is not proven in checkpoint"},
		{"approval taken out", write(func(b *approvalproof.Bundle) { b.Approvals = b.Approvals[1:] }), 1, "approval-missing: the bundle proves no approval"},
	}
	for _, tc := range bundleTests {
		t.Run("bundle "+tc.name, func(t *testing.T) {
			r := runCLI(t, d, nil, "ci", "--approvals", tc.path, "--policy", policy)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Errorf("ci --approvals BUNDLE (%s): %+v\nwant exit %d and %q", tc.name, r, tc.code, tc.out)
			}
		})
	}
	if len(gb.Approvals[1].Proof) < 2 {
		t.Errorf("the proof swap above needs a proof of 2 hashes or more: %v", gb.Approvals[1].Proof)
	}
}

// edKey is an Ed25519 key as a checkpoint.MessageSigner.
type edKey struct{ k ed25519.PrivateKey }

func (e edKey) Public() crypto.PublicKey { return e.k.Public() }
func (e edKey) SignMessage(_ context.Context, m []byte) ([]byte, error) {
	return ed25519.Sign(e.k, m), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
