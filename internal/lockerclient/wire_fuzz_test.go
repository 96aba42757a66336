package lockerclient

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// FuzzWire gives the client arbitrary bytes as a daemon's binary answer for a whole pad,
// arriving in pieces of fuzzed sizes. Whatever the bytes and the pieces, it does not
// panic; the daemon's own answer matches the expected head in any pieces; and a chain it
// calls a match for the expected head is one whose returned payloads chain to that head
// when hashed again from scratch, each block's UTF8 flag exactly utf8.Valid of its
// payload: the hashing and checking done piece by piece as bytes arrive agree with the
// payloads handed to the caller.
//
//	go test -run='^$' -fuzz='^FuzzWire$' -fuzztime=60s ./internal/lockerclient/
func FuzzWire(f *testing.F) {
	d := lockertest.New(f, lockertest.Options{})
	payloads := [][]byte{[]byte(lockertest.Envelope), []byte(strings.Repeat("é€😀", 50)), []byte("é invalid \xe2\x82 and \xff"), bytes.Repeat([]byte("0123456789"), 500), {0}}
	p := d.Pad(payloads, true)
	head := locker.ChainHead(payloads)
	body := wireBody(f, d, p.PadID, p.ReadTicket)
	f.Add(body, uint16(7), uint16(3))
	f.Add(body, uint16(0), uint16(0))
	f.Add(body, uint16(4095), uint16(0))
	f.Add(body[:len(body)/2], uint16(1), uint16(1))
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer []byte, a, b uint16) {
		rd := c.getReader(&chunks{r: bytes.NewReader(answer), sizes: []int{int(a) + 1, int(b) + 1}})
		ch, err := c.wholeWire(rd, p.PadID, &head)
		c.readers.Put(rd)
		if bytes.Equal(answer, body) && (err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch) {
			t.Fatalf("the daemon's own answer in pieces of %d and %d bytes: %v", int(a)+1, int(b)+1, err)
		}
		if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
			return
		}
		defer ch.Release()
		got := make([][]byte, len(ch.Blocks))
		for i, bl := range ch.Blocks {
			got[i] = bl.Payload
			if bl.UTF8 != utf8.Valid(bl.Payload) {
				t.Fatalf("block %d: UTF8 %v for a payload whose utf8.Valid is %v", i, bl.UTF8, !bl.UTF8)
			}
		}
		if again := locker.ChainHead(got); again != head {
			t.Fatalf("a match for the expected head %s, but the payloads returned chain to %s", head, again)
		}
	})
}
