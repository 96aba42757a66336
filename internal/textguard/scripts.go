package textguard

import (
	"sort"
	"unicode/utf8"
)

// scriptSet is a set of scripts, one bit per entry of scriptNames.
type scriptSet [3]uint64

// allScripts is the script set of Common and Inherited characters.
var allScripts = scriptSet{^uint64(0), ^uint64(0), ^uint64(0)}

type scriptRange struct {
	lo, hi rune
	set    uint16
}

func (s scriptSet) and(t scriptSet) scriptSet {
	return scriptSet{s[0] & t[0], s[1] & t[1], s[2] & t[2]}
}

func (s scriptSet) empty() bool { return s[0]|s[1]|s[2] == 0 }

func (s scriptSet) with(i int) scriptSet {
	if i >= 0 {
		s[i/64] |= 1 << (i % 64)
	}
	return s
}

func (s scriptSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

// scriptIndex returns the bit of the named script, or -1.
func scriptIndex(name string) int {
	for i, n := range scriptNames {
		if n == name {
			return i
		}
	}
	return -1
}

var unknownScript = scriptSet{}.with(scriptIndex("Unknown"))

// pseudoScripts counts the entries at the end of scriptNames that are not Unicode Script
// values of assigned characters (Hanb, Jpan, Kore, Unknown).
const pseudoScripts = 4

// scriptsOf returns the augmented script set of r (UTS #39 §5.1): its Script_Extensions,
// or its Script, with Han, Hiragana, Katakana, Hangul and Bopomofo widened to the
// Japanese, Korean and Han-with-Bopomofo writing systems; all scripts for Common and
// Inherited characters.
func scriptsOf(r rune) scriptSet {
	i := sort.Search(len(scriptRanges), func(i int) bool { return scriptRanges[i].hi >= r })
	if i < len(scriptRanges) && scriptRanges[i].lo <= r {
		return scriptSets[scriptRanges[i].set]
	}
	return unknownScript
}

// MixedScript reports whether the resolved script set of s is empty (UTS #39 §5.1): no
// single writing system covers every character of s. Common and Inherited characters
// (digits, punctuation, emoji, combining marks) fit every script, Script_Extensions are
// honoured, and Japanese (Han + Hiragana + Katakana) and Korean (Han + Hangul) count as
// single writing systems. So "read_fіle" with a Cyrillic і is mixed; "東京の天気" and
// "Größe" are not.
//
// The test is meant for identifiers such as tool names. A prose description that quotes
// an English word in Arabic text is legitimately mixed.
func MixedScript(s string) bool {
	set := allScripts
	for _, r := range s {
		if set = set.and(scriptsOf(r)); set.empty() {
			return true
		}
	}
	return false
}

// Scripts returns, sorted, the names of the scripts (as in the Go unicode package:
// "Latin", "Cyrillic") of the characters of s that belong to exactly one script, for
// messages such as "mixes Cyrillic and Latin". Characters of Common or Inherited script
// or with several Script_Extensions are left out; unassigned ones count as "Unknown".
func Scripts(s string) []string {
	seen := map[int]bool{}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		set := scriptsOf(r)
		if set == allScripts {
			continue
		}
		only := -1
		for b := 0; b < len(scriptNames)-pseudoScripts; b++ {
			if set.has(b) {
				if only >= 0 {
					only = -2
					break
				}
				only = b
			}
		}
		switch {
		case only >= 0:
			seen[only] = true
		case set == unknownScript:
			seen[len(scriptNames)-1] = true
		}
	}
	if len(seen) == 0 {
		return nil
	}
	out := make([]string, 0, len(seen))
	for b := range seen {
		out = append(out, scriptNames[b])
	}
	sort.Strings(out)
	return out
}
