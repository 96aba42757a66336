package warrantaws_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The operator's path on AWS: the toolwarrant CLI with --remote against the approvals
// function behind a SigV4-verifying gateway stand-in (moto, KMS), every request signed
// from the environment's credentials: list, diff, approve (and its refusals), reject,
// audit export, and audit verify of that export against the KMS public key alone.
func TestRemoteCLI(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	if res, err := s.crawl(t, awsapp.WarrantOptions{})(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil || res.Recorded != 1 {
		t.Fatalf("crawl: %+v, %v", res, err)
	}
	gw, url, dir, run := remoteCLI(t, s)
	asAlice := func(want int, args ...string) (string, string) {
		return run("AKIDALICE", "alice-secret", want, args...)
	}

	out, _ := asAlice(0, "list", "--remote", url, "--pending", "--json")
	var listed struct{ Tools []warrant.ToolRow }
	decodeJSON(t, []byte(out), &listed)
	if len(listed.Tools) != 2 || listed.Tools[0].State != warrant.StatePending {
		t.Fatalf("list --pending --remote: %s", out)
	}
	digest := map[string]warrant.Digest{}
	for _, r := range listed.Tools {
		digest[r.Tool] = r.Current
	}
	if out, _ = asAlice(0, "list", "--remote", url); !strings.Contains(out, "get_forecast") || !strings.Contains(out, "PENDING") {
		t.Errorf("list --remote table:\n%s", out)
	}
	// A new tool is graded against nothing: the diff has changes (exit 1).
	out, _ = asAlice(1, "diff", "weather", "get_forecast", "--remote", url, "--json")
	var dj struct {
		To      warrant.Digest
		Changes []warrant.Change
	}
	decodeJSON(t, []byte(out), &dj)
	if dj.To != digest["get_forecast"] || len(dj.Changes) == 0 {
		t.Errorf("diff --remote --json: %s", out)
	}

	// show --remote prints the exact canonical bytes the digest covers.
	out, _ = asAlice(0, "show", "weather", "get_forecast", "--remote", url)
	if warrant.DigestOf([]byte(strings.TrimSuffix(out, "\n"))) != digest["get_forecast"] {
		t.Errorf("show --remote printed bytes that do not hash to %s: %s", digest["get_forecast"], out)
	}
	out, _ = asAlice(0, "show", "weather", "get_alerts", "--version", string(digest["get_alerts"])[7:19], "--remote", url, "--json")
	var shown struct {
		Digest warrant.Digest
		State  warrant.State
	}
	decodeJSON(t, []byte(out), &shown)
	if shown.Digest != digest["get_alerts"] || shown.State != warrant.StatePending {
		t.Errorf("show --version PREFIX --remote --json: %s", out)
	}
	asAlice(2, "show", "weather", "nope", "--remote", url)

	// Refusals change nothing.
	before := gw.calls.Load()
	_, stderr := run("AKIDALICE", "wrong-secret", 2, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url)
	if !strings.Contains(stderr, "signature") || !strings.Contains(stderr, "aws sts get-caller-identity") {
		t.Errorf("a bad signature: %s", stderr)
	}
	if gw.calls.Load() != before {
		t.Error("a request with a bad signature reached the function")
	}
	_, stderr = run("AKIDCAROL", "carol-secret", 2, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url)
	if !strings.Contains(stderr, "ApproverPolicyArn") {
		t.Errorf("an auditor approving: %s", stderr)
	}
	_, stderr = run("AKIDCRAWL", "crawl-secret", 2, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url)
	if !strings.Contains(stderr, "crawl role") {
		t.Errorf("the crawl role approving: %s", stderr)
	}
	_, stderr = asAlice(2, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url, "--sign-key", "id_ed25519")
	if !strings.Contains(stderr, "drop --sign-key") {
		t.Errorf("--sign-key with --remote: %s", stderr)
	}
	w := s.warrant(t, "test", awsapp.WarrantOptions{})
	headBefore, _ := w.Catalog.AuditHead(ctx)

	out, _ = asAlice(0, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url, "--note", "read the diff")
	if !strings.Contains(out, "approved weather get_forecast "+string(digest["get_forecast"])+" as "+alice) {
		t.Errorf("approve --remote: %s", out)
	}
	if h, _ := w.Catalog.AuditHead(ctx); h.Seq != headBefore.Seq+1 || !strings.Contains(out, "audit head: ") {
		t.Errorf("approve --remote moved the head from %d to %d (want one entry); printed %s", headBefore.Seq, h.Seq, out)
	}
	if out, _ = asAlice(0, "approve", "weather", "get_forecast", "--hash", string(digest["get_forecast"]), "--remote", url); !strings.Contains(out, "already the approved digest") {
		t.Errorf("approving again: %s", out)
	}
	asAlice(0, "reject", "weather", "get_alerts", "--hash", string(digest["get_alerts"]), "--remote", url)
	// Reading works with the auditor's read-only policy.
	out, _ = run("AKIDCAROL", "carol-secret", 0, "list", "--remote", url, "--json")
	states := map[string]warrant.State{}
	decodeJSON(t, []byte(out), &listed)
	for _, r := range listed.Tools {
		states[r.Tool] = r.State
	}
	if states["get_forecast"] != warrant.StateApproved || states["get_alerts"] != warrant.StateRejected {
		t.Errorf("after the decisions: %v", states)
	}

	// The export verifies offline against the KMS public key, and attests the approver.
	export, _ := run("AKIDCAROL", "carol-secret", 0, "audit", "export", "--remote", url)
	if n := strings.Count(export, "\n"); int64(n) != headBefore.Seq+2 {
		t.Errorf("audit export --remote wrote %d entries, want %d", n, headBefore.Seq+2)
	}
	der, err := x509.MarshalPKIXPublicKey(w.Signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"audit.jsonl": []byte(export), "log-key.der": der} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = asAlice(0, "audit", "verify", "--export", "audit.jsonl", "--log-pub", "log-key.der", "--crawl-role", crawlRole)
	if h, _ := w.Catalog.AuditHead(ctx); !strings.HasPrefix(out, fmt.Sprintf("ok: %d entries verified, head %d:%s", h.Seq, h.Seq, h.Hash)) {
		t.Errorf("audit verify of the remote export: %s (head %+v)", out, h)
	}
	// One changed byte in the export fails verification.
	tampered := strings.Replace(export, `"decision":"approved"`, `"decision":"rejected"`, 1)
	if tampered == export {
		t.Fatal("no approval found in the export to tamper with")
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.jsonl"), []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	asAlice(1, "audit", "verify", "--export", "audit.jsonl", "--log-pub", "log-key.der", "--crawl-role", crawlRole)
	if _, err := os.Stat(filepath.Join(dir, "absent.db")); !os.IsNotExist(err) {
		t.Errorf("a --remote command touched the local catalog: %v", err)
	}
}

// remoteCLI starts the approvals function behind the SigV4-verifying gateway stand-in for
// alice (an approver), carol (a read-only auditor) and the crawl role, builds the CLI, and
// returns the gateway, its URL, the CLI's working directory and run: the CLI run as the
// holder of akid/secret with no catalog file anywhere (every answer comes through the API),
// failing the test unless it exits with want.
func remoteCLI(t *testing.T, s *stack) (*gateway, string, string, func(akid, secret string, want int, args ...string) (string, string)) {
	t.Helper()
	gw := &gateway{region: "us-east-1", fn: s.approvals(t, awsapp.WarrantOptions{}), callers: map[string]caller{
		"AKIDALICE": {secret: "alice-secret", arn: alice, decide: true},
		"AKIDCAROL": {secret: "carol-secret", arn: "arn:aws:sts::123456789012:assumed-role/toolwarrant-auditor/carol@example.com"},
		"AKIDCRAWL": {secret: "crawl-secret", arn: "arn:aws:sts::123456789012:assumed-role/dev-toolwarrant-crawl/cli", decide: true},
	}}
	url := gw.start(t)
	dir := t.TempDir()
	bin := testenv.BuildCommand(t, "./cmd/toolwarrant")
	run := func(akid, secret string, want int, args ...string) (string, string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
			"AWS_CONFIG_FILE=" + filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"),
			"AWS_ACCESS_KEY_ID=" + akid, "AWS_SECRET_ACCESS_KEY=" + secret, "TOOLWARRANT_CATALOG=" + filepath.Join(dir, "absent.db")}
		code, stdout, stderr := testenv.RunCommand(t, cmd)
		if code != want {
			t.Fatalf("toolwarrant %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	return gw, url, dir, run
}

// TestRemoteServerAdd: `toolwarrant server add --remote` registers a server through the
// approvals API as the caller's IAM principal (POST /v1/servers, CatalogAdminPolicy): it is
// in the catalog the dispatcher queues, recorded by that principal in a log that verifies;
// the same again changes nothing; a private address, an environment header, a secret the
// crawl role may not read, a reader's credentials and the crawl role are refused, and
// nothing is added.
func TestRemoteServerAdd(t *testing.T) {
	s := newStack(t)
	s.c.HeaderSecrets = []string{"arn:aws:secretsmanager:us-east-1:123456789012:secret:tickets-token-??????"}
	gw := &gateway{region: "us-east-1", fn: s.approvals(t, awsapp.WarrantOptions{}), callers: map[string]caller{
		"AKIDALICE": {secret: "alice-secret", arn: alice, decide: true},
		"AKIDCAROL": {secret: "carol-secret", arn: "arn:aws:sts::123456789012:assumed-role/toolwarrant-auditor/carol@example.com"},
		"AKIDCRAWL": {secret: "crawl-secret", arn: "arn:aws:sts::123456789012:assumed-role/dev-toolwarrant-crawl/cli", decide: true},
	}}
	url := gw.start(t)
	dir := t.TempDir()
	bin := testenv.BuildCommand(t, "./cmd/toolwarrant")
	run := func(akid, secret string, want int, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
			"AWS_CONFIG_FILE=" + filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"),
			"AWS_ACCESS_KEY_ID=" + akid, "AWS_SECRET_ACCESS_KEY=" + secret, "TOOLWARRANT_REMOTE=" + url, "TOOLWARRANT_CATALOG=" + filepath.Join(dir, "absent.db")}
		code, stdout, stderr := testenv.RunCommand(t, cmd)
		if code != want {
			t.Fatalf("toolwarrant %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	secret := "arn:aws:secretsmanager:us-east-1:123456789012:secret:tickets-token-AbCdEf"
	if out := run("AKIDALICE", "alice-secret", 0, "server", "add", "tickets", "https://tickets.example.com/mcp", "--header-secret", "Authorization="+secret); !strings.Contains(out, "added server tickets") {
		t.Errorf("server add --remote: %s", out)
	}
	if out := run("AKIDALICE", "alice-secret", 0, "server", "add", "tickets", "https://tickets.example.com/mcp", "--header-secret", "Authorization="+secret); !strings.Contains(out, "nothing changed") {
		t.Errorf("server add --remote again: %s", out)
	}
	run("AKIDALICE", "alice-secret", 2, "server", "add", "lan", "http://10.0.0.7/mcp", "--allow-private")
	run("AKIDALICE", "alice-secret", 2, "server", "add", "envy", "https://envy.example.com/mcp", "--header-env", "Authorization=TOKEN")
	if out := run("AKIDALICE", "alice-secret", 2, "server", "add", "other", "https://other.example.com/mcp", "--header-secret",
		"Authorization=arn:aws:secretsmanager:us-east-1:123456789012:secret:other-XyZ123"); !strings.Contains(out, "CrawlHeaderSecretArns") {
		t.Errorf("a secret the crawl role may not read: %s", out)
	}
	run("AKIDCAROL", "carol-secret", 2, "server", "add", "carols", "https://carols.example.com/mcp")
	run("AKIDCRAWL", "crawl-secret", 2, "server", "add", "crawls", "https://crawls.example.com/mcp")

	w := s.warrant(t, "reader", awsapp.WarrantOptions{})
	servers, err := w.Catalog.Servers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, srv := range servers {
		names = append(names, srv.Name)
		if srv.Name == "tickets" && (srv.AddedBy != alice || len(srv.Headers) != 1 || srv.Headers[0].Secret != secret) {
			t.Errorf("tickets: %+v; want added by %s with its secret header", srv, alice)
		}
	}
	if fmt.Sprint(names) != "[tickets]" {
		t.Errorf("catalog servers %v, want [tickets]", names)
	}
	if _, rep := s.dep.AuditLog(t); !rep.OK() {
		t.Errorf("audit log: %+v", rep.Problems)
	}
}

// TestRemoteBulkApproval: `toolwarrant approve SERVER --all-pending --remote` approves
// every routine first-sight tool of a server through the approvals API (GET and POST
// /v1/servers/{server}/bulk) as the caller's IAM principal, in one statement that attests
// it: a dry run records nothing, a reader and the crawl role are refused and nothing is
// recorded, the approvals are one entry per tool after the head read, a second run finds
// nothing to approve, and the remote export verifies offline with the crawl role named.
func TestRemoteBulkApproval(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	if res, err := s.crawl(t, awsapp.WarrantOptions{})(ctx, json.RawMessage(testenv.Event(t, "crawl-scheduled.json"))); err != nil || res.Recorded != 1 {
		t.Fatalf("crawl: %+v, %v", res, err)
	}
	_, url, dir, run := remoteCLI(t, s)
	w := s.warrant(t, "test", awsapp.WarrantOptions{})
	before, err := w.Catalog.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type bulkOut struct {
		Approved   []warrant.BulkItem
		Statements int
		By         string
		ReadHead   warrant.AuditHead
		AuditHead  *warrant.AuditHead
		Held       []struct{ Tool string }
	}
	out, _ := run("AKIDALICE", "alice-secret", 0, "approve", "weather", "--all-pending", "--dry-run", "--remote", url, "--json")
	var dry bulkOut
	decodeJSON(t, []byte(out), &dry)
	if len(dry.Approved) != 2 || dry.Statements != 0 || dry.ReadHead != before || dry.AuditHead != nil {
		t.Fatalf("--dry-run --remote: %s (head %+v)", out, before)
	}
	_, stderr := run("AKIDCAROL", "carol-secret", 2, "approve", "weather", "--all-pending", "--remote", url)
	if !strings.Contains(stderr, "ApproverPolicyArn") {
		t.Errorf("an auditor's bulk approval: %s", stderr)
	}
	_, stderr = run("AKIDCRAWL", "crawl-secret", 2, "approve", "weather", "--all-pending", "--remote", url)
	if !strings.Contains(stderr, "crawl role") {
		t.Errorf("the crawl role's bulk approval: %s", stderr)
	}
	_, stderr = run("AKIDALICE", "alice-secret", 2, "approve", "weather", "--all-pending", "--remote", url, "--sign-key", "id_ed25519")
	if !strings.Contains(stderr, "drop --sign-key") {
		t.Errorf("--sign-key with --remote: %s", stderr)
	}
	if h, _ := w.Catalog.AuditHead(ctx); h != before {
		t.Fatalf("a dry run or a refusal moved the audit head from %+v to %+v", before, h)
	}
	out, _ = run("AKIDALICE", "alice-secret", 0, "approve", "weather", "--all-pending", "--remote", url, "--note", "first sight", "--json")
	var done bulkOut
	decodeJSON(t, []byte(out), &done)
	after, _ := w.Catalog.AuditHead(ctx)
	if len(done.Approved) != 2 || done.Statements != 1 || done.By != alice || done.AuditHead == nil || *done.AuditHead != after || after.Seq != before.Seq+2 {
		t.Fatalf("approve --all-pending --remote: %s (head %+v → %+v)", out, before, after)
	}
	tools, err := w.Service.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tools {
		if r.State != warrant.StateApproved {
			t.Errorf("%s is %s after the bulk approval", r.Tool, r.State)
		}
	}
	if out, _ = run("AKIDALICE", "alice-secret", 0, "approve", "weather", "--all-pending", "--remote", url); !strings.Contains(out, "no routine first-sight tool is pending") {
		t.Errorf("a second bulk approval: %s", out)
	}
	export, _ := run("AKIDCAROL", "carol-secret", 0, "audit", "export", "--remote", url)
	der, err := x509.MarshalPKIXPublicKey(w.Signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"audit.jsonl": []byte(export), "log-key.der": der} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = run("AKIDALICE", "alice-secret", 0, "audit", "verify", "--export", "audit.jsonl", "--log-pub", "log-key.der", "--crawl-role", crawlRole)
	if !strings.HasPrefix(out, fmt.Sprintf("ok: %d entries verified", after.Seq)) {
		t.Errorf("audit verify of the remote export: %s", out)
	}
}
