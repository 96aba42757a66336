package oci

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultBase(t *testing.T) {
	tests := []struct{ name, dockerfile, want string }{
		{"pinned", "# comment\nARG BASE=gcr.io/distroless/static-debian12:nonroot@sha256:00\nFROM ${BASE}\n", "gcr.io/distroless/static-debian12:nonroot@sha256:00"},
		{"lower case", "arg BASE=scratch\nfrom ${BASE}\n", "scratch"},
		{"no default", "ARG BASE\nFROM ${BASE}\n", ""},
		{"none", "FROM scratch\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(path, []byte(tc.dockerfile), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := DefaultBase(path)
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("DefaultBase = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
