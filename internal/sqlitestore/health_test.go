package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

const envelope = `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`

// fullStore is a store whose file is pinned at its current size: PRAGMA max_page_count set
// to the page count on the writer connection makes every write that needs one more page
// fail with SQLITE_FULL — what a full disk is to SQLite (its VFS turns ENOSPC into
// SQLITE_FULL). unpin lifts the limit, as freeing space does.
type fullStore struct {
	*Store
	svc *locker.Service
	pad locker.Created
}

func newFullStore(t *testing.T) *fullStore {
	t.Helper()
	s := newTestStore(t)
	s.commits.probeEvery = 0 // a probe on every Health call that needs one: no waiting here
	svc, err := locker.New(locker.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Create(t.Context(), locker.DefaultCreateRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Append(t.Context(), c.PadID, c.WriteKey, true, "application/json", []byte(envelope)); err != nil {
		t.Fatal(err)
	}
	return &fullStore{Store: s, svc: svc, pad: c}
}

// pin limits the file to the pages it has; unpin lifts the limit.
func (f *fullStore) pin(t *testing.T) {
	t.Helper()
	var pages int
	if err := f.w.QueryRowContext(t.Context(), `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	f.maxPages(t, pages)
}

func (f *fullStore) unpin(t *testing.T) { t.Helper(); f.maxPages(t, 1<<30) }

func (f *fullStore) maxPages(t *testing.T, n int) {
	t.Helper()
	var got int
	if err := f.w.QueryRowContext(t.Context(), fmt.Sprintf(`PRAGMA max_page_count = %d`, n)).Scan(&got); err != nil || got != n {
		t.Fatalf("max_page_count = %d (%v), want %d", got, err, n)
	}
}

func (f *fullStore) appendBlock(t *testing.T, payload []byte) error {
	t.Helper()
	_, err := f.svc.Append(t.Context(), f.pad.PadID, f.pad.WriteKey, true, "application/octet-stream", payload)
	return err
}

func (f *fullStore) health(t *testing.T) locker.StoreHealth {
	t.Helper()
	h, err := f.Health(t.Context())
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	return h
}

// TestHealthFullDisk: a store whose writes the file refuses (SQLITE_FULL) reports not
// writable — while every acknowledged block stays readable and health still counts the
// pads —, its probe write fails while the file stays full, and it reports writable again
// as soon as space is back, before any client writes.
func TestHealthFullDisk(t *testing.T) {
	f := newFullStore(t)
	if h := f.health(t); !h.Writable {
		t.Fatalf("Health before the disk filled = %+v, want writable", h)
	}
	f.pin(t)
	big := bytes.Repeat([]byte{0xa5}, locker.MaxBlockBytes)
	err := f.appendBlock(t, big)
	if !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("append on a full file = %v, want ErrUnavailable", err)
	}
	h := f.health(t)
	if h.Writable {
		t.Errorf("Health after a write failed with SQLITE_FULL = %+v, want not writable", h)
	}
	if h.Pads != (locker.PadCounts{Total: 1, Unsealed: 1}) || !h.WALMode {
		t.Errorf("Health on a full file = %+v, want the pad counted and WAL mode", h)
	}
	// The probe write meets the same full file: still not writable.
	if h := f.health(t); h.Writable {
		t.Errorf("Health again, file still full = %+v, want not writable", h)
	}
	blocks, err := f.Blocks(t.Context(), f.pad.PadID, 0, 10)
	if err != nil || len(blocks) != 1 || string(blocks[0].Payload) != envelope {
		t.Errorf("blocks on a full file = %d blocks (%v), want the acknowledged envelope", len(blocks), err)
	}

	f.unpin(t)
	if h := f.health(t); !h.Writable {
		t.Errorf("Health once space is back = %+v, want writable (the probe write commits)", h)
	}
	if err := f.appendBlock(t, big); err != nil {
		t.Fatalf("append once space is back: %v", err)
	}
	var probes int
	if err := f.r.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM meta WHERE key = 'write_probe'`).Scan(&probes); err != nil || probes != 0 {
		t.Errorf("the probe left %d rows behind (%v)", probes, err)
	}
}

// TestHealthRecoversOnClientWrite: with probes rate-limited (none due), a client's
// successful write alone makes the store writable again.
func TestHealthRecoversOnClientWrite(t *testing.T) {
	f := newFullStore(t)
	f.pin(t)
	if err := f.appendBlock(t, bytes.Repeat([]byte{1}, locker.MaxBlockBytes)); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("append on a full file = %v, want ErrUnavailable", err)
	}
	f.commits.probeEvery = 1 << 62 // no probe: only a client's write can clear the state
	f.commits.lastProbe = time.Now()
	if h := f.health(t); h.Writable {
		t.Fatalf("Health = %+v, want not writable", h)
	}
	f.unpin(t)
	if err := f.appendBlock(t, []byte("small")); err != nil {
		t.Fatal(err)
	}
	if h := f.health(t); !h.Writable {
		t.Errorf("Health after a committed write = %+v, want writable", h)
	}
}

// TestRefusalClass: which failed writes make the store report not writable. A failed
// condition does not (the store took the write and refused its content); a full file
// (SQLITE_FULL) and a read-only one (SQLITE_READONLY) do.
func TestRefusalClass(t *testing.T) {
	insert := func(key string, size int) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, hex(zeroblob(?)))`, key, size)
			return wrap("insert "+key, err)
		}
	}
	tests := []struct {
		name    string
		setup   string // on the writer connection, before the write
		fn      func(context.Context, *sql.Tx) error
		refused bool
	}{
		{"constraint", "", insert("schema_version", 1), false},
		{"full", "pin", insert("big", 200000), true},
		{"read-only", "PRAGMA query_only = 1", insert("small", 1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFullStore(t)
			switch tc.setup {
			case "":
			case "pin":
				f.pin(t)
			default:
				if _, err := f.w.ExecContext(t.Context(), tc.setup); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.w.Exec(`PRAGMA query_only = 0`) })
			}
			err := f.write(t.Context(), tc.name, tc.fn)
			if err == nil {
				t.Fatal("the write succeeded")
			}
			if got := f.commits.refusing(); got != tc.refused {
				t.Errorf("after %v: refusing = %v, want %v", err, got, tc.refused)
			}
		})
	}
}
