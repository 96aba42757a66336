package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// Run runs the conformance suite. newStore must return a new, empty store for each call;
// the suite does not close it (register cleanup in newStore).
func Run(t *testing.T, newStore func(t *testing.T) locker.Store) {
	t.Run("CreateAndRead", func(t *testing.T) { testCreateAndRead(t, newStore(t)) })
	t.Run("CreateConflicts", func(t *testing.T) { testCreateConflicts(t, newStore(t)) })
	t.Run("AppendCheckAndSet", func(t *testing.T) { testAppendCheckAndSet(t, newStore(t)) })
	t.Run("AppendQuotas", func(t *testing.T) { testAppendQuotas(t, newStore(t)) })
	t.Run("AppendRace", func(t *testing.T) { testAppendRace(t, newStore(t)) })
	t.Run("Seal", func(t *testing.T) { testSeal(t, newStore(t)) })
	t.Run("Expire", func(t *testing.T) { testExpire(t, newStore(t)) })
	t.Run("Tickets", func(t *testing.T) { testTickets(t, newStore(t)) })
	t.Run("PadAndTicket", func(t *testing.T) { testPadAndTicket(t, newStore(t)) })
	t.Run("Receipts", func(t *testing.T) { testReceipts(t, newStore(t)) })
	t.Run("Health", func(t *testing.T) { testHealth(t, newStore(t)) })
}

var padSeq int

func newPad(maxBlocks int) locker.NewPad {
	padSeq++
	id := fmt.Sprintf("%032x", padSeq)
	return locker.NewPad{
		Pad: locker.Pad{ID: id, WriteKeyHash: locker.HashSecret("wk-" + id), State: locker.StateOpen,
			CreatedAt: 1000, ExpiresAt: 1000 + 3600, MaxBlocks: maxBlocks, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash},
		Ticket: locker.Ticket{Hash: locker.HashSecret("tk-" + id), PadID: id, Type: locker.TicketReadOnce, MaxReads: 1, CreatedAt: 1000},
	}
}

func mustCreate(t *testing.T, s locker.Store, np locker.NewPad) {
	t.Helper()
	if err := s.CreatePad(t.Context(), np); err != nil {
		t.Fatalf("CreatePad: %v", err)
	}
}

func block(p locker.Pad, seq int, prev string, payload []byte) locker.Block {
	return locker.Block{PadID: p.ID, Seq: seq, PrevHash: prev, CurrHash: locker.NextHash(prev, payload),
		ContentType: "text/plain", Payload: payload, CreatedAt: 1001}
}

// appendN appends n blocks and returns the head.
func appendN(t *testing.T, s locker.Store, p locker.Pad, n int) string {
	t.Helper()
	head := locker.GenesisHash
	for i := 0; i < n; i++ {
		b := block(p, i, head, []byte(fmt.Sprintf("payload %d", i)))
		if err := s.AppendBlock(t.Context(), b); err != nil {
			t.Fatalf("AppendBlock %d: %v", i, err)
		}
		head = b.CurrHash
	}
	return head
}

func testCreateAndRead(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	got, err := s.Pad(t.Context(), np.Pad.ID)
	if err != nil {
		t.Fatalf("Pad: %v", err)
	}
	if got != np.Pad {
		t.Errorf("Pad = %+v, want %+v", got, np.Pad)
	}
	tk, err := s.Ticket(t.Context(), np.Ticket.Hash)
	if err != nil {
		t.Fatalf("Ticket: %v", err)
	}
	if tk != np.Ticket {
		t.Errorf("Ticket = %+v, want %+v", tk, np.Ticket)
	}
	if _, err := s.Pad(t.Context(), "nope"); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Pad(unknown) err = %v, want ErrNotFound", err)
	}
	if _, err := s.Ticket(t.Context(), locker.HashSecret("nope")); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Ticket(unknown) err = %v, want ErrNotFound", err)
	}
	blocks, err := s.Blocks(t.Context(), np.Pad.ID, 0, 100)
	if err != nil || len(blocks) != 0 {
		t.Errorf("Blocks of empty pad = %v, %v; want none", blocks, err)
	}
}

func testCreateConflicts(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	again := np
	again.Ticket.Hash = locker.HashSecret("other")
	if err := s.CreatePad(t.Context(), again); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("CreatePad(existing id) err = %v, want ErrConflict", err)
	}
	// The refused create wrote nothing: its ticket does not exist.
	if _, err := s.Ticket(t.Context(), again.Ticket.Hash); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("ticket of refused create: err = %v, want ErrNotFound", err)
	}
	dupTicket := newPad(8)
	dupTicket.Ticket.Hash = np.Ticket.Hash
	if err := s.CreatePad(t.Context(), dupTicket); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("CreatePad(existing ticket) err = %v, want ErrConflict", err)
	}
	if _, err := s.Pad(t.Context(), dupTicket.Pad.ID); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("pad of refused create exists: err = %v (create must be atomic)", err)
	}
	noTicket := newPad(8)
	noTicket.Ticket = locker.Ticket{}
	mustCreate(t, s, noTicket)
}

func testAppendCheckAndSet(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	p := np.Pad
	b0 := block(p, 0, locker.GenesisHash, []byte("zero"))
	if err := s.AppendBlock(t.Context(), b0); err != nil {
		t.Fatalf("AppendBlock 0: %v", err)
	}
	// Same seq again (a writer that read the old head) loses.
	if err := s.AppendBlock(t.Context(), block(p, 0, locker.GenesisHash, []byte("zero"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("AppendBlock stale seq err = %v, want ErrConflict", err)
	}
	// Right seq, wrong prev: loses.
	if err := s.AppendBlock(t.Context(), block(p, 1, locker.GenesisHash, []byte("one"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("AppendBlock wrong prev err = %v, want ErrConflict", err)
	}
	// Skipping a seq: loses.
	if err := s.AppendBlock(t.Context(), block(p, 2, b0.CurrHash, []byte("two"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("AppendBlock gap err = %v, want ErrConflict", err)
	}
	b1 := block(p, 1, b0.CurrHash, []byte("one"))
	if err := s.AppendBlock(t.Context(), b1); err != nil {
		t.Fatalf("AppendBlock 1: %v", err)
	}
	if err := s.AppendBlock(t.Context(), block(locker.Pad{ID: "missing"}, 0, locker.GenesisHash, []byte("x"))); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("AppendBlock unknown pad err = %v, want ErrNotFound", err)
	}
	got, err := s.Pad(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.BlockCount != 2 || got.HeadHash != b1.CurrHash || got.TotalBytes != 7 {
		t.Errorf("pad after 2 appends = count %d head %s bytes %d", got.BlockCount, got.HeadHash, got.TotalBytes)
	}
	blocks, err := s.Blocks(t.Context(), p.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || !equalBlock(blocks[0], b0) || !equalBlock(blocks[1], b1) {
		t.Errorf("Blocks = %+v", blocks)
	}
	if problems := locker.Audit(got, blocks); problems != nil {
		t.Errorf("Audit: %v", problems)
	}
	one, err := s.Blocks(t.Context(), p.ID, 1, 1)
	if err != nil || len(one) != 1 || one[0].Seq != 1 {
		t.Errorf("Blocks(1,1) = %+v, %v", one, err)
	}
	// Expired write window: the store refuses even if the caller did not notice.
	late := block(p, 2, b1.CurrHash, []byte("late"))
	late.CreatedAt = p.ExpiresAt
	if err := s.AppendBlock(t.Context(), late); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("AppendBlock at expires_at err = %v, want ErrConflict", err)
	}
}

func equalBlock(a, b locker.Block) bool {
	return a.PadID == b.PadID && a.Seq == b.Seq && a.PrevHash == b.PrevHash && a.CurrHash == b.CurrHash &&
		a.ContentType == b.ContentType && bytes.Equal(a.Payload, b.Payload) && a.CreatedAt == b.CreatedAt
}

func testAppendQuotas(t *testing.T, s locker.Store) {
	np := newPad(2)
	mustCreate(t, s, np)
	head := appendN(t, s, np.Pad, 2)
	if err := s.AppendBlock(t.Context(), block(np.Pad, 2, head, []byte("x"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("append past max_blocks err = %v, want ErrConflict", err)
	}
	big := newPad(8)
	mustCreate(t, s, big)
	head = locker.GenesisHash
	chunk := bytes.Repeat([]byte{'a'}, locker.MaxBlockBytes)
	for i := 0; i < 4; i++ {
		b := block(big.Pad, i, head, chunk)
		if err := s.AppendBlock(t.Context(), b); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		head = b.CurrHash
	}
	if err := s.AppendBlock(t.Context(), block(big.Pad, 4, head, []byte("x"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("append past max_bytes err = %v, want ErrConflict", err)
	}
}

// testAppendRace has many writers race for the same seq: exactly one wins each round, and
// the stored chain is exactly the acknowledged blocks.
func testAppendRace(t *testing.T, s locker.Store) {
	np := newPad(64)
	mustCreate(t, s, np)
	const writers, rounds = 8, 5
	head := locker.GenesisHash
	var acked []locker.Block
	for r := 0; r < rounds; r++ {
		var mu sync.Mutex
		var wins []locker.Block
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := block(np.Pad, r, head, []byte(fmt.Sprintf("round %d writer %d", r, w)))
				err := s.AppendBlock(t.Context(), b)
				switch {
				case err == nil:
					mu.Lock()
					wins = append(wins, b)
					mu.Unlock()
				case errors.Is(err, locker.ErrConflict), errors.Is(err, locker.ErrUnavailable):
				default:
					t.Errorf("AppendBlock: %v", err)
				}
			}()
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("round %d: %d writers won, want exactly 1", r, len(wins))
		}
		acked = append(acked, wins[0])
		head = wins[0].CurrHash
	}
	blocks, err := s.Blocks(t.Context(), np.Pad.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != len(acked) {
		t.Fatalf("stored %d blocks, acknowledged %d", len(blocks), len(acked))
	}
	for i := range acked {
		if !equalBlock(blocks[i], acked[i]) {
			t.Errorf("block %d = %+v, acknowledged %+v", i, blocks[i], acked[i])
		}
	}
}

func testSeal(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	head := appendN(t, s, np.Pad, 3)
	if err := s.Seal(t.Context(), np.Pad.ID, 2, head, 2000); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("Seal with stale count err = %v, want ErrConflict", err)
	}
	if err := s.Seal(t.Context(), np.Pad.ID, 3, locker.GenesisHash, 2000); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("Seal with stale head err = %v, want ErrConflict", err)
	}
	if err := s.Seal(t.Context(), np.Pad.ID, 3, head, 2000); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	p, err := s.Pad(t.Context(), np.Pad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != locker.StateSealed || p.SealedAt != 2000 || p.HeadHash != head {
		t.Errorf("sealed pad = %+v", p)
	}
	if err := s.AppendBlock(t.Context(), block(np.Pad, 3, head, []byte("after"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("append after seal err = %v, want ErrConflict", err)
	}
	if err := s.Seal(t.Context(), np.Pad.ID, 3, head, 3000); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("second Seal err = %v, want ErrConflict", err)
	}
	if err := s.Seal(t.Context(), "missing", 0, locker.GenesisHash, 1); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Seal unknown err = %v, want ErrNotFound", err)
	}
	// Sealing an empty pad is allowed.
	empty := newPad(8)
	mustCreate(t, s, empty)
	if err := s.Seal(t.Context(), empty.Pad.ID, 0, locker.GenesisHash, 2000); err != nil {
		t.Errorf("Seal empty: %v", err)
	}
}

func testExpire(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	if err := s.Expire(t.Context(), np.Pad.ID); err != nil {
		t.Fatalf("Expire: %v", err)
	}
	if err := s.Expire(t.Context(), np.Pad.ID); err != nil {
		t.Errorf("Expire again: %v", err)
	}
	p, _ := s.Pad(t.Context(), np.Pad.ID)
	if p.State != locker.StateExpired {
		t.Errorf("state = %s, want expired", p.State)
	}
	if err := s.AppendBlock(t.Context(), block(np.Pad, 0, locker.GenesisHash, []byte("x"))); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("append to expired err = %v, want ErrConflict", err)
	}
	sealed := newPad(8)
	mustCreate(t, s, sealed)
	if err := s.Seal(t.Context(), sealed.Pad.ID, 0, locker.GenesisHash, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Expire(t.Context(), sealed.Pad.ID); err != nil {
		t.Errorf("Expire sealed: %v", err)
	}
	if p, _ := s.Pad(t.Context(), sealed.Pad.ID); p.State != locker.StateSealed {
		t.Errorf("sealed pad became %s; a sealed pad is never expired", p.State)
	}
	if err := s.Expire(t.Context(), "missing"); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Expire unknown err = %v, want ErrNotFound", err)
	}
}

// testPadAndTicket: a store with the PadTicketReader capability answers exactly what Pad
// and Ticket answer, for every combination of a known or unknown pad and ticket, a ticket
// of another pad, and after the ticket's lease and the pad's state have moved.
func testPadAndTicket(t *testing.T, s locker.Store) {
	both, ok := s.(locker.PadTicketReader)
	if !ok {
		t.Log("the store reads a pad and a ticket separately (no PadTicketReader): nothing to compare")
		return
	}
	ctx := t.Context()
	np, other := newPad(8), newPad(8)
	mustCreate(t, s, np)
	mustCreate(t, s, other)
	check := func(what, padID, hash string) {
		t.Helper()
		wantPad, perr := s.Pad(ctx, padID)
		wantTicket, terr := s.Ticket(ctx, hash)
		gotPad, gotTicket, err := both.PadAndTicket(ctx, padID, hash)
		switch {
		case errors.Is(perr, locker.ErrNotFound):
			if !errors.Is(err, locker.ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound (no such pad)", what, err)
			}
		case err != nil || perr != nil:
			t.Fatalf("%s: %v / %v", what, err, perr)
		case gotPad != wantPad:
			t.Errorf("%s: pad %+v, want %+v", what, gotPad, wantPad)
		case errors.Is(terr, locker.ErrNotFound):
			if gotTicket != nil {
				t.Errorf("%s: ticket %+v, want none", what, *gotTicket)
			}
		case terr != nil:
			t.Fatal(terr)
		case gotTicket == nil || *gotTicket != wantTicket:
			t.Errorf("%s: ticket %v, want %+v", what, gotTicket, wantTicket)
		}
	}
	check("pad and its ticket", np.Pad.ID, np.Ticket.Hash)
	check("another pad's ticket", np.Pad.ID, other.Ticket.Hash)
	check("unknown ticket", np.Pad.ID, locker.HashSecret("nope"))
	check("unknown pad", "p-unknown", np.Ticket.Hash)
	check("unknown pad and ticket", "p-unknown", locker.HashSecret("nope"))
	if _, err := s.RecordRead(ctx, np.Ticket.Hash, 2000); err != nil {
		t.Fatal(err)
	}
	b := locker.Block{PadID: np.Pad.ID, Seq: 0, PrevHash: np.Pad.HeadHash, CurrHash: "c0", ContentType: "text/plain", Payload: []byte("x"), CreatedAt: np.Pad.CreatedAt + 1}
	if err := s.AppendBlock(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Seal(ctx, np.Pad.ID, 1, "c0", np.Pad.CreatedAt+2); err != nil {
		t.Fatal(err)
	}
	check("after a read, an append and the seal", np.Pad.ID, np.Ticket.Hash)
}

func testTickets(t *testing.T, s locker.Store) {
	np := newPad(8)
	mustCreate(t, s, np)
	extra := locker.Ticket{Hash: locker.HashSecret("extra"), PadID: np.Pad.ID, Type: locker.TicketReadUnlimited, MaxReads: 1, CreatedAt: 1500}
	if err := s.PutTicket(t.Context(), extra); err != nil {
		t.Fatalf("PutTicket: %v", err)
	}
	if err := s.PutTicket(t.Context(), extra); !errors.Is(err, locker.ErrConflict) {
		t.Errorf("PutTicket again err = %v, want ErrConflict", err)
	}
	got, err := s.Ticket(t.Context(), extra.Hash)
	if err != nil || got != extra {
		t.Errorf("Ticket = %+v, %v; want %+v", got, err, extra)
	}
	r1, err := s.RecordRead(t.Context(), np.Ticket.Hash, 2000)
	if err != nil {
		t.Fatalf("RecordRead: %v", err)
	}
	if r1.LeaseStartedAt != 2000 || r1.RedeemedCount != 1 {
		t.Errorf("after first read: %+v", r1)
	}
	r2, err := s.RecordRead(t.Context(), np.Ticket.Hash, 2500)
	if err != nil {
		t.Fatal(err)
	}
	if r2.LeaseStartedAt != 2000 || r2.RedeemedCount != 2 {
		t.Errorf("after second read: %+v (the lease start must not move)", r2)
	}
	if _, err := s.RecordRead(t.Context(), locker.HashSecret("nope"), 1); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("RecordRead unknown err = %v, want ErrNotFound", err)
	}
	// Concurrent first reads: the lease start is set once.
	var wg sync.WaitGroup
	tk := locker.Ticket{Hash: locker.HashSecret("race"), PadID: np.Pad.ID, Type: locker.TicketReadOnce, MaxReads: 1, CreatedAt: 1}
	if err := s.PutTicket(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.RecordRead(t.Context(), tk.Hash, int64(3000+i)); err != nil && !errors.Is(err, locker.ErrUnavailable) {
				t.Errorf("RecordRead: %v", err)
			}
		}()
	}
	wg.Wait()
	final, err := s.Ticket(t.Context(), tk.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if final.LeaseStartedAt < 3000 || final.LeaseStartedAt > 3007 || final.RedeemedCount < 1 {
		t.Errorf("after racing reads: %+v", final)
	}
}

func testReceipts(t *testing.T, s locker.Store) {
	np := newPad(8)
	np.Receipt = &locker.Receipt{TxHash: "0x" + fmt.Sprintf("%064x", 1), PadID: np.Pad.ID, AmountUnits: "2000", Payer: "0xabc", CreatedAt: 1000}
	if ok, err := s.HasReceipt(t.Context(), np.Receipt.TxHash); err != nil || ok {
		t.Fatalf("HasReceipt before = %v, %v", ok, err)
	}
	mustCreate(t, s, np)
	if ok, err := s.HasReceipt(t.Context(), np.Receipt.TxHash); err != nil || !ok {
		t.Errorf("HasReceipt after = %v, %v", ok, err)
	}
	replay := newPad(8)
	replay.Receipt = &locker.Receipt{TxHash: np.Receipt.TxHash, PadID: replay.Pad.ID, AmountUnits: "2000", Payer: "0xabc", CreatedAt: 1000}
	if err := s.CreatePad(t.Context(), replay); !errors.Is(err, locker.ErrRedeemed) {
		t.Errorf("CreatePad with redeemed receipt err = %v, want ErrRedeemed", err)
	}
	if _, err := s.Pad(t.Context(), replay.Pad.ID); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("replayed create left a pad behind: %v", err)
	}
}

func testHealth(t *testing.T, s locker.Store) {
	h, err := s.Health(t.Context())
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	base := h.Pads
	open := newPad(8)
	mustCreate(t, s, open)
	sealed := newPad(8)
	mustCreate(t, s, sealed)
	if err := s.Seal(t.Context(), sealed.Pad.ID, 0, locker.GenesisHash, 5); err != nil {
		t.Fatal(err)
	}
	expired := newPad(8)
	mustCreate(t, s, expired)
	if err := s.Expire(t.Context(), expired.Pad.ID); err != nil {
		t.Fatal(err)
	}
	h, err = s.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := locker.PadCounts{Total: base.Total + 3, Unsealed: base.Unsealed + 1, Sealed: base.Sealed + 1}
	if h.Pads != want {
		t.Errorf("Health pads = %+v, want %+v", h.Pads, want)
	}
	if !h.Writable {
		t.Errorf("Health writable = false for a writable store")
	}
}
