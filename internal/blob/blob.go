// Package blob is the port for immutable named objects: audit checkpoints on AWS (S3, with
// versioning and Object Lock) and wherever else a write-once object is wanted. Objects are
// written once and never replaced or deleted through the port. The package uses only the
// standard library; the S3 driver is internal/s3blob, the conformance suite
// internal/blob/blobtest.
package blob

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Store holds write-once objects. Implementations are safe for concurrent use.
type Store interface {
	// PutIfAbsent stores data under key if no object has that key. If one does, holding
	// exactly data, it returns nil (a retried write is not an error); holding anything
	// else, ErrConflict and nothing changes. ErrInvalid for a bad key; ErrUnavailable when
	// the store is throttled or unreachable (the write may or may not have happened: retry
	// it, which is safe).
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Get returns the object's bytes. ErrNotFound; ErrUnavailable.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the keys starting with prefix, sorted bytewise. ErrUnavailable.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Sentinel errors of the port. Drivers wrap them with %w and context.
var (
	ErrNotFound    = errors.New("object not found")
	ErrConflict    = errors.New("another object exists under this key")
	ErrInvalid     = errors.New("invalid object key")
	ErrUnavailable = errors.New("blob store unavailable")
)

// MaxKeyLen bounds a key (S3's limit is 1024 bytes).
const MaxKeyLen = 512

// ValidateKey accepts keys of 1 to MaxKeyLen bytes of printable ASCII without backslash,
// made of '/'-separated segments none of which is empty, "." or "..": the same key is then
// safe as an S3 key and as a relative file path.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen || !utf8.ValidString(key) {
		return fmt.Errorf("%w: %q", ErrInvalid, key)
	}
	for _, r := range key {
		if r < 0x21 || r > 0x7e || r == '\\' {
			return fmt.Errorf("%w: %q holds a character outside printable ASCII", ErrInvalid, key)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, \".\" or \"..\" segment", ErrInvalid, key)
		}
	}
	return nil
}
