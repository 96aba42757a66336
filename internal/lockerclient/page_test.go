package lockerclient

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// onePage builds a one-block page for payload p, with the block's members given by tmpl
// (%B base64, %P prev, %C curr, %T text).
func onePage(p []byte, tmpl string) string {
	r := strings.NewReplacer("%B", base64.StdEncoding.EncodeToString(p), "%P", locker.GenesisHash,
		"%C", locker.NextHash(locker.GenesisHash, p), "%T", string(p))
	return `{"pad_id":"p","from":0,"to":0,"count":1,"total_blocks":1,"blocks":[` + r.Replace(tmpl) + `]}`
}

func decodeOne(t *testing.T, page string) (*walk, *VerificationError) {
	t.Helper()
	w := &walk{padID: "p", want: 1, maxBytes: DefaultMaxPadBytes, chainValid: true}
	copy(w.prev[:], locker.GenesisHash)
	if ve := w.page([]byte(page), 0, 0); ve != nil {
		return w, ve
	}
	return w, w.blockErr
}

func TestPageDecoder(t *testing.T) {
	p := []byte("hi/there\n")
	std := `{"seq":0,"prev_hash":"%P","curr_hash":"%C","content_type":"text/html","payload_b64":"%B","payload_utf8":"hi/there\n","created_at":5}`
	tests := []struct {
		name  string
		page  string
		cause Cause // "" = verifies
		chain bool  // chain still valid
	}{
		{"contract shape", onePage(p, std), "", true},
		{"members in any order, unknown members ignored", onePage(p, `{"x":[{"y":null}],"payload_utf8":"hi\/there\u000a","payload_b64":"%B","curr_hash":"%C","prev_hash":"%P","seq":0}`), "", true},
		{"escaped hash and escaped base64 solidus", onePage([]byte{0xff, 0xff, 0xff}, `{"seq":0,"prev_hash":"\u0030`+locker.GenesisHash[1:]+`","curr_hash":"%C","payload_b64":"\/\/\/\/","payload_utf8":null}`), "", true},
		{"escaped padding", onePage([]byte("A"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"QQ=\u003d"}`), "", true},
		{"escaped newline in base64", onePage([]byte("AAA"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"QUFB\n"}`), CauseInconsistentBlocks, true},
		{"escaped key", onePage(p, `{"s\u0065q":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B"}`), "", true},
		{"payload_utf8 absent", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B"}`), "", true},
		{"seq as float", onePage(p, `{"seq":0.0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B"}`), CauseInconsistentBlocks, true},
		{"seq missing", onePage(p, `{"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B"}`), CauseInconsistentBlocks, true},
		{"duplicate member", onePage(p, `{"seq":0,"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B"}`), CauseInconsistentBlocks, true},
		{"payload not a string", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":null}`), CauseInconsistentBlocks, true},
		{"non-canonical base64", onePage([]byte("A"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"QR=="}`), CauseInconsistentBlocks, true},
		{"unpadded base64", onePage([]byte("A"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"QQ"}`), CauseInconsistentBlocks, true},
		{"text is a lone surrogate", onePage([]byte("\uFFFD"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":"\ud800"}`), CauseRepresentationMismatch, true},
		{"text with a raw control character", onePage([]byte("a\x01"), `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":"a`+"\x01"+`"}`), CauseRepresentationMismatch, true},
		{"text for binary bytes", onePage([]byte{0xc3}, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":"\u00c3"}`), CauseRepresentationMismatch, true},
		{"text is longer", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":"%Tx"}`), CauseRepresentationMismatch, true},
		{"text is a number", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":7}`), CauseRepresentationMismatch, true},
		{"created_at not an integer", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","created_at":"now"}`), CauseInconsistentBlocks, true},
		{"hash in upper case", onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"`+strings.ToUpper(locker.NextHash(locker.GenesisHash, p))+`","payload_b64":"%B"}`), "", false},
		{"trailing data", onePage(p, std) + "x", CauseInconsistentBlocks, true},
		{"two blocks for one", strings.Replace(onePage(p, std), `]}`, `,`+strings.NewReplacer("%B", "", "%P", "", "%C", "").Replace(std)+`]}`, 1), CauseIncompleteRetrieval, true},
		{"echoed range differs", strings.Replace(onePage(p, std), `"to":0`, `"to":3`, 1), CauseInconsistentBlocks, true},
		{"count differs", strings.Replace(onePage(p, std), `"count":1`, `"count":2`, 1), CauseInconsistentBlocks, true},
		{"no total_blocks", strings.Replace(onePage(p, std), `"total_blocks":1,`, ``, 1), CauseInconsistentBlocks, true},
		{"no pad_id", strings.Replace(onePage(p, std), `"pad_id":"p",`, ``, 1), CauseInconsistentBlocks, true},
		{"deep nesting in an ignored member", strings.Replace(onePage(p, std), `"count":1`, `"count":1,"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100), 1), CauseInconsistentBlocks, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ve := decodeOne(t, tc.page)
			switch {
			case tc.cause == "" && ve != nil:
				t.Fatalf("refused: %v", ve)
			case tc.cause != "" && (ve == nil || ve.Cause != tc.cause):
				t.Fatalf("got %v, want cause %s", ve, tc.cause)
			}
			if tc.cause == "" && w.chainValid != tc.chain {
				t.Errorf("chain valid = %v, want %v", w.chainValid, tc.chain)
			}
		})
	}
}

// FuzzPage: the decoder never panics, and whatever it accepts as a verified block is
// exactly what encoding a fresh page of those bytes gives back.
func FuzzPage(f *testing.F) {
	p := []byte("hi/there\n")
	f.Add([]byte(onePage(p, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":"hi\/there\n"}`)))
	f.Add([]byte(onePage([]byte{0, 1}, `{"seq":0,"prev_hash":"%P","curr_hash":"%C","payload_b64":"%B","payload_utf8":null}`)))
	f.Fuzz(func(t *testing.T, page []byte) {
		w := &walk{padID: "p", want: 1, maxBytes: 1 << 16, chainValid: true}
		copy(w.prev[:], locker.GenesisHash)
		if ve := w.page(page, 0, 0); ve != nil || w.blockErr != nil || !w.chainValid {
			return
		}
		b := w.blocks[0]
		if got := locker.NextHash(locker.GenesisHash, b.Payload); got != b.CurrHash.String() || string(w.prev[:]) != got {
			t.Fatalf("accepted a block whose hash does not recompute")
		}
	})
}
