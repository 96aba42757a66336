package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// referenceBlocks encodes a slice the slow, obviously right way: encoding/json on blocksBody.
func referenceBlocks(t testing.TB, s locker.Slice) []byte {
	t.Helper()
	out := blocksBody{PadID: s.PadID, From: s.From, To: s.To, Count: len(s.Blocks), TotalBlocks: s.TotalBlocks, Blocks: make([]blockBody, len(s.Blocks))}
	for i, b := range s.Blocks {
		bb := blockBody{Seq: b.Seq, PrevHash: b.PrevHash, CurrHash: b.CurrHash, ContentType: b.ContentType, PayloadB64: b64(b.Payload), CreatedAt: b.CreatedAt}
		if utf8.Valid(b.Payload) {
			text := string(b.Payload)
			bb.PayloadUTF8 = &text
		}
		out.Blocks[i] = bb
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestBlocksEncoderMatchesEncodingJSON(t *testing.T) {
	tricky := []string{"", "plain", `quote " back \ slash`, "ctl \x00\x01\x08\x0c\x1f\x7f", "nl\n cr\r tab\t",
		"<html>&amp;</html>", "line\u2028para\u2029", "日本語 العربية 👍🏽", "\xff\xfe not utf8", "\xed\xa0\x80 surrogate"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		n := rng.IntN(200)
		b := make([]byte, n)
		for j := range b {
			switch rng.IntN(4) {
			case 0:
				b[j] = byte(rng.IntN(0x20))
			case 1:
				b[j] = byte(rng.IntN(256))
			default:
				b[j] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		tricky = append(tricky, string(b))
	}
	s := locker.Slice{PadID: "p\"ad", From: 0, To: len(tricky) - 1, TotalBlocks: len(tricky)}
	for i, p := range tricky {
		s.Blocks = append(s.Blocks, locker.Block{Seq: i, PrevHash: locker.GenesisHash, CurrHash: locker.NextHash(locker.GenesisHash, []byte(p)),
			ContentType: tricky[(i+3)%len(tricky)], Payload: []byte(p), CreatedAt: int64(1_800_000_000 + i)})
	}
	want := referenceBlocks(t, s)
	got := appendBlocksBody(nil, s)
	if !bytes.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("differs at byte %d:\n got ...%q\nwant ...%q", i, got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
			}
		}
		t.Fatalf("lengths differ: %d vs %d", len(got), len(want))
	}
	empty := locker.Slice{PadID: "x", From: 3, To: 3, TotalBlocks: 0, Blocks: []locker.Block{}}
	if got, want := appendBlocksBody(nil, empty), referenceBlocks(t, empty); !bytes.Equal(got, want) {
		t.Errorf("empty slice: got %s want %s", got, want)
	}
}

func FuzzBlocksEncoder(f *testing.F) {
	f.Add([]byte("hello"), "text/plain")
	f.Add([]byte("\u2028\x00\"\\"), "a\"b")
	f.Fuzz(func(t *testing.T, payload []byte, ct string) {
		s := locker.Slice{PadID: "p", TotalBlocks: 1, Blocks: []locker.Block{{Payload: payload, ContentType: ct, PrevHash: "a", CurrHash: "b"}}}
		if !utf8.ValidString(ct) {
			return // content types are stored from HTTP headers; encoding/json would replace, as we do
		}
		if got, want := appendBlocksBody(nil, s), referenceBlocks(t, s); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}
