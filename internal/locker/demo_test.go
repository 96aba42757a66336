package locker_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

func newService(t *testing.T) (*locker.Service, *sqlitestore.Store) {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "l.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := locker.New(locker.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st
}

func TestSeedDemoFinishesAHalfDoneSeed(t *testing.T) {
	svc, st := newService(t)
	// A start that crashed after creating the pad and appending one block.
	if err := st.CreatePad(t.Context(), locker.NewPad{Pad: locker.Pad{ID: locker.DemoPadID, WriteKeyHash: locker.HashSecret(locker.DemoWriteKey),
		State: locker.StateOpen, CreatedAt: 1, ExpiresAt: 1 << 40, MaxBlocks: 32, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash}}); err != nil {
		t.Fatal(err)
	}
	env := `{"schema": "locker.handoff.v1", "task_id": "demo-pad-v1", "from_agent": "lockerd-demo", "to_agent": "you", "constraints": ["read-only demo", "illustrates hash-chain integrity"], "artifacts": [{"name": "demo-payload.txt", "size": 45}], "budget_usd": 0.0}`
	if err := st.AppendBlock(t.Context(), locker.Block{PadID: locker.DemoPadID, Seq: 0, PrevHash: locker.GenesisHash,
		CurrHash: locker.NextHash(locker.GenesisHash, []byte(env)), ContentType: "application/json", Payload: []byte(env), CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := svc.SeedDemo(t.Context()); err != nil {
		t.Fatalf("SeedDemo: %v", err)
	}
	p, err := st.Pad(t.Context(), locker.DemoPadID)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != locker.StateSealed || p.BlockCount != 3 || p.HeadHash != locker.DemoHead {
		t.Errorf("demo pad after resumed seed = %+v", p)
	}
}

func TestSeedDemoConcurrentAndIdempotent(t *testing.T) {
	svc, st := newService(t)
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.SeedDemo(t.Context()); err != nil {
				t.Errorf("SeedDemo: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := svc.SeedDemo(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Pad(t.Context(), locker.DemoPadID)
	if p.State != locker.StateSealed || p.HeadHash != locker.DemoHead {
		t.Errorf("demo pad = %+v", p)
	}
}

func TestSeedDemoRefusesAForeignPad(t *testing.T) {
	svc, st := newService(t)
	if err := st.CreatePad(t.Context(), locker.NewPad{Pad: locker.Pad{ID: locker.DemoPadID, WriteKeyHash: "x", State: locker.StateOpen,
		CreatedAt: 1, ExpiresAt: 1 << 40, MaxBlocks: 32, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendBlock(t.Context(), locker.Block{PadID: locker.DemoPadID, Seq: 0, PrevHash: locker.GenesisHash,
		CurrHash: locker.NextHash(locker.GenesisHash, []byte("other")), Payload: []byte("other"), CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := svc.SeedDemo(t.Context()); err == nil || !strings.Contains(err.Error(), "does not hold the demo's blocks") {
		t.Errorf("SeedDemo on a foreign demo pad = %v", err)
	}
}

// TestDemoSeededOnFirstRead: a service whose store was not seeded at start (the pads
// Lambda's) seeds the demo pad when a request reads it and finds it missing, so the demo
// answers at once and byte-identical; other unknown pads stay unknown.
func TestDemoSeededOnFirstRead(t *testing.T) {
	svc, st := newService(t)
	m, err := svc.Manifest(t.Context(), locker.DemoPadID)
	if err != nil {
		t.Fatalf("manifest of the unseeded demo pad: %v", err)
	}
	if m.State != locker.StateSealed || m.BlockCount != 3 || m.HeadHash != locker.DemoHead {
		t.Errorf("demo manifest = %+v, want sealed, 3 blocks, head %s", m, locker.DemoHead)
	}
	sl, err := svc.ReadBlocks(t.Context(), locker.DemoPadID, "", 0, 0, false)
	if err != nil || len(sl.Blocks) != 3 || sl.Blocks[2].CurrHash != locker.DemoHead {
		t.Fatalf("demo blocks = %+v, %v", sl, err)
	}
	h, err := st.Health(t.Context())
	if err != nil || h.Pads != (locker.PadCounts{Total: 1, Sealed: 1}) {
		t.Errorf("after the first read: %+v, %v; want exactly the demo pad", h.Pads, err)
	}
	if _, err := svc.Manifest(t.Context(), "no-such-pad"); err == nil {
		t.Errorf("an unknown pad was found")
	}
	if h, _ := st.Health(t.Context()); h.Pads.Total != 1 {
		t.Errorf("reading an unknown pad created one: %+v", h.Pads)
	}
}
