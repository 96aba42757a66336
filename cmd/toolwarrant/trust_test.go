package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTrustInitMissingKey pins issue 34 item 9: `trust init --ssh-key PATH` with no file
// at PATH says the key was not found and how to make one with ssh-keygen, exits 2 (an
// input error), and changes nothing on disk, with or without a catalog.
func TestTrustInitMissingKey(t *testing.T) {
	tests := []struct {
		name    string
		catalog bool
		key     string // under the directory
		hint    string // the ssh-keygen -f argument, under the directory; then what to pass
		pass    string
	}{
		{"a .pub path, with a catalog", true, "alice.pub", "alice", "it writes DIR/alice and DIR/alice.pub"},
		{"a .pub path, no catalog", false, "alice.pub", "alice", "it writes DIR/alice and DIR/alice.pub"},
		{"a path without .pub", true, "bob", "bob", "then pass DIR/bob.pub"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.catalog {
				if r := runCLI(t, dir, nil, "init"); r.code != 0 {
					t.Fatalf("init: %s", r)
				}
			}
			before := snapshot(t, dir)
			key := filepath.Join(dir, tc.key)
			r := runCLI(t, dir, nil, "trust", "init", "--ssh-key", key, "--principal", "alice@example.com")
			want := "toolwarrant: --ssh-key " + key + ": key not found; create one with 'ssh-keygen -t ed25519 -f " + filepath.Join(dir, tc.hint) +
				"' (" + strings.ReplaceAll(tc.pass, "DIR", dir) + ") (see 'toolwarrant trust init --help')\n"
			if r.code != 2 || r.stderr != want || r.stdout != "" {
				t.Errorf("exit %d\nstderr %q\nwant   %q\nstdout %q", r.code, r.stderr, want, r.stdout)
			}
			if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
				t.Errorf("the directory changed (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshot maps every file under dir to the SHA-256 of its content and its mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%s %x", info.Mode(), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
