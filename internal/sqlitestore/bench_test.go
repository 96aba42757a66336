package sqlitestore

import (
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
