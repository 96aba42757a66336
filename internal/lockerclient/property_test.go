package lockerclient

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// randomPayload is binary, ASCII text, or multi-byte UTF-8 text with JSON-escaped characters.
func randomPayload(r *rand.Rand) []byte {
	n := 1 + r.IntN(20000)
	if r.IntN(4) == 0 {
		n = 1 + r.IntN(40)
	}
	p := make([]byte, 0, n)
	switch r.IntN(3) {
	case 0: // binary
		for len(p) < n {
			p = append(p, byte(r.UintN(256)))
		}
	case 1: // text with escapes
		const alpha = "abc xyz\n\t\"\\/<>&\x01\x7f"
		for len(p) < n {
			p = append(p, alpha[r.IntN(len(alpha))])
		}
	default: // multi-byte UTF-8, incl. U+2028 and astral characters
		runes := []rune{'é', '€', '\u2028', '😀', 'a', '\n', '\uFFFD'}
		for len(p) < n {
			p = utf8.AppendRune(p, runes[r.IntN(len(runes))])
		}
	}
	return p
}

// mutation changes exactly one byte of what the daemon serves.
type mutation struct {
	block int
	what  string // payload, prev_hash, curr_hash, seq, manifest_head
	pos   int
	delta byte
}

func (m mutation) String() string { return fmt.Sprintf("%s of block %d at %d", m.what, m.block, m.pos) }

func hexFlip(s string, pos int, delta byte) string {
	const hexd = "0123456789abcdef"
	b := []byte(s)
	i := strings.IndexByte(hexd, b[pos])
	b[pos] = hexd[(i+1+int(delta)%15)%16]
	return string(b)
}

func (m mutation) rewrite(t *testing.T) lockertest.Rewrite {
	return func(r *http.Request, resp *lockertest.Response) {
		if resp.Status != 200 {
			return
		}
		if m.what == "manifest_head" {
			if strings.HasSuffix(r.URL.Path, "/manifest") {
				lockertest.EditJSON(t, resp, func(v *map[string]any) {
					(*v)["head_hash"] = hexFlip((*v)["head_hash"].(string), m.pos%64, m.delta)
				})
			}
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/blocks") {
			return
		}
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		to, _ := strconv.Atoi(r.URL.Query().Get("to"))
		if m.block < from || m.block > to {
			return
		}
		lockertest.EditJSON(t, resp, func(p *lockertest.Page) {
			b := &p.Blocks[m.block-from]
			switch m.what {
			case "payload":
				payload := decodeStd(b.PayloadB64)
				payload[m.pos%len(payload)] ^= m.delta
				lockertest.SetPayload(b, payload) // base64 and text stay consistent: only the chain can tell
			case "prev_hash":
				b.PrevHash = hexFlip(b.PrevHash, m.pos%64, m.delta)
			case "curr_hash":
				b.CurrHash = hexFlip(b.CurrHash, m.pos%64, m.delta)
			case "seq":
				b.Seq += 1 + int(m.delta)%3
			}
		})
	}
}

// TestPropertyReadBackAndSingleByteChanges: for random pads, read-back verifies against the
// writer's head, and any single-byte change in a payload, a hash, a seq or the manifest head
// fails closed, with or without the reference.
func TestPropertyReadBackAndSingleByteChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(20260115, 4))
	pads := 25
	if testing.Short() {
		pads = 6
	}
	for i := range pads {
		d := lockertest.New(t, lockertest.Options{})
		n := 1 + r.IntN(12)
		payloads := [][]byte{[]byte(lockertest.Envelope)}
		for len(payloads) < n {
			payloads = append(payloads, randomPayload(r))
		}
		p := d.Pad(payloads, r.IntN(2) == 0)
		head := locker.ChainHead(payloads)

		c := serve(t, d.Handler)
		ch, err := c.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{ExpectedHead: &head})
		if err != nil {
			t.Fatalf("pad %d (%d blocks): read-back: %v", i, n, err)
		}
		if ch.Integrity.Verdict != VerdictTrustedHeadMatch || len(ch.Blocks) != n {
			t.Fatalf("pad %d: verdict %s, %d blocks", i, ch.Integrity.Verdict, len(ch.Blocks))
		}
		for j, b := range ch.Blocks {
			if !bytes.Equal(b.Payload, payloads[j]) || b.UTF8 != utf8.Valid(payloads[j]) {
				t.Fatalf("pad %d block %d: payload differs", i, j)
			}
		}
		for range 6 {
			m := mutation{block: r.IntN(n), pos: r.IntN(1 << 20), delta: byte(1 + r.IntN(255))}
			m.what = []string{"payload", "prev_hash", "curr_hash", "seq", "manifest_head"}[r.IntN(5)]
			hc := serve(t, d.Hostile(m.rewrite(t)))
			for _, exp := range []*string{nil, &head} {
				_, err := hc.Read(t.Context(), p.PadID, p.ReadTicket, ReadOptions{ExpectedHead: exp})
				var ve *VerificationError
				if !errors.As(err, &ve) || ve.Integrity.Verdict != VerdictFailed {
					t.Fatalf("pad %d, %v (expected head %v): err = %v, want a verification failure", i, m, exp != nil, err)
				}
			}
		}
	}
}

func decodeStd(s string) []byte {
	b := make([]byte, decodedLen([]byte(s)))
	if decodeB64(b, []byte(s)) != nil {
		return nil
	}
	return b
}
