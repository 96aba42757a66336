package checkpoint

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Type is the checkpoint format marker.
const Type = "toolwarrant-checkpoint/v1"

// Prefix is where checkpoints live in a bucket.
const Prefix = "checkpoints/"

// MaxFileBytes bounds one checkpoint file.
const MaxFileBytes = 64 << 10

// Checkpoint is one signed audit head.
type Checkpoint struct {
	// Seq and Hash are the audit head: the entry number and its hash (64 hex digits).
	Seq  int64
	Hash string
	// At is when the checkpoint was signed.
	At time.Time
	// KeyID names the log key that signed it; Signature is over SHA-256(Statement()).
	KeyID     string
	Signature []byte
}

// Head returns the checkpoint's audit head.
func (c Checkpoint) Head() warrant.AuditHead { return warrant.AuditHead{Seq: c.Seq, Hash: c.Hash} }

// Key returns the object key of the checkpoint of entry seq in a bucket.
func Key(seq int64) string { return Prefix + strconv.FormatInt(seq, 10) + ".json" }

var (
	hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	nameRE = regexp.MustCompile(`^(?:.*/)?([1-9][0-9]{0,18})\.json$`)
)

// SeqOf returns the entry number a checkpoint file name or key names ("…/42.json" → 42).
func SeqOf(name string) (int64, bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

type statement struct {
	Type  string `json:"type"`
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
	At    string `json:"at"`
	KeyID string `json:"keyId"`
}

type file struct {
	statement
	Signature string `json:"signature"`
}

// Statement returns the canonical bytes whose SHA-256 is signed.
func (c Checkpoint) Statement() ([]byte, error) {
	b, err := json.Marshal(statement{Type, c.Seq, c.Hash, c.At.UTC().Format(time.RFC3339Nano), c.KeyID})
	if err != nil {
		return nil, err
	}
	return canon.Transform(b)
}

func (c Checkpoint) digest() ([]byte, error) {
	st, err := c.Statement()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(st)
	return sum[:], nil
}

// Sign signs head with the log key.
func Sign(ctx context.Context, s signer.Signer, head warrant.AuditHead, at time.Time) (Checkpoint, error) {
	if head.Seq < 1 || !hashRE.MatchString(head.Hash) {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w: head %d:%q", warrant.ErrInvalid, head.Seq, head.Hash)
	}
	c := Checkpoint{Seq: head.Seq, Hash: head.Hash, At: at.UTC(), KeyID: s.KeyID()}
	d, err := c.digest()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint %d: %w", head.Seq, err)
	}
	if c.Signature, err = s.Sign(ctx, d); err != nil {
		return Checkpoint{}, fmt.Errorf("sign checkpoint %d: %w", head.Seq, err)
	}
	return c, nil
}

// Marshal returns the checkpoint file: canonical JSON, one line.
func (c Checkpoint) Marshal() ([]byte, error) {
	b, err := json.Marshal(file{statement{Type, c.Seq, c.Hash, c.At.UTC().Format(time.RFC3339Nano), c.KeyID}, base64.StdEncoding.EncodeToString(c.Signature)})
	if err != nil {
		return nil, err
	}
	out, err := canon.Transform(b)
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// ErrFormat is wrapped by Parse for a file that is not a checkpoint.
var ErrFormat = errors.New("not a toolwarrant checkpoint")

// Parse reads a checkpoint file strictly: exactly the fields above, known type, a 64-hex
// hash, a positive seq, an RFC 3339 time and a base64 signature. It does not verify the
// signature (Verify does).
func Parse(b []byte) (Checkpoint, error) {
	if len(b) > MaxFileBytes {
		return Checkpoint{}, fmt.Errorf("%w: larger than %d bytes", ErrFormat, MaxFileBytes)
	}
	var f file
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if d.More() {
		return Checkpoint{}, fmt.Errorf("%w: more than one JSON value", ErrFormat)
	}
	if f.Type != Type {
		return Checkpoint{}, fmt.Errorf("%w: type %q, want %q", ErrFormat, f.Type, Type)
	}
	at, err := time.Parse(time.RFC3339Nano, f.At)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: at: %v", ErrFormat, err)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(f.Signature)
	if err != nil || len(sig) == 0 {
		return Checkpoint{}, fmt.Errorf("%w: signature is not base64", ErrFormat)
	}
	if f.Seq < 1 || !hashRE.MatchString(f.Hash) || !strings.HasPrefix(f.KeyID, "sha256:") {
		return Checkpoint{}, fmt.Errorf("%w: seq %d, hash %q, keyId %q", ErrFormat, f.Seq, f.Hash, f.KeyID)
	}
	return Checkpoint{Seq: f.Seq, Hash: f.Hash, At: at.UTC(), KeyID: f.KeyID, Signature: sig}, nil
}

// Verify checks the checkpoint's signature under the trusted log keys (by key ID). It
// returns an error wrapping signer.ErrBadSignature, or naming an untrusted key.
func (c Checkpoint) Verify(keys map[string]crypto.PublicKey) error {
	pub, ok := keys[c.KeyID]
	if !ok {
		return fmt.Errorf("checkpoint %d is signed by key %s, which is not a trusted log key", c.Seq, c.KeyID)
	}
	d, err := c.digest()
	if err != nil {
		return fmt.Errorf("checkpoint %d: %w", c.Seq, err)
	}
	if err := signer.Verify(pub, d, c.Signature); err != nil {
		return fmt.Errorf("checkpoint %d: %w", c.Seq, err)
	}
	return nil
}
