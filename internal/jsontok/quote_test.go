package jsontok

import (
	"encoding/binary"
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
