package localfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(repo, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(name, to string) string {
		p := filepath.Join(sub, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lock := write("agentgate.lock", `{"lockfileVersion":2}`)
	fifo := filepath.Join(repo, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(repo, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse: a gigabyte that costs nothing
		t.Fatal(err)
	}
	f.Close()
	outside := filepath.Join(t.TempDir(), "elsewhere.lock")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	if got, err := Read(lock, 1<<20); err != nil || string(got) != `{"lockfileVersion":2}` {
		t.Fatalf("a regular file: %q, %v", got, err)
	}
	if got, err := Read(link("in-repo", "../agentgate.lock"), 1<<20); err != nil || string(got) != `{"lockfileVersion":2}` {
		t.Fatalf("a symlink inside the repository: %q, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		path string
		want error
		says string
	}{
		{"symlink to /dev/zero", link("zero", "/dev/zero"), ErrOutside, "outside"},
		{"symlink out of the repository", link("out", outside), ErrOutside, "outside"},
		{"FIFO", fifo, ErrNotRegular, "a FIFO"},
		{"symlink to a FIFO in the repository", link("pipe", "../fifo"), ErrNotRegular, "a FIFO"},
		{"directory", sub, ErrNotRegular, "a directory"},
		{"/dev/zero named directly", "/dev/zero", ErrNotRegular, "a character device"},
		{"1 GiB file", big, ErrTooLarge, "1073741824 bytes"},
		{"missing", filepath.Join(repo, "nope"), fs.ErrNotExist, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.path, 64<<20)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	if !Same(lock, 1<<20, []byte(`{"lockfileVersion":2}`)) || Same(lock, 1<<20, []byte("other")) || Same(fifo, 1<<20, nil) {
		t.Error("Same")
	}
}
