// Package localfile reads the files a command is given — a lockfile, a snapshot, a client
// configuration — as untrusted input: a regular file only (never a device, a FIFO, a socket
// or a directory, and without blocking on one), no larger than a bound, and through a
// symbolic link only when the link stays inside the repository that holds it. A pull
// request can commit agentgate.lock as a symlink to /dev/zero or a FIFO; reading it must
// fail at once with an error that says so. Standard library only.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotRegular is matched by the error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is matched by the error for a file over the bound.
var ErrTooLarge = errors.New("over the size bound")

// ErrOutside is matched by the error for a symbolic link that leads out of the repository.
var ErrOutside = errors.New("a symbolic link out of the repository")

// Read returns the contents of the regular file at path, of at most max bytes (max <= 0:
// no bound). A symbolic link is followed only to a file inside the repository holding the
// link: the nearest directory above it with a .git entry, or the link's own directory when
// there is none. A missing file gives an error matching fs.ErrNotExist.
func Read(path string, max int64) ([]byte, error) {
	target := path
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		root := repoRoot(filepath.Dir(path))
		if rr, err := filepath.EvalSymlinks(root); err == nil {
			root = rr
		}
		if !within(root, resolved) {
			return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it leads to %s, outside %s", ErrOutside, resolved, root)}
		}
		target = resolved
	}
	f, err := openNoBlock(target)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind(fi.Mode()))}
	}
	if max > 0 && fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it is %d bytes, more than the %d this file may have", ErrTooLarge, fi.Size(), max)}
	}
	var r io.Reader = f
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if max > 0 && int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: it grew past %d bytes while being read", ErrTooLarge, max)}
	}
	return data, nil
}

// Same reports whether path holds exactly data (false when it cannot be read as Read
// would): the check before rewriting a file that may not have changed.
func Same(path string, max int64, data []byte) bool {
	old, err := Read(path, max)
	return err == nil && string(old) == string(data)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file (mode " + m.String() + ")"
	}
}

// repoRoot is the nearest directory at or above dir holding .git, or dir.
func repoRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
