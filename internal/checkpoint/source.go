package checkpoint

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/blob"
)

// Source is where checkpoints are read from: a directory, a bucket.
type Source interface {
	// Names returns the checkpoint file names or keys ("…/<seq>.json"), any order.
	Names(ctx context.Context) ([]string, error)
	// Read returns one file.
	Read(ctx context.Context, name string) ([]byte, error)
	// String names the source in messages.
	String() string
}

// MaxCheckpoints bounds how many checkpoints Load reads.
const MaxCheckpoints = 100000

// Dir is a directory of checkpoint files named <seq>.json, <size>.note and <size>.cosig
// (what `aws s3 cp --recursive s3://BUCKET/checkpoints/ DIR` makes). Other files are
// ignored.
type Dir string

// Names implements Source.
func (d Dir) Names(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil, fmt.Errorf("checkpoints %s: %w", string(d), err)
	}
	var out []string
	for _, e := range ents {
		_, isJSON := SeqOf(e.Name())
		_, _, isNote := SizeOf(e.Name())
		if (isJSON || isNote) && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Read implements Source (at most MaxFileBytes+1 bytes, so Parse refuses larger files).
func (d Dir) Read(ctx context.Context, name string) ([]byte, error) {
	if strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("checkpoint file name %q: %w", name, fs.ErrInvalid)
	}
	f, err := os.Open(filepath.Join(string(d), name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

func (d Dir) String() string { return string(d) }

// Store reads the checkpoints/ keys of a blob store (s3blob for s3:// URLs).
type Store struct {
	Blobs blob.Store
	// Name names it in messages, e.g. "s3://bucket/checkpoints/".
	Name string
}

// Names implements Source.
func (s Store) Names(ctx context.Context) ([]string, error) { return s.Blobs.List(ctx, Prefix) }

// Read implements Source.
func (s Store) Read(ctx context.Context, name string) ([]byte, error) { return s.Blobs.Get(ctx, name) }

func (s Store) String() string { return s.Name }

// Load reads every checkpoint of src, sorted by Seq. A file that cannot be parsed, whose
// name is not its seq, or whose signature does not verify under keys is an error naming
// it: someone wrote the bucket who should not have, and nothing it says can be used.
func Load(ctx context.Context, src Source, keys map[string]crypto.PublicKey) ([]Checkpoint, error) {
	names, err := src.Names(ctx)
	if err != nil {
		return nil, err
	}
	if len(names) > MaxCheckpoints {
		return nil, fmt.Errorf("%s holds %d checkpoints, more than %d", src, len(names), MaxCheckpoints)
	}
	var out []Checkpoint
	var errs []error
	for _, n := range names {
		seq, ok := SeqOf(n)
		if !ok {
			continue
		}
		b, err := src.Read(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", src, n, err)
		}
		c, err := Parse(b)
		if err == nil && c.Seq != seq {
			err = fmt.Errorf("%w: file %s holds the checkpoint of entry %d", ErrFormat, n, c.Seq)
		}
		if err == nil {
			err = c.Verify(keys)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", src, n, err))
			continue
		}
		out = append(out, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return int(a.Seq - b.Seq) })
	return out, nil
}
