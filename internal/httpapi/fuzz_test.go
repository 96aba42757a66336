package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// FuzzAppendBlockZero appends arbitrary bytes as block 0: the daemon never panics, answers
// only 201, 400 or 413, and stores a block exactly when the envelope validator accepts it.
func FuzzAppendBlockZero(f *testing.F) {
	f.Add([]byte(envelope))
	f.Add([]byte(`{"schema":"locker.handoff.v1"}`))
	f.Add([]byte{})
	f.Add([]byte("\xff\xfe"))
	f.Add(bytes.Repeat([]byte("a"), 65537))
	hs := newHarness(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		hs.t = t
		c := hs.create(`{}`)
		r := hs.appendBlock(c, payload)
		valid := locker.EnvelopeError(payload) == ""
		switch {
		case len(payload) > locker.MaxBlockBytes:
			if r.status != 413 {
				t.Fatalf("oversized payload: %d %s", r.status, r.body)
			}
		case len(payload) == 0:
			if r.status != 400 || r.body != bodyEmpty {
				t.Fatalf("empty payload: %d %s", r.status, r.body)
			}
		case valid:
			if r.status != 201 {
				t.Fatalf("valid envelope refused: %d %s", r.status, r.body)
			}
		default:
			if r.status != 400 || !strings.Contains(r.body, "block 0 invalid envelope: ") {
				t.Fatalf("invalid envelope: %d %s", r.status, r.body)
			}
		}
		m := hs.do("GET", "/v1/pads/"+c.PadID+"/manifest", nil)
		var man struct {
			BlockCount int `json:"block_count"`
		}
		if err := json.Unmarshal([]byte(m.body), &man); err != nil {
			t.Fatal(err)
		}
		if stored := man.BlockCount == 1; stored != (r.status == 201) {
			t.Fatalf("status %d but block_count %d", r.status, man.BlockCount)
		}
	})
}

// FuzzCreateBody posts arbitrary create bodies: only 201, 413 or 422, and a 201 only for a
// JSON object whose ttl_seconds and max_blocks (when present) are in range.
func FuzzCreateBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"ttl_seconds":60}`, `{"max_blocks":4096}`, `{"ttl_seconds":0}`, `null`, ``, `[]`, `{"ttl_seconds":1e2}`, `{"ttl_seconds":"60"}`} {
		f.Add([]byte(s))
	}
	hs := newHarness(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		hs.t = t
		r := hs.do("POST", "/v1/pads", bytes.NewReader(body))
		switch r.status {
		case 201:
			var obj map[string]any
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Fatalf("201 for a body that is not a JSON object: %q", body)
			}
			for key, hi := range map[string]float64{"ttl_seconds": locker.MaxTTLSeconds, "max_blocks": locker.MaxMaxBlocks} {
				if v, ok := obj[key]; ok {
					n, isNum := v.(float64)
					if !isNum || n <= 0 || n > hi || n != float64(int64(n)) {
						t.Fatalf("201 for %s = %v", key, v)
					}
				}
			}
		case 413:
			if len(body) <= locker.MaxJSONBodyBytes {
				t.Fatalf("413 for %d bytes", len(body))
			}
		case 422:
			if r.body != bodyInvalidBody {
				t.Fatalf("422 body %s", r.body)
			}
		default:
			t.Fatalf("status %d %s", r.status, r.body)
		}
	})
}
