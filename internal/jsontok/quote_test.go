package jsontok

import (
	"encoding/binary"
	"math/bits"
	"testing"
)

// TestNeedsAttention checks the eight-byte test against safeASCII for every byte value in
// every position, among neighbours that are safe or not.
func TestNeedsAttention(t *testing.T) {
	for _, fill := range []byte{'a', ' ', '~', 0x7f, '!', '#', '[', ']'} {
		for pos := range 8 {
			for c := range 256 {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				want := !safeASCII[c]
				if got := needsAttention(binary.LittleEndian.Uint64(b[:])); got != want {
					t.Fatalf("needsAttention(% x) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestAttentionFirstByte: the lowest set bit of attention names the first byte that is
// not safeASCII, whatever follows it (borrows only run upward).
func TestAttentionFirstByte(t *testing.T) {
	for _, after := range []byte{'a', 0, '"', 0x1f, 0x80, 0xff, '\\', 0x20} {
		for pos := range 8 {
			for c := range 256 {
				var b [8]byte
				for i := range b {
					b[i] = 'x'
					if i > pos {
						b[i] = after
					}
				}
				b[pos] = byte(c)
				want := 8
				for i, x := range b {
					if !safeASCII[x] {
						want = i
						break
					}
				}
				got := 8
				if m := attention(binary.LittleEndian.Uint64(b[:])); m != 0 {
					got = bits.TrailingZeros64(m) >> 3
				}
				if got != want {
					t.Fatalf("attention(% x): first byte %d, want %d", b, got, want)
				}
			}
		}
	}
}
