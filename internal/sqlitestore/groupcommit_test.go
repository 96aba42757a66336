package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openWriter opens a migrated writer on a fresh file with a scratch table and its committer.
func openWriter(t *testing.T) (*Store, *sql.DB) {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.write(t.Context(), "scratch", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE scratch (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s, s.r
}

func insert(k string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scratch (k) VALUES (?)`, k)
		return err
	}
}

func present(t *testing.T, r *sql.DB, k string) bool {
	t.Helper()
	var n int
	if err := r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM scratch WHERE k = ?`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// holdCommitter queues a write that blocks until release is called, so the writes queued
// meanwhile form the next batch: a deterministic group.
func holdCommitter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(t.Context(), "hold", func(context.Context, *sql.Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("the holding write: %v", err)
		}
	}
}

// waitQueued waits (bounded) until n writes are queued behind the held one.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for range 2000 {
		if len(s.commits.queue) >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d writes queued, want %d", len(s.commits.queue), n)
}

// TestGroupIsolatesFailures: in one grouped transaction, a write that fails, one that
// panics and one whose caller went away before its turn change nothing and get their own
// errors; every other write of the group is committed and acknowledged.
func TestGroupIsolatesFailures(t *testing.T) {
	s, r := openWriter(t)
	release := holdCommitter(t, s)
	type outcome struct {
		name string
		err  error
	}
	out := make(chan outcome, 8)
	var wg sync.WaitGroup
	submit := func(name string, ctx context.Context, fn func(context.Context, *sql.Tx) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out <- outcome{name, s.write(ctx, name, fn)}
		}()
	}
	gone, cancel := context.WithCancel(context.Background())
	submit("a", t.Context(), insert("a"))
	waitQueued(t, s, 1)
	submit("fails", t.Context(), func(ctx context.Context, tx *sql.Tx) error {
		if err := insert("fails")(ctx, tx); err != nil {
			return err
		}
		return errors.New("refused after writing")
	})
	waitQueued(t, s, 2)
	submit("dup", t.Context(), insert("a")) // a constraint violation
	waitQueued(t, s, 3)
	submit("panics", t.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_ = insert("panics")(ctx, tx)
		panic("boom")
	})
	waitQueued(t, s, 4)
	submit("gone", gone, insert("gone"))
	waitQueued(t, s, 5)
	cancel()
	submit("b", t.Context(), insert("b"))
	waitQueued(t, s, 6)
	release()
	wg.Wait()
	close(out)
	got := map[string]error{}
	for o := range out {
		got[o.name] = o.err
	}
	if got["a"] != nil || got["b"] != nil {
		t.Errorf("good writes of the group: a %v, b %v", got["a"], got["b"])
	}
	for _, name := range []string{"fails", "dup", "panics", "gone"} {
		if got[name] == nil {
			t.Errorf("%s was acknowledged", name)
		}
	}
	if !errors.Is(got["gone"], context.Canceled) {
		t.Errorf("the write whose caller went away: %v", got["gone"])
	}
	for k, want := range map[string]bool{"a": true, "b": true, "fails": false, "panics": false, "gone": false} {
		if present(t, r, k) != want {
			t.Errorf("row %s present = %v, want %v", k, !want, want)
		}
	}
}

// TestGroupShareOneCommit: writes queued while a transaction runs share the next one, and
// every one of them is durable when acknowledged (read back on a new connection after Close).
func TestGroupShareOneCommit(t *testing.T) {
	s, _ := openWriter(t)
	release := holdCommitter(t, s)
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.write(t.Context(), "w", insert(fmt.Sprint(i))) }()
	}
	waitQueued(t, s, n)
	before := s.commits.commits.Load()
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.commits.commits.Load() - before; got != 2 {
		t.Errorf("the held write and %d queued writes took %d commits, want 2", n, got)
	}
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := openDB(path, "ro", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var count int
	if err := r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM scratch`).Scan(&count); err != nil || count != n {
		t.Errorf("%d rows after close, want %d (%v)", count, n, err)
	}
	if err := s.write(t.Context(), "late", insert("late")); err == nil {
		t.Error("a write after Close was accepted")
	}
}
