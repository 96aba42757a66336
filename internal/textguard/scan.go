package textguard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class is the kind of suspicious text a Finding reports. The zero value is not a class.
type Class uint8

// The classes, from the byte level up. Each Finding has exactly one; the first matching
// rule in this order wins.
const (
	// ClassInvalidUTF8 is one byte that is not part of valid UTF-8.
	ClassInvalidUTF8 Class = iota + 1
	// ClassControl is a C0 control other than tab, LF and CR, DEL, a C1 control
	// (U+0080..U+009F), or the line and paragraph separators U+2028 and U+2029, which
	// terminals and JSON consumers treat as line breaks.
	ClassControl
	// ClassANSI is a terminal escape sequence: CSI (ESC [ ... final byte), OSC (ESC ] ...
	// BEL or ST), the other string sequences (DCS, SOS, PM, APC) and the short ESC forms.
	// The Finding spans the whole sequence.
	ClassANSI
	// ClassZeroWidth is U+200B ZERO WIDTH SPACE, U+200C ZWNJ, U+200D ZWJ, U+2060 WORD
	// JOINER or U+FEFF ZERO WIDTH NO-BREAK SPACE (BOM) outside a legitimate sequence.
	ClassZeroWidth
	// ClassBidi is a bidirectional control: embeddings and overrides U+202A..U+202E,
	// isolates U+2066..U+2069, marks U+200E, U+200F and U+061C.
	ClassBidi
	// ClassTag is a character of the Unicode tag block U+E0000..U+E007F outside the
	// three RGI subdivision flags. Tags U+E0020..U+E007E mirror ASCII and are read by
	// language models while rendering as nothing; DecodeTags shows the hidden text.
	ClassTag
	// ClassVariationSelector is a variation selector (U+FE00..U+FE0F, U+E0100..U+E01EF,
	// the Mongolian free variation selectors) outside a legitimate sequence.
	ClassVariationSelector
	// ClassInvisible is any other default-ignorable character that renders as nothing,
	// such as U+034F COMBINING GRAPHEME JOINER and the Hangul fillers U+115F, U+1160,
	// U+3164 and U+FFA0.
	ClassInvisible
	// ClassFormat is any other character of general category Cf (for example U+00AD
	// SOFT HYPHEN and U+180E MONGOLIAN VOWEL SEPARATOR).
	ClassFormat
	// ClassPrivateUse is a private-use character (general category Co). Low severity:
	// it shows as a box or a vendor glyph but is not invisible.
	ClassPrivateUse
	// ClassUnassigned is a noncharacter or a code point unassigned in the Unicode
	// version of the Go toolchain. Low severity: newer emoji land here.
	ClassUnassigned
	// ClassEmojiSequence is a joiner or selector that is part of a well-formed emoji
	// sequence: U+200D between two pictographs, one U+FE0E/U+FE0F after an emoji
	// character, or the tag characters of the RGI flags of England, Scotland and Wales.
	// Low severity: such a character cannot carry more than one bit and is what every
	// emoji keyboard produces.
	ClassEmojiSequence
	// ClassInScript is a joiner or format character used the way its script needs it:
	// one U+200C or U+200D between two letters or marks of a joining script (Persian
	// ZWNJ, Indic half forms), or a Mongolian variation selector or vowel separator after
	// a Mongolian character. Low severity.
	ClassInScript
	// ClassIdeographicVariant is one ideographic variation selector (U+E0100..U+E01EF)
	// after a Han ideograph, as registered variation sequences for names use. Low severity.
	ClassIdeographicVariant
)

var classNames = [...]string{
	ClassInvalidUTF8:        "invalid-utf8",
	ClassControl:            "control",
	ClassANSI:               "ansi-escape",
	ClassZeroWidth:          "zero-width",
	ClassBidi:               "bidi-control",
	ClassTag:                "tag",
	ClassVariationSelector:  "variation-selector",
	ClassInvisible:          "invisible",
	ClassFormat:             "format",
	ClassPrivateUse:         "private-use",
	ClassUnassigned:         "unassigned",
	ClassEmojiSequence:      "emoji-sequence",
	ClassInScript:           "in-script-joiner",
	ClassIdeographicVariant: "ideographic-variant",
}

// String returns the class's stable lower-case name, as used in JSON output.
func (c Class) String() string {
	if int(c) < len(classNames) && classNames[c] != "" {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Severity ranks a Class. Callers refuse to display or approve text with a High finding;
// Low findings are shown to a reader who asks but need no acceptance.
type Severity uint8

const (
	// Low marks characters that are unusual but cannot smuggle text: private use,
	// unassigned code points, and joiners and selectors inside legitimate sequences.
	Low Severity = iota + 1
	// High marks characters that hide or reorder text, or drive a terminal.
	High
)

// String returns "low" or "high".
func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case High:
		return "high"
	}
	return fmt.Sprintf("Severity(%d)", uint8(s))
}

// Severity returns the class's severity.
func (c Class) Severity() Severity {
	switch c {
	case ClassPrivateUse, ClassUnassigned, ClassEmojiSequence, ClassInScript, ClassIdeographicVariant:
		return Low
	}
	return High
}

// Finding is one suspicious character (or escape sequence, or invalid byte) in a string.
type Finding struct {
	// Offset is the byte offset of the finding in the scanned string.
	Offset int
	// Len is its length in bytes: one rune's, one invalid byte's, or a whole ANSI sequence's.
	Len int
	// Rune is the first character; utf8.RuneError for an invalid byte.
	Rune rune
	// Class says what kind of character it is.
	Class Class
	// Visible is a printable ASCII rendering: `\x1b`, `\u200b`, `<U+E0049>`, `\xff`, or for
	// an ANSI sequence `\x1b[2J`.
	Visible string
}

// Scan returns every suspicious character in s, in order of offset. It returns nil when
// there is none. Scan never fails; invalid UTF-8 is reported byte by byte.
func Scan(s string) []Finding {
	var out []Finding
	scan(s, func(f Finding) { out = append(out, f) })
	return out
}

// Suspicious reports whether s has a finding of High severity.
func Suspicious(s string) bool {
	found := false
	scan(s, func(f Finding) {
		if f.Class.Severity() == High {
			found = true
		}
	})
	return found
}

// Visible returns s with every character Scan reports replaced by its Finding.Visible
// rendering, so that printing it shows them. Tab, LF, CR and all other characters are
// kept. Scan(Visible(s)) is always empty.
//
// The rendering is not an unambiguous encoding: text that already contains a literal
// `\u200b` prints the same as the character. It is meant for people, not for round trips.
func Visible(s string) string { return Render(s, Low) }

// Render is Visible restricted to findings of severity min or above; the others are kept
// as they are. Render(s, High) keeps emoji sequences and in-script joiners intact, and no
// High finding survives in its result.
func Render(s string, min Severity) string {
	var b strings.Builder
	last := 0
	scan(s, func(f Finding) {
		if f.Class.Severity() < min {
			return
		}
		b.WriteString(s[last:f.Offset])
		b.WriteString(f.Visible)
		last = f.Offset + f.Len
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// TagRun is one run of consecutive tag characters and the ASCII they spell.
type TagRun struct {
	// Offset is the byte offset of the run's first tag character.
	Offset int
	// Len is the run's length in bytes.
	Len int
	// Text is the ASCII text of the run: each of U+E0020..U+E007E becomes the ASCII
	// character 0xE0000 lower. Other tag-block characters (U+E0001 LANGUAGE TAG,
	// U+E007F CANCEL TAG, unassigned ones) contribute nothing.
	Text string
}

// DecodeTags returns the runs of Unicode tag characters (U+E0000..U+E007F) in s with the
// ASCII text each one smuggles, in order. It returns nil when s has no tag character.
func DecodeTags(s string) []TagRun {
	var out []TagRun
	var b strings.Builder
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, TagRun{Offset: start, Len: end - start, Text: b.String()})
			b.Reset()
			start = -1
		}
	}
	for i, r := range s {
		if !isTag(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteByte(byte(r - 0xE0000))
		}
	}
	flush(len(s))
	return out
}

func isTag(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

// rgiTagFlags are the tag sequences (after U+1F3F4 WAVING BLACK FLAG) of the only
// recommended-for-general-interchange subdivision flags in emoji 15.0.
var rgiTagFlags = []string{
	tagString("gbeng"),
	tagString("gbsct"),
	tagString("gbwls"),
}

func tagString(ascii string) string {
	var b strings.Builder
	for _, c := range ascii {
		b.WriteRune(0xE0000 + c)
	}
	b.WriteRune(0xE007F)
	return b.String()
}

// joiningScripts are the scripts whose orthography uses ZWNJ or ZWJ between letters.
var joiningScripts = func() scriptSet {
	var set scriptSet
	for _, n := range []string{
		"Arabic", "Syriac", "Nko", "Mongolian", "Devanagari", "Bengali", "Gurmukhi",
		"Gujarati", "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam", "Sinhala",
		"Khmer", "Myanmar", "Tibetan", "Balinese", "Javanese", "Sundanese", "Tirhuta",
		"Kaithi", "Sharada", "Grantha", "Newa", "Modi", "Takri", "Chakma",
	} {
		set = set.with(scriptIndex(n))
	}
	return set
}()

// scan calls emit for each finding in s, in order.
func scan(s string, emit func(Finding)) {
	prevStart := -1 // byte offset of the previous rune, -1 at the start
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			emit(Finding{Offset: i, Len: 1, Rune: r, Class: ClassInvalidUTF8, Visible: fmt.Sprintf(`\x%02x`, s[i])})
			prevStart, i = i, i+1
			continue
		}
		if r == 0x1F3F4 {
			if end, last := flagTags(s, i+size, emit); end > 0 {
				prevStart, i = last, end
				continue
			}
		}
		if r == 0x1B {
			if n := ansiLen(s[i:]); n > 0 {
				emit(Finding{Offset: i, Len: n, Rune: r, Class: ClassANSI, Visible: visibleSpan(s[i : i+n])})
				prevStart, i = i, i+n
				continue
			}
		}
		if c := classify(s, prevStart, i, r, size); c != 0 {
			emit(Finding{Offset: i, Len: size, Rune: r, Class: c, Visible: escapeRune(r)})
		}
		prevStart, i = i, i+size
	}
}

// flagTags reports the tag sequence of an RGI subdivision flag starting at s[i:], if any,
// as ClassEmojiSequence findings. It returns the offset after the sequence and the offset
// of its last rune, or 0, 0.
func flagTags(s string, i int, emit func(Finding)) (end, last int) {
	for _, seq := range rgiTagFlags {
		if !strings.HasPrefix(s[i:], seq) {
			continue
		}
		for j := i; j < i+len(seq); {
			t, n := utf8.DecodeRuneInString(s[j:])
			emit(Finding{Offset: j, Len: n, Rune: t, Class: ClassEmojiSequence, Visible: escapeRune(t)})
			last, j = j, j+n
		}
		return i + len(seq), last
	}
	return 0, 0
}

// classify returns the class of rune r at s[i:i+size], or 0 when r is not suspicious.
// prev is the offset of the previous rune or -1.
func classify(s string, prev, i int, r rune, size int) Class {
	switch {
	case r < 0x20:
		if r == '\t' || r == '\n' || r == '\r' {
			return 0
		}
		return ClassControl
	case r < 0x7F:
		return 0
	case r <= 0x9F, r == 0x2028, r == 0x2029:
		return ClassControl
	case r < 0xA0:
		return 0
	}
	prevRune := func() rune {
		if prev < 0 {
			return -1
		}
		p, _ := utf8.DecodeRuneInString(s[prev:])
		return p
	}
	nextRune := func() rune {
		if i+size >= len(s) {
			return -1
		}
		n, _ := utf8.DecodeRuneInString(s[i+size:])
		return n
	}
	switch {
	case isTag(r):
		return ClassTag
	case r == 0x200B || r == 0x2060 || r == 0xFEFF:
		return ClassZeroWidth
	case r == 0x200C || r == 0x200D:
		if r == 0x200D && emojiZWJ(s, prev, nextRune()) {
			return ClassEmojiSequence
		}
		if inJoiningScript(prevRune(), nextRune()) {
			return ClassInScript
		}
		return ClassZeroWidth
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return ClassBidi
	case r == 0xFE0E || r == 0xFE0F:
		if p := prevRune(); p >= 0 && unicode.Is(emojiChar, p) {
			return ClassEmojiSequence
		}
		return ClassVariationSelector
	case r >= 0xE0100 && r <= 0xE01EF:
		if p := prevRune(); p >= 0 && unicode.Is(unicode.Han, p) {
			return ClassIdeographicVariant
		}
		return ClassVariationSelector
	case r >= 0x180B && r <= 0x180F:
		if p := prevRune(); p >= 0 && unicode.Is(unicode.Mongolian, p) && !unicode.Is(unicode.Variation_Selector, p) {
			return ClassInScript
		}
		if r == 0x180E {
			return ClassFormat
		}
		return ClassVariationSelector
	case unicode.Is(unicode.Variation_Selector, r):
		return ClassVariationSelector
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return ClassInvisible
	case unicode.Is(unicode.Cf, r):
		return ClassFormat
	case unicode.Is(unicode.Co, r):
		return ClassPrivateUse
	case isNoncharacter(r) || !assigned(r):
		return ClassUnassigned
	}
	return 0
}

// emojiZWJ reports whether a ZWJ whose previous rune starts at prev and whose next rune
// is next joins two pictographs. The left side may end in one emoji modifier and one
// U+FE0F, in either order (👩🏽‍💻, 🏳️‍🌈).
func emojiZWJ(s string, prev int, next rune) bool {
	if prev < 0 || next < 0 || !unicode.Is(extendedPictographic, next) {
		return false
	}
	end := prev + utf8.RuneLen(runeAt(s, prev))
	for steps := 0; steps < 3 && end > 0; steps++ {
		p, n := utf8.DecodeLastRuneInString(s[:end])
		switch {
		case unicode.Is(extendedPictographic, p):
			return true
		case p == 0xFE0F || unicode.Is(emojiModifier, p):
			end -= n
		default:
			return false
		}
	}
	return false
}

func runeAt(s string, i int) rune {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r
}

// inJoiningScript reports whether a joiner between p and n sits inside a word of a
// joining script: both neighbours letters or marks, sharing such a script.
func inJoiningScript(p, n rune) bool {
	if p < 0 || n < 0 {
		return false
	}
	if !unicode.In(p, unicode.L, unicode.M) || !unicode.In(n, unicode.L, unicode.M) {
		return false
	}
	common := scriptsOf(p).and(scriptsOf(n)).and(joiningScripts)
	return !common.empty()
}

func isNoncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

func assigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// ansiLen returns the length of the escape sequence at the start of s (which begins with
// ESC), or 0 when the ESC starts no sequence.
func ansiLen(s string) int {
	if len(s) < 2 {
		return 0
	}
	c := s[1]
	j := 2
	switch {
	case c == '[': // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, final 0x40-0x7E
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3F {
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2F {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7E {
			j++
		}
		return j
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_': // string until BEL or ST
		for j < len(s) {
			switch {
			case s[j] == 0x07 && c == ']':
				return j + 1
			case s[j] == 0x1B:
				if j+1 < len(s) && s[j+1] == '\\' {
					return j + 2
				}
				return j // an unterminated string ends where the next escape starts
			case strings.HasPrefix(s[j:], "\u009c"): // C1 ST
				return j + len("\u009c")
			}
			j++
		}
		return j
	case c >= 0x20 && c <= 0x2F: // nF: intermediates then a final byte
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2F {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7E {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7E: // Fp, Fe, Fs: ESC 7, ESC c, ESC M, ...
		return 2
	}
	return 0
}

// visibleSpan renders an escape sequence: printable ASCII stays, everything else is escaped.
func visibleSpan(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r >= 0x20 && r < 0x7F:
			b.WriteByte(byte(r))
		default:
			b.WriteString(escapeRune(r))
		}
		i += n
	}
	return b.String()
}

// escapeRune renders r in printable ASCII: \xNN below U+0080, \uNNNN in the BMP and
// <U+NNNNN> above it, the forms cli-conventions.md prescribes.
func escapeRune(r rune) string {
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xFFFF:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf("<U+%04X>", r)
}
