package tiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Store is where a tiled log is published: a directory ([Dir]), an S3 prefix
// (internal/tiles/s3tiles). Names are the tlog-tiles paths relative to the log's prefix
// ("checkpoint", "tile/0/x001/234.p/7", "tile/entries/000"). Implementations are safe for
// concurrent use.
type Store interface {
	// Put writes data at name. Full and Partial objects are written once: if one exists
	// holding exactly data, Put returns nil (a retried write); holding anything else, an
	// error wrapping ErrExists, and nothing changes. A Checkpoint is replaced, atomically
	// for a reader (the old bytes or the new, never a mix).
	Put(ctx context.Context, name string, data []byte, kind Kind) error
	// Get returns the object's bytes, at most max of them (a larger object is an error);
	// an error wrapping ErrNotFound when there is none.
	Get(ctx context.Context, name string, max int64) ([]byte, error)
}

// Errors of the Store port. Implementations wrap them with %w and context.
var (
	ErrNotFound = errors.New("not published")
	ErrExists   = errors.New("published already with other content")
)

// MaxCheckpointBytes bounds the checkpoint file read (a note with a few cosignatures).
const MaxCheckpointBytes = 64 << 10

// MaxTileBytes bounds any tile or entry bundle read: a full bundle of the largest entries.
const MaxTileBytes = Width * (2 + MaxEntryBytes)

// ValidName reports whether name is one a Store holds: the checkpoint, or a tile or
// entry bundle path in canonical form.
func ValidName(name string) bool {
	if name == CheckpointName {
		return true
	}
	_, err := ParsePath(name)
	return err == nil
}

// Dir is a directory holding the log as files, laid out as the URLs are: serve it as is
// (http.FileServer, nginx, any static host) and the log's prefix is the directory's URL.
// Files are written 0644 and directories 0755 (the log is public); every write goes to
// a temporary file first, so a reader never sees half a file.
type Dir string

var _ Store = Dir("")

func (d Dir) path(name string) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("tiles %s: %q is not a tile, entry bundle or checkpoint name: %w", string(d), name, fs.ErrInvalid)
	}
	return filepath.Join(string(d), filepath.FromSlash(name)), nil
}

// Put implements Store: a new object is linked into place from a temporary file (so
// creating it fails if another writer got there first), the checkpoint renamed over the
// old one.
func (d Dir) Put(ctx context.Context, name string, data []byte, kind Kind) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tiles: write %s: %w", p, err)
	}
	if kind == Checkpoint {
		if err := os.Rename(tmp, p); err != nil {
			return fmt.Errorf("tiles: write %s: %w", p, err)
		}
		return nil
	}
	if err := os.Link(tmp, p); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: rename, unless the file is there already.
		if _, serr := os.Lstat(p); errors.Is(serr, fs.ErrNotExist) {
			if err := os.Rename(tmp, p); err != nil {
				return fmt.Errorf("tiles: write %s: %w", p, err)
			}
			return nil
		}
	}
	old, err := d.Get(ctx, name, int64(len(data))+1)
	if err != nil {
		return fmt.Errorf("tiles: %s exists and cannot be read: %w", p, err)
	}
	if !bytes.Equal(old, data) {
		return fmt.Errorf("tiles: %s: %w", p, ErrExists)
	}
	return nil
}

// Get implements Store. Only regular files are read.
func (d Dir) Get(ctx context.Context, name string, max int64) ([]byte, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tiles: %s: %w", p, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("tiles: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("tiles: %s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("tiles: read %s: %w", p, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("tiles: %s is larger than %d bytes", p, max)
	}
	return b, nil
}

func (d Dir) String() string { return string(d) }

// storeName names a store in messages.
func storeName(s Store) string {
	if st, ok := s.(fmt.Stringer); ok {
		return strings.TrimSpace(st.String())
	}
	return "the tiles store"
}
