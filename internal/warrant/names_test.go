package warrant

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestNamesMatchTheirPatterns: each hand-written name check accepts exactly what the
// regular expression it replaced accepted, over strings drawn at and near its bounds from
// its own characters, half of them with one byte anywhere from all of ASCII and beyond.
func TestNamesMatchTheirPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name    string
		pattern string
		check   func(string) bool
		valid   string
		limit   int
	}{
		{"server", `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, validServerName, "azAZ09._-", 64},
		{"header", "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$", validHeaderName, "!#$%&'*+.^_`|~09azAZ-", 128},
		{"env", `^[A-Za-z_][A-Za-z0-9_]{0,127}$`, validEnvName, "azAZ09_", 128},
	} {
		re := regexp.MustCompile(tc.pattern)
		seen := map[bool]int{}
		for range 40000 {
			l := r.IntN(tc.limit + 3)
			if r.IntN(2) == 0 {
				l = []int{0, 1, 2, tc.limit - 1, tc.limit, tc.limit + 1}[r.IntN(6)]
			}
			b := make([]byte, l)
			for i := range b {
				b[i] = tc.valid[r.IntN(len(tc.valid))]
			}
			if l > 0 && r.IntN(2) == 0 {
				b[r.IntN(l)] = byte(r.IntN(160))
			}
			got, want := tc.check(string(b)), re.Match(b)
			if got != want {
				t.Fatalf("%s %q: %v, the pattern says %v", tc.name, b, got, want)
			}
			seen[want]++
		}
		if seen[true] < 300 || seen[false] < 300 {
			t.Fatalf("%s: %d accepted and %d refused inputs; the draw does not exercise both", tc.name, seen[true], seen[false])
		}
	}
}
