package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// BenchmarkAppend measures durable appends (WAL, synchronous=FULL: every 201 is fsynced)
// through the locker service on a real file, to one pad and to 8 and 64 pads in parallel
// (one writer goroutine per pad). It
// reports appends/s; the database lives under the module (set BENCH_DIR to choose the disk),
// never on a tmpfs where fsync would be free.
//
//	go test -run='^$' -bench=Append -benchtime=2000x ./internal/sqlitestore/
func BenchmarkAppend(b *testing.B) {
	// The floor: one durable single-row INSERT transaction on the same kind of connection, the
	// least an acknowledged append can cost. Quote appends/s as a ratio to it.
	b.Run("floor=insert-commit", func(b *testing.B) {
		dir := os.Getenv("BENCH_DIR")
		if dir == "" {
			dir = b.TempDir()
		}
		path := filepath.Join(dir, "bench-floor.db")
		os.Remove(path)
		b.Cleanup(func() { os.Remove(path); os.Remove(path + "-wal"); os.Remove(path + "-shm") })
		db, err := openDB(path, "rw", 0, 1)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(b.Context(), `CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`); err != nil {
			b.Fatal(err)
		}
		payload := make([]byte, 64)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tx, err := db.BeginTx(b.Context(), nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(b.Context(), `INSERT INTO t (k, v) VALUES (?, ?)`, i, payload); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	})
	for _, pads := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("pads=%d", pads), func(b *testing.B) {
			dir := os.Getenv("BENCH_DIR")
			if dir == "" {
				dir = b.TempDir()
			}
			path := filepath.Join(dir, fmt.Sprintf("bench-%d.db", pads))
			os.Remove(path)
			b.Cleanup(func() { os.Remove(path); os.Remove(path + "-wal"); os.Remove(path + "-shm") })
			s, err := Open(b.Context(), Config{Path: path})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			svc, err := locker.New(locker.Config{Store: s})
			if err != nil {
				b.Fatal(err)
			}
			type pad struct{ id, key string }
			var ps []pad
			for i := 0; i < pads; i++ {
				c, err := svc.Create(b.Context(), locker.CreateRequest{TTLSeconds: 3600, MaxBlocks: locker.MaxMaxBlocks}, nil)
				if err != nil {
					b.Fatal(err)
				}
				env := `{"schema":"locker.handoff.v1","task_id":"b","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
				if _, err := svc.Append(b.Context(), c.PadID, c.WriteKey, true, "application/json", []byte(env)); err != nil {
					b.Fatal(err)
				}
				ps = append(ps, pad{c.PadID, c.WriteKey})
			}
			payload := []byte("a 64-byte block payload ................................ padding")
			var next atomic.Int64
			b.SetParallelism(max(1, pads/2)) // pads goroutines on a 2-core machine
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := ps[int(next.Add(1)-1)%len(ps)] // one writer per pad: appends, not lost races
				for pb.Next() {
					if _, err := svc.Append(b.Context(), p.id, p.key, true, "text/plain", payload); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkReadPadAndTicket is the store's part of a ticketed /blocks read, with the
// cancellable context every net/http request carries:
//
//   - two-statements-watched: the pad's and the ticket's prepared statements, each
//     given that context (how a read was looked up before PadAndTicket and quick);
//
//   - one-statement-watched: the joined statement, given that context;
//
//   - PadAndTicket: the store's method as served (the joined statement, run without the
//     context's cancellation, which database/sql and the driver would each watch with a
//     goroutine per statement).
//
//     go test -run='^$' -bench=ReadPadAndTicket ./internal/sqlitestore/
func BenchmarkReadPadAndTicket(b *testing.B) {
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "locker.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	id := "0123456789abcdef0123456789abcdef"
	np := locker.NewPad{Pad: locker.Pad{ID: id, WriteKeyHash: locker.HashSecret("wk"), State: locker.StateOpen, CreatedAt: 1000,
		ExpiresAt: 4600, MaxBlocks: 8, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash},
		Ticket: locker.Ticket{Hash: locker.HashSecret("tk"), PadID: id, Type: locker.TicketReadOnce, MaxReads: 1, CreatedAt: 1000}}
	if err := s.CreatePad(b.Context(), np); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	b.Run("two-statements-watched", func(b *testing.B) {
		for b.Loop() {
			if _, err := scanPad(s.padStmt.QueryRowContext(ctx, id)); err != nil {
				b.Fatal(err)
			}
			if _, err := scanTicket(s.ticketStmt.QueryRowContext(ctx, np.Ticket.Hash)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-statement-watched", func(b *testing.B) {
		var cols [18]any
		var sink [18]sql.RawBytes
		for i := range cols {
			cols[i] = &sink[i]
		}
		for b.Loop() {
			rows, err := s.padTicketStmt.QueryContext(ctx, id, np.Ticket.Hash)
			if err != nil {
				b.Fatal(err)
			}
			if !rows.Next() {
				b.Fatal("no row")
			}
			if err := rows.Scan(cols[:]...); err != nil {
				b.Fatal(err)
			}
			rows.Close()
		}
	})
	b.Run("PadAndTicket", func(b *testing.B) {
		for b.Loop() {
			if _, t, err := s.PadAndTicket(ctx, id, np.Ticket.Hash); err != nil || t == nil {
				b.Fatal(err)
			}
		}
	})
}
