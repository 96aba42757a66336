package locker

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestChainMatchesDefinition(t *testing.T) {
	payloads := [][]byte{[]byte("a"), {}, {0xff, 0x00}, []byte("long payload")}
	prev := GenesisHash
	var w Walker
	if w.Head() != GenesisHash {
		t.Fatalf("zero Walker head = %s", w.Head())
	}
	for i, p := range payloads {
		sum := sha256.Sum256(append([]byte(prev), p...))
		want := hex.EncodeToString(sum[:])
		if got := NextHash(prev, p); got != want {
			t.Errorf("NextHash %d = %s, want %s", i, got, want)
		}
		if got := string(w.Next(p)); got != want {
			t.Errorf("Walker.Next %d = %s, want %s", i, got, want)
		}
		prev = want
	}
	if ChainHead(payloads) != prev || w.Head() != prev || w.Len() != len(payloads) {
		t.Errorf("ChainHead = %s, Walker = %s (%d), want %s", ChainHead(payloads), w.Head(), w.Len(), prev)
	}
}

func TestDemoHead(t *testing.T) {
	var payloads [][]byte
	for _, b := range demoBlocks {
		payloads = append(payloads, []byte(b.payload))
	}
	if len(payloads[0]) != 253 {
		t.Errorf("demo block 0 is %d bytes, want 253", len(payloads[0]))
	}
	if got := ChainHead(payloads); got != DemoHead {
		t.Errorf("demo head = %s, want %s", got, DemoHead)
	}
}

func TestAudit(t *testing.T) {
	mk := func(payloads ...string) (Pad, []Block) {
		prev := GenesisHash
		var blocks []Block
		total := 0
		for i, p := range payloads {
			b := Block{Seq: i, PrevHash: prev, CurrHash: NextHash(prev, []byte(p)), Payload: []byte(p)}
			blocks = append(blocks, b)
			prev = b.CurrHash
			total += len(p)
		}
		return Pad{HeadHash: prev, BlockCount: len(blocks), TotalBytes: total}, blocks
	}
	tests := []struct {
		name   string
		tamper func(*Pad, []Block) []Block
		want   []string
	}{
		{name: "consistent", tamper: func(*Pad, []Block) []Block { return nil }},
		{name: "payload rewritten", tamper: func(_ *Pad, b []Block) []Block { b[1].Payload = []byte("X"); return b },
			want: []string{"block 1 curr_hash does not match its payload", "stored byte count 4 != 2 bytes of payload"}},
		{name: "seq gap", tamper: func(_ *Pad, b []Block) []Block { b[1].Seq = 5; return b }, want: []string{"block at position 1 has seq 5"}},
		{name: "head wrong", tamper: func(p *Pad, b []Block) []Block { p.HeadHash = GenesisHash; return b }, want: []string{"stored head does not match the last block"}},
		{name: "tail lost", tamper: func(_ *Pad, b []Block) []Block { return b[:1] },
			want: []string{"stored head does not match the last block", "stored byte count 4 != 1 bytes of payload", "stored block count 2 != 1 blocks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, blocks := mk("a", "bcd")
			if nb := tc.tamper(&p, blocks); nb != nil {
				blocks = nb
			}
			got := Audit(p, blocks)
			if len(got) != len(tc.want) {
				t.Fatalf("Audit = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("problem %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
