package lockerclient

import (
	"bytes"
	"testing"
)

func TestHasControlExhaustive(t *testing.T) {
	for n := 0; n < 40; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range []byte{0, 0x1f, 0x20, 0x7f, 0x80, 0xff, 0x9f} {
				p := bytes.Repeat([]byte{'a'}, n)
				p[pos] = c
				if got := hasControl(p); got != (c < 0x20) {
					t.Fatalf("n=%d pos=%d c=%x: %v", n, pos, c, got)
				}
			}
		}
	}
}

func BenchmarkHasControl(b *testing.B) {
	p := bytes.Repeat([]byte("abcdefgh é€ xyz"), 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		hasControl(p)
	}
}
