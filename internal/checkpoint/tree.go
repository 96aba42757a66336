package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
)

var noteNameRE = regexp.MustCompile(`^(?:.*/)?(0|[1-9][0-9]{0,18})(\.note|\.cosig)$`)

// SizeOf returns the tree size a note or cosignature file name or key names
// ("…/42.note" → 42, ".note").
func SizeOf(name string) (int64, string, bool) {
	m := noteNameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, "", false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, m[2], err == nil
}

// Located is a verified note and where it was read.
type Located struct {
	*Note
	// Where names it in messages: "s3://bucket/checkpoints/42.note", "last seen (path)".
	Where string
}

// String names the checkpoint for messages: "checkpoint 42 of ORIGIN (WHERE)".
func (l Located) String() string {
	return fmt.Sprintf("checkpoint %d of %s (%s)", l.Size, l.Origin, l.Where)
}

// LoadNotes reads every checkpoint note of src with the cosignatures stored beside it,
// sorted by size. Each must verify under the checkpoint key logKey, be named by its size,
// and name logKey's origin; anything else is an error naming the file (someone wrote the
// checkpoints who should not have). Cosignatures are checked against witnesses.
func LoadNotes(ctx context.Context, src Source, logKey string, witnesses []note.Verifier) ([]Located, error) {
	names, err := src.Names(ctx)
	if err != nil {
		return nil, err
	}
	if len(names) > 2*MaxCheckpoints {
		return nil, fmt.Errorf("%s holds %d files, more than %d", src, len(names), 2*MaxCheckpoints)
	}
	cosigs := map[int64]string{}
	var notes []string
	for _, n := range names {
		size, kind, ok := SizeOf(n)
		switch {
		case !ok:
		case kind == CosigSuffix:
			cosigs[size] = n
		default:
			notes = append(notes, n)
		}
	}
	var out []Located
	var errs []error
	for _, n := range notes {
		size, _, _ := SizeOf(n)
		b, err := src.Read(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", src, n, err)
		}
		if c, ok := cosigs[size]; ok {
			cb, err := src.Read(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", src, c, err)
			}
			b = WithCosignatures(b, cb)
		}
		nt, err := OpenNote(b, logKey, witnesses)
		if err == nil && nt.Size != size {
			err = fmt.Errorf("%w: file %s holds the checkpoint of size %d", ErrNote, n, nt.Size)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", src, n, err))
			continue
		}
		out = append(out, Located{Note: nt, Where: src.String() + "/" + filepath.Base(n)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Located) int { return int(a.Size - b.Size) })
	return out, nil
}

// CheckTree checks a log's tree (every entry body, in order) against checkpoints: the
// log must hold at least each checkpoint's size of entries, and its first Size entries
// must hash to the checkpoint's root. A checkpoint a log fails is one it contradicts —
// entries removed, or an entry at or before it rewritten (re-signed or not).
func CheckTree(t *audit.Tree, cps []Located) []audit.Problem {
	var p []audit.Problem
	for _, c := range cps {
		if c.Size > t.Size() {
			p = append(p, audit.Problem{Seq: t.Size(), Reason: fmt.Sprintf("the log ends at entry %d, before %s: entries were removed", t.Size(), c)})
			continue
		}
		if c.Size == 0 {
			continue
		}
		root, err := t.Root(c.Size)
		if err != nil {
			p = append(p, audit.Problem{Seq: c.Size, Reason: err.Error()})
		} else if root != c.Root {
			p = append(p, audit.Problem{Seq: c.Size, Reason: fmt.Sprintf("the first %d entries hash to root %s, but %s says %s: an entry up to here was rewritten", c.Size, short(root.String()), c, short(c.Root.String()))})
		}
	}
	return p
}

// Seen is the last checkpoint a verifier has seen of each log, kept outside the catalog
// (in the user's configuration directory): `audit verify` checks the log against it by
// default and moves it forward only to a checkpoint the log was just verified against, so
// a truncation or a re-signed rewrite after it fails even with no flag given.
//
// Layout: Dir/<id>/seen.checkpoint (the note, with any cosignatures) and Dir/<id>/vkey
// (the checkpoint verifier key it was verified under), id being LogID(origin).
type Seen struct{ Dir string }

// LogID is the directory name of a log's local state: 16 hex digits of SHA-256(origin).
func LogID(origin string) string {
	h := tlog.RecordHash([]byte(origin)) // any fixed hash serves; it only names a directory
	return fmt.Sprintf("%x", h[:8])
}

// Path returns where the last seen checkpoint of origin is kept.
func (s Seen) Path(origin string) string {
	return filepath.Join(s.Dir, LogID(origin), "seen.checkpoint")
}

// ErrNotSeen is returned by Load when no checkpoint of the origin was seen yet.
var ErrNotSeen = errors.New("no checkpoint of this log seen yet")

// Load returns the last seen checkpoint of the log logKey names, verified under logKey;
// ErrNotSeen when there is none. Cosignatures are checked against witnesses. A seen file that no longer verifies is an error: it is
// the anchor, and a changed anchor is what an attacker would want.
func (s Seen) Load(logKey string, witnesses []note.Verifier) (Located, error) {
	v, err := note.NewVerifier(logKey)
	if err != nil {
		return Located{}, fmt.Errorf("checkpoint key %q: %v", logKey, err)
	}
	p := s.Path(v.Name())
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Located{}, ErrNotSeen
	}
	if err != nil {
		return Located{}, fmt.Errorf("last seen checkpoint: %w", err)
	}
	n, err := OpenNote(b, logKey, witnesses)
	if err != nil {
		return Located{}, fmt.Errorf("last seen checkpoint %s: %w", p, err)
	}
	return Located{Note: n, Where: "last seen, " + p}, nil
}

// VerifierKey returns the checkpoint verifier key recorded with origin's last seen
// checkpoint; ErrNotSeen when there is none.
func (s Seen) VerifierKey(origin string) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, LogID(origin), "vkey"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNotSeen
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint key of %s: %w", origin, err)
	}
	return string(trimNL(b)), nil
}

// Advance records n (verified under logKey) as the last seen checkpoint of its log if it
// is newer than the one recorded. The caller has checked the log against both, which is
// what makes them consistent. It reports whether the record moved.
func (s Seen) Advance(n *Note, logKey string) (bool, error) {
	if cur, err := s.Load(logKey, nil); err == nil && cur.Size >= n.Size {
		return false, nil
	} else if err != nil && !errors.Is(err, ErrNotSeen) {
		return false, err
	}
	dir := filepath.Join(s.Dir, LogID(n.Origin))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("last seen checkpoint: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, "vkey"), []byte(logKey+"\n")); err != nil {
		return false, err
	}
	if err := writeAtomic(s.Path(n.Origin), n.Bytes); err != nil {
		return false, err
	}
	return true, nil
}

func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
