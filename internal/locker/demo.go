package locker

import (
	"context"
	"errors"
	"fmt"
)

// demoBlocks are the demo pad's three blocks, byte-identical to the Python peer's seed so the
// demo head is the same on every Padlock daemon:
// 5f77fb573937fa35d50e36ad944a8bd500343bf808d2035b7c4c29a3de5b512b.
var demoBlocks = []struct {
	contentType string
	payload     string
}{
	{"application/json", `{"schema": "locker.handoff.v1", "task_id": "demo-pad-v1", "from_agent": "lockerd-demo", "to_agent": "you", "constraints": ["read-only demo", "illustrates hash-chain integrity"], "artifacts": [{"name": "demo-payload.txt", "size": 45}], "budget_usd": 0.0}`},
	{"text/plain", "Permanent read-only demo handoff pad.\n"},
	{"text/plain", "Read it freely: GET /v1/pads/demo-pad-v1/blocks\n"},
}

// DemoHead is the demo pad's head hash.
const DemoHead = "5f77fb573937fa35d50e36ad944a8bd500343bf808d2035b7c4c29a3de5b512b"

// SeedDemo creates the sealed demo pad if it does not exist. It is safe to run concurrently
// from several processes: the store's conditions let exactly one seed win.
func (s *Service) SeedDemo(ctx context.Context) error {
	_, err := s.store.Pad(ctx, DemoPadID)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("seed demo pad: %w", err)
	}
	now := s.now().Unix()
	const ttl = 100 * 365 * 24 * 3600
	p := Pad{ID: DemoPadID, WriteKeyHash: HashSecret(DemoWriteKey), State: StateOpen, CreatedAt: now,
		ExpiresAt: now + ttl, MaxBlocks: DefaultMaxBlocks, MaxBytes: MaxPadBytes, HeadHash: GenesisHash}
	if err := s.store.CreatePad(ctx, NewPad{Pad: p}); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil // another process seeded it first
		}
		return fmt.Errorf("seed demo pad: %w", err)
	}
	prev := GenesisHash
	for i, d := range demoBlocks {
		b := Block{PadID: DemoPadID, Seq: i, PrevHash: prev, CurrHash: NextHash(prev, []byte(d.payload)),
			ContentType: d.contentType, Payload: []byte(d.payload), CreatedAt: now}
		if err := s.store.AppendBlock(ctx, b); err != nil {
			return fmt.Errorf("seed demo pad block %d: %w", i, err)
		}
		prev = b.CurrHash
	}
	if err := s.store.Seal(ctx, DemoPadID, len(demoBlocks), prev, now); err != nil {
		return fmt.Errorf("seal demo pad: %w", err)
	}
	return nil
}
