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
