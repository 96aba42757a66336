package sqlitestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/locker/storetest"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "locker.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) locker.Store { return newTestStore(t) })
}

func TestFileIsPrivate(t *testing.T) {
	s := newTestStore(t)
	st, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("database mode = %o, want 600", perm)
	}
}

func TestHistoryIsAppendOnly(t *testing.T) {
	s := newTestStore(t)
	svc, err := locker.New(locker.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SeedDemo(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Triggers fire per row: give every history table one.
	if _, err := svc.Create(t.Context(), locker.DefaultCreateRequest(), &locker.Receipt{TxHash: "0x01", AmountUnits: "1", Payer: "0x02"}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE blocks SET payload = x'00' WHERE pad_id = 'demo-pad-v1'`,
		`DELETE FROM blocks`,
		`DELETE FROM pads`,
		`DELETE FROM tickets`,
		`DELETE FROM payment_receipts`,
		`UPDATE payment_receipts SET payer = 'x'`,
	} {
		if _, err := s.w.ExecContext(t.Context(), stmt); err == nil || !strings.Contains(err.Error(), "append-only") && !strings.Contains(err.Error(), "never deleted") {
			t.Errorf("%s: err = %v, want the trigger's refusal", stmt, err)
		}
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locker.db")
	rw, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rw.Close()
	ro, err := Open(t.Context(), Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Expire(t.Context(), "x"); err == nil {
		t.Error("write on a read-only store succeeded")
	}
	h, err := ro.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if h.Writable {
		t.Error("read-only store reports writable")
	}
	if _, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "missing.db"), ReadOnly: true}); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
}

func TestRefusesUnknownSchemaVersion(t *testing.T) {
	s := newTestStore(t)
	if _, err := s.w.ExecContext(t.Context(), `UPDATE meta SET value = '99' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	s.Close()
	_, err := Open(t.Context(), Config{Path: path})
	if err == nil || !strings.Contains(err.Error(), `schema version "99"`) {
		t.Errorf("Open = %v, want a schema version refusal", err)
	}
}

// Request-path reads run without the request's cancellation (quick), but one whose
// context is already done is refused before its statement starts.
func TestReadsRefuseADoneContext(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err1 := s.Pad(ctx, "p")
	_, err2 := s.Ticket(ctx, "t")
	_, _, err3 := s.PadAndTicket(ctx, "p", "t")
	_, err4 := s.Blocks(ctx, "p", 0, 1)
	for i, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read %d with a cancelled context: %v, want context.Canceled", i+1, err)
		}
	}
}
