package witness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// StateType is the type member of a state file.
const StateType = "toolwarrant-witness-state/v1"

// Bounds.
const (
	// MaxStateBytes bounds the state file.
	MaxStateBytes = 16 << 20
	// MaxLogs bounds the logs one witness knows.
	MaxLogs = 10000
	// LockTimeout bounds how long a change waits for another process's lock.
	LockTimeout = 10 * time.Second
)

// State is the witness's state file (JSON):
//
//	{"type":"toolwarrant-witness-state/v1","name":"witness.example/team-a","vkey":"witness.example/team-a+…",
//	 "logs":{"example.com/log":{"vkey":"example.com/log+…","size":42,"root":"<base64>","checkpoint":"<note>"}}}
type State struct {
	Type string `json:"type"`
	// Name and VKey are the witness's: its cosignature/v1 key name and verifier key.
	Name string `json:"name"`
	VKey string `json:"vkey"`
	// Logs are the logs it witnesses, by origin.
	Logs map[string]*Log `json:"logs"`
}

// Log is one witnessed log.
type Log struct {
	// VKey is the log's checkpoint verifier key (signed-note vkey).
	VKey string `json:"vkey"`
	// Size and Root are the latest checkpoint cosigned (0 and the empty tree's hash before
	// the first).
	Size int64  `json:"size"`
	Root string `json:"root"`
	// Checkpoint is that checkpoint: the note, the log's signature and the cosignature
	// returned ("" before the first).
	Checkpoint string `json:"checkpoint,omitempty"`
}

// EmptyRoot is the root hash of the empty tree (RFC 6962: the hash of the empty string).
var EmptyRoot = tlog.Hash(sha256.Sum256(nil))

// ErrState is wrapped for a state file that does not parse or is not consistent.
var ErrState = errors.New("not a valid witness state file")

// ErrLocked is wrapped when another process holds the state's lock for LockTimeout.
var ErrLocked = errors.New("the witness state is locked by another process")

var errBusy = errors.New("busy")

// ValidOrigin reports whether origin can name a witnessed log: one non-empty line of
// UTF-8 without control characters (tlog-checkpoint only recommends a schema-less URL).
func ValidOrigin(origin string) bool {
	return origin != "" && utf8.ValidString(origin) && strings.IndexFunc(origin, unicode.IsControl) < 0
}

func (s *State) check() error {
	if s.Type != StateType {
		return fmt.Errorf("%w: type %q, want %q", ErrState, s.Type, StateType)
	}
	v, err := checkpoint.WitnessVerifier(s.VKey)
	if err != nil || v.Name() != s.Name {
		return fmt.Errorf("%w: the witness key %q is not a cosignature key named %q", ErrState, s.VKey, s.Name)
	}
	if len(s.Logs) > MaxLogs {
		return fmt.Errorf("%w: more than %d logs", ErrState, MaxLogs)
	}
	for origin, l := range s.Logs {
		if l == nil || !ValidOrigin(origin) {
			return fmt.Errorf("%w: log %q", ErrState, origin)
		}
		if _, err := note.NewVerifier(l.VKey); err != nil {
			return fmt.Errorf("%w: log %q: key %q: %v", ErrState, origin, l.VKey, err)
		}
		if _, err := l.root(); err != nil || l.Size < 0 {
			return fmt.Errorf("%w: log %q: size %d, root %q", ErrState, origin, l.Size, l.Root)
		}
	}
	return nil
}

func (l *Log) root() (tlog.Hash, error) { return tlog.ParseHash(l.Root) }

// File is a state file on disk, and the lock beside it (Path + ".lock").
type File struct {
	Path string
	// LockTimeout bounds the wait for another process's lock (default LockTimeout).
	LockTimeout time.Duration
	mu          sync.Mutex // serialises this process's changes; the flock, other processes'
}

// Read reads and checks the state. Reading takes no lock: the file is only ever
// replaced whole.
func (f *File) Read() (*State, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxStateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrState, f.Path, MaxStateBytes)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrState, f.Path, err)
	}
	if s.Logs == nil {
		s.Logs = map[string]*Log{}
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return &s, nil
}

// Create writes a new state for the witness name with verifier key vkey; the file must
// not exist.
func (f *File) Create(ctx context.Context, name, vkey string) error {
	return f.locked(ctx, func() error {
		if _, err := os.Lstat(f.Path); err == nil {
			return fmt.Errorf("%s exists already: %w", f.Path, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s := &State{Type: StateType, Name: name, VKey: vkey, Logs: map[string]*Log{}}
		if err := s.check(); err != nil {
			return err
		}
		return f.write(s)
	})
}

// Update changes the state under the lock: it reads the file again, calls fn, and when
// fn returns true and no error writes the state it changed, durably, before returning.
func (f *File) Update(ctx context.Context, fn func(*State) (bool, error)) error {
	return f.locked(ctx, func() error {
		s, err := f.Read()
		if err != nil {
			return err
		}
		changed, err := fn(s)
		if err != nil || !changed {
			return err
		}
		if err := s.check(); err != nil {
			return err
		}
		return f.write(s)
	})
}

// AddLog adds the log origin with its checkpoint verifier key. It reports whether it was
// added (false: the witness knows it with that key already); another key for a known
// origin is an error.
func (f *File) AddLog(ctx context.Context, origin, vkey string) (bool, error) {
	if !ValidOrigin(origin) {
		return false, fmt.Errorf("origin %q: must be one non-empty line without control characters", origin)
	}
	if _, err := note.NewVerifier(vkey); err != nil {
		return false, fmt.Errorf("log key %q: %v (want a checkpoint verifier key, name+hash+base64)", vkey, err)
	}
	added := false
	err := f.Update(ctx, func(s *State) (bool, error) {
		if l, ok := s.Logs[origin]; ok {
			if l.VKey != vkey {
				return false, fmt.Errorf("the witness knows %s with another key (%s); it trusts one key per log", origin, l.VKey)
			}
			return false, nil
		}
		if len(s.Logs) >= MaxLogs {
			return false, fmt.Errorf("the witness knows %d logs, its limit", MaxLogs)
		}
		s.Logs[origin] = &Log{VKey: vkey, Size: 0, Root: EmptyRoot.String()}
		added = true
		return true, nil
	})
	return added, err
}

// locked runs fn holding this process's mutex and the state's flock, waiting at most
// LockTimeout (and no longer than ctx) for another process.
func (f *File) locked(ctx context.Context, fn func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	lf, err := os.OpenFile(f.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lock the witness state: %w", err)
	}
	defer lf.Close()
	wait := f.LockTimeout
	if wait <= 0 {
		wait = LockTimeout
	}
	deadline := time.Now().Add(wait)
	for {
		err := tryLock(lf)
		if err == nil {
			break
		}
		if !errors.Is(err, errBusy) {
			return fmt.Errorf("lock %s: %w", lf.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (%s, held for more than %s)", ErrLocked, lf.Name(), wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	defer func() { _ = unlock(lf) }()
	return fn()
}

// write replaces the state file: a temporary file beside it, written and fsynced, renamed
// over it, and the directory fsynced.
func (f *File) write(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	dir := filepath.Dir(f.Path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write the witness state: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the witness state %s: %w", f.Path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// OriginHash is the name of a log in the monitoring API: the hex SHA-256 of its origin.
func OriginHash(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return fmt.Sprintf("%x", h[:])
}
