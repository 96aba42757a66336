package textguard

import (
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

//go:generate go run ./internal/gen -data data -out tables.go

type confusable struct {
	from rune
	to   string
}

// prototype returns the confusables.txt prototype of r, if r has one.
func prototype(r rune) (string, bool) {
	i := sort.Search(len(confusables), func(i int) bool { return confusables[i].from >= r })
	if i < len(confusables) && confusables[i].from == r {
		return confusables[i].to, true
	}
	return "", false
}

// Skeleton returns the UTS #39 skeleton of s (§4): s in NFD, without default-ignorable
// code points, with each character replaced by its prototype from confusables.txt, in NFD
// again. Two strings that look alike have the same skeleton; a skeleton is for comparison
// only and is not meant to be displayed. Each run of invalid UTF-8 becomes one U+FFFD.
func Skeleton(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(strings.ToValidUTF8(s, "\uFFFD")) {
		if defaultIgnorable(r) {
			continue
		}
		if p, ok := prototype(r); ok {
			b.WriteString(p)
		} else {
			b.WriteRune(r)
		}
	}
	return norm.NFD.String(b.String())
}

// Confusable reports whether a and b are different strings with the same skeleton, such
// as "read_file" and "read_fіle" (Cyrillic і) or "config" and "cοnfig" (Greek ο).
func Confusable(a, b string) bool {
	return a != b && Skeleton(a) == Skeleton(b)
}

// defaultIgnorable reports the derived property Default_Ignorable_Code_Point
// (DerivedCoreProperties.txt): Other_Default_Ignorable_Code_Point, Cf and
// Variation_Selector, less White_Space, the interlinear annotation characters
// U+FFF9..U+FFFB, the Egyptian hieroglyph format controls U+13430..U+1343F and the
// prepended concatenation marks.
func defaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	switch {
	case unicode.Is(unicode.White_Space, r),
		r >= 0xFFF9 && r <= 0xFFFB,
		r >= 0x13430 && r <= 0x1343F,
		unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return true
}
