package warrant

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// The golden digests below were computed outside Go (Python's hashlib over the expected
// canonical text written out by hand from RFC 8785 §3.2.2 and §3.2.3), so they check
// DigestTool against the RFC rather than against canon itself.
var digestGoldens = []struct {
	name      string
	raw       string // the tool object as a server might send it
	canonical string // its RFC 8785 form, transcribed from the RFC's examples
	digest    string
}{
	{
		name: "rfc8785-examples",
		raw: `{
  "name": "rfc8785",
  "description": "RFC 8785 examples",
  "inputSchema": { "type": "object" },
  "_meta": {
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  },
  "x-sorting": {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }
}`,
		canonical: `{"_meta":{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"` + "\u20ac" + `$\u000f\nA'B\"\\\\\"/"},` +
			`"description":"RFC 8785 examples","inputSchema":{"type":"object"},"name":"rfc8785",` +
			`"x-sorting":{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","` + "\u00f6" + `":"Latin Small Letter O With Diaeresis","` + "\u20ac" + `":"Euro Sign","` + "\U0001F600" + `":"Emoji: Grinning Face","` + "\ufb33" + `":"Hebrew Letter Dalet With Dagesh"}}`,
		digest: "sha256:5210480936a396f22d423281c15a8bc67a1740d27166244f97785571af17e529",
	},
	{
		name:      "spacing-escapes-and-big-numbers",
		raw:       `{ "name" : "odd",  "description":"caf\u00e9", "inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.0E2,"default":10000000000000000001}}} }`,
		canonical: `{"description":"café","inputSchema":{"properties":{"n":{"default":10000000000000000000,"maximum":100,"type":"number"}},"type":"object"},"name":"odd"}`,
		digest:    "sha256:dd59289b3eca7ab524197bff5fd346a6570e08d5b1589e8cd9c8933789b16be0",
	},
}

func TestDigestGoldens(t *testing.T) {
	for _, tc := range digestGoldens {
		t.Run(tc.name, func(t *testing.T) {
			// The expected digest, computed here from the transcribed canonical text alone.
			sum := sha256.Sum256([]byte(tc.canonical))
			if want := "sha256:" + hex.EncodeToString(sum[:]); want != tc.digest {
				t.Fatalf("the golden digest does not match the transcribed canonical text: %s", want)
			}
			d, c, err := DigestTool([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if string(c) != tc.canonical {
				t.Errorf("canonical form:\n got %s\nwant %s", c, tc.canonical)
			}
			if d != Digest(tc.digest) || !d.Valid() {
				t.Errorf("digest = %s, want %s", d, tc.digest)
			}
			if DigestOf(c) != d {
				t.Error("DigestOf(canonical) differs from DigestTool(raw)")
			}
		})
	}
}

func TestDigestToolRefuses(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		offset int64
		reason string
	}{
		{"invalid UTF-8", "{\"name\":\"x\",\"description\":\"a\xffb\"}", 28, "invalid UTF-8"},
		{"lone high surrogate", `{"name":"x","description":"a\ud800b"}`, 28, "lone high surrogate"},
		{"lone low surrogate", `{"name":"x","description":"\udc00"}`, 27, "lone low surrogate"},
		{"encoded surrogate", "{\"name\":\"x\",\"d\":\"\xed\xa0\x80\"}", 17, "invalid UTF-8"},
		{"duplicate name", `{"name":"x","name":"y"}`, 12, "duplicate"},
		{"not an object", `["x"]`, 0, "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DigestTool([]byte(tc.raw))
			var ce *canon.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *canon.Error", err)
			}
			if ce.Offset != tc.offset || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("refused at %d (%s), want offset %d and %q", ce.Offset, ce.Reason, tc.offset, tc.reason)
			}
		})
	}
}

func TestParseAndMatchDigest(t *testing.T) {
	d := Digest("sha256:" + strings.Repeat("ab", 32))
	for _, s := range []string{string(d), strings.ToUpper(d.Hex()), "SHA256:" + d.Hex()} {
		if got, err := ParseDigest(s); err != nil || got != d {
			t.Errorf("ParseDigest(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseDigest("sha256:abc"); !errors.Is(err, ErrInvalid) {
		t.Errorf("short digest: %v", err)
	}
	other := Digest("sha256:" + strings.Repeat("ac", 32))
	if got, err := MatchDigest([]Digest{d, other}, "abababab"); err != nil || got != d {
		t.Errorf("prefix: %q %v", got, err)
	}
	if _, err := MatchDigest([]Digest{d, other}, "abcd"); !errors.Is(err, ErrInvalid) {
		t.Errorf("4-digit prefix: %v", err)
	}
	if _, err := MatchDigest([]Digest{d, Digest("sha256:" + "abababab" + strings.Repeat("0", 56))}, "sha256:abababab"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := MatchDigest([]Digest{d}, "ffffffff"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no match: %v", err)
	}
}

func TestIngestErrorMessage(t *testing.T) {
	e := &IngestError{Server: "weather", Tool: "get\u200bforecast", Index: 2, Offset: 57, Reason: "invalid UTF-8"}
	want := `server "weather" tool "get\\u200bforecast" (tools[2]): refused at byte offset 57 of the tool object: invalid UTF-8`
	if e.Error() != want || !errors.Is(e, ErrInvalid) {
		t.Errorf("got  %s\nwant %s", e.Error(), want)
	}
}
