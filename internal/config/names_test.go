package config

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// names draws n strings for comparing a hand-written check with the pattern it replaced:
// lengths from 0 to limit+2, half of them at the bounds; bytes from valid, and in half of
// the strings one byte anywhere from all of ASCII and a little beyond.
func names(r *rand.Rand, valid string, limit, n int) []string {
	out := make([]string, 0, n)
	for range n {
		l := r.IntN(limit + 3)
		if r.IntN(2) == 0 {
			l = []int{0, 1, 2, 3, 4, limit - 1, limit, limit + 1}[r.IntN(8)]
		}
		b := make([]byte, l)
		for i := range b {
			b[i] = valid[r.IntN(len(valid))]
		}
		if l > 0 && r.IntN(2) == 0 {
			b[r.IntN(l)] = byte(r.IntN(160))
		}
		out = append(out, string(b))
	}
	return out
}

// TestNamesMatchTheirPatterns: each hand-written name check accepts exactly what the
// regular expression it replaced accepted.
func TestNamesMatchTheirPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		pattern string
		check   func(string) bool
		valid   string
		limit   int
		extra   []string
	}{
		{"table", `^[a-zA-Z0-9_.-]{3,255}$`, validTableName, "azAZ09_.-", 255, nil},
		{"bucket", `^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`, validBucketName, "az09.-", 63, []string{"a.b", ".ab", "ab-", "a-b"}},
		{"evm", `^0x[0-9a-fA-F]{40}$`, validEVMAddress, "09afAF", 42, []string{"0x" + strings.Repeat("aF", 20), "0X" + strings.Repeat("a", 40)}},
	} {
		re := regexp.MustCompile(tc.pattern)
		seen := map[bool]int{}
		inputs := append(names(r, tc.valid, tc.limit, 20000), tc.extra...)
		if tc.name == "evm" { // the prefix is fixed: draw the 40 digits, then damage one byte
			for i, s := range names(r, tc.valid, 40, 20000) {
				if i%2 == 0 {
					s = "0x" + s
				}
				inputs = append(inputs, s)
			}
		}
		for _, s := range inputs {
			got, want := tc.check(s), re.MatchString(s)
			if got != want {
				t.Fatalf("%s %q: %v, the pattern says %v", tc.name, s, got, want)
			}
			seen[want]++
		}
		if seen[true] < 300 || seen[false] < 300 {
			t.Fatalf("%s: %d accepted and %d refused inputs; the draw does not exercise both", tc.name, seen[true], seen[false])
		}
	}
}
