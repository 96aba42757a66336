package locker

import (
	"context"
	"errors"
	"fmt"
	"time"
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

// SeedDemo creates the sealed demo pad if it does not exist, and finishes a seed that an
// earlier start left half done (a crash between the create and the seal). It is safe to run
// concurrently from several processes: every step is check-and-set, so exactly one writer
// wins each block and the others re-read and carry on. A demo pad holding anything but the
// demo's own blocks is refused, never repaired.
func (s *Service) SeedDemo(ctx context.Context) error { return SeedDemo(ctx, s.store, s.now) }

// SeedDemo is Service.SeedDemo on store, for callers that seed without a service: lockerd
// at start, and the DynamoDB store when it initialises a new table on first use. now
// defaults to time.Now.
func SeedDemo(ctx context.Context, store Store, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	var heads []string // heads[i] = the demo head after i blocks
	prev := GenesisHash
	heads = append(heads, prev)
	for _, d := range demoBlocks {
		prev = NextHash(prev, []byte(d.payload))
		heads = append(heads, prev)
	}
	for step := 0; step < 4*len(demoBlocks)+4; step++ {
		p, err := store.Pad(ctx, DemoPadID)
		if errors.Is(err, ErrNotFound) {
			now := now().Unix()
			const ttl = 100 * 365 * 24 * 3600
			np := NewPad{Pad: Pad{ID: DemoPadID, WriteKeyHash: HashSecret(DemoWriteKey), State: StateOpen, CreatedAt: now,
				ExpiresAt: now + ttl, MaxBlocks: DefaultMaxBlocks, MaxBytes: MaxPadBytes, HeadHash: GenesisHash}}
			if err := store.CreatePad(ctx, np); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("seed demo pad: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("seed demo pad: %w", err)
		}
		n := p.BlockCount
		if n > len(demoBlocks) || p.HeadHash != heads[n] {
			return fmt.Errorf("seed demo pad: %s exists but does not hold the demo's blocks (%d blocks, head %s); refusing to touch it", DemoPadID, n, p.HeadHash)
		}
		switch {
		case p.State == StateSealed:
			return nil
		case p.State != StateOpen:
			return fmt.Errorf("seed demo pad: %s is %s", DemoPadID, p.State)
		case n < len(demoBlocks):
			d := demoBlocks[n]
			b := Block{PadID: DemoPadID, Seq: n, PrevHash: heads[n], CurrHash: heads[n+1], ContentType: d.contentType,
				Payload: []byte(d.payload), CreatedAt: now().Unix()}
			if err := store.AppendBlock(ctx, b); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("seed demo pad block %d: %w", n, err)
			}
		default:
			if err := store.Seal(ctx, DemoPadID, n, p.HeadHash, now().Unix()); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("seal demo pad: %w", err)
			}
		}
	}
	return fmt.Errorf("seed demo pad: gave up after concurrent seeding did not settle")
}
