package main

import (
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditCheckpoints: a checkpoint of the head makes a truncated history fail
// `audit verify --checkpoints`, although the truncated log verifies on its own (every entry
// in it is genuine and linked: only the checkpoint knows entries are missing).
func TestAuditCheckpoints(t *testing.T) {
	dir := t.TempDir()
	if r := runCLI(t, dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r)
	}
	alice := sshKey(t, dir, "alice")
	if r := runCLI(t, dir, nil, "trust", "init", "--ssh-key", alice+".pub", "--principal", "alice@example.com"); r.code != 0 {
		t.Fatalf("trust init: %s", r)
	}
	if r := runCLI(t, dir, nil, "server", "add", "wx", "http://127.0.0.1:9/mcp", "--allow-private"); r.code != 0 {
		t.Fatalf("server add: %s", r)
	}
	cps := filepath.Join(dir, "checkpoints")
	if r := runCLI(t, dir, nil, "audit", "checkpoint"); r.code != 2 {
		t.Errorf("checkpoint without --dir: %s", r)
	}
	r := runCLI(t, dir, nil, "audit", "checkpoint", "--dir", cps)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "wrote ") {
		t.Fatalf("audit checkpoint: %s", r)
	}
	if r := runCLI(t, dir, nil, "audit", "verify", "--checkpoints", cps); r.code != 0 || !strings.Contains(r.stderr, "checked against 1 checkpoint in") {
		t.Fatalf("audit verify --checkpoints: %s", r)
	}
	exp := runCLI(t, dir, nil, "audit", "export")
	lines := strings.SplitAfter(strings.TrimSuffix(exp.stdout, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("export has %d entries", len(lines))
	}
	writeFile(t, filepath.Join(dir, "truncated.jsonl"), strings.Join(lines[:len(lines)-1], "")+"\n")
	writeFile(t, filepath.Join(dir, "log.pub"), runCLI(t, dir, nil, "audit", "key").stdout)
	args := []string{"audit", "verify", "--export", filepath.Join(dir, "truncated.jsonl"), "--log-pub", filepath.Join(dir, "log.pub")}
	if r := runCLI(t, dir, nil, args...); r.code != 0 {
		t.Fatalf("the truncated log on its own: %s (it should verify: only a checkpoint can tell)", r)
	}
	// The same key as DER, the form 'aws kms get-public-key' gives after base64 -d.
	block, _ := pem.Decode([]byte(runCLI(t, dir, nil, "audit", "key").stdout))
	if block == nil {
		t.Fatal("audit key printed no PEM")
	}
	writeFile(t, filepath.Join(dir, "log.der"), string(block.Bytes))
	if r := runCLI(t, dir, nil, "audit", "verify", "--export", filepath.Join(dir, "truncated.jsonl"), "--log-pub", filepath.Join(dir, "log.der")); r.code != 0 {
		t.Errorf("--log-pub DER: %s", r)
	}
	if r := runCLI(t, dir, nil, append(args, "--checkpoints", cps)...); r.code != 1 {
		t.Errorf("the truncated log against the checkpoint: %s, want exit 1", r)
	}
	if r := runCLI(t, dir, nil, "audit", "verify", "--checkpoints", filepath.Join(dir, "nope")); r.code != 2 {
		t.Errorf("--checkpoints on a missing directory: %s, want exit 2", r)
	}
}
