package review

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/textguard"
)

// Text is upstream text made safe to show: plain runs, and a badge for every character
// textguard rates High (zero-width, bidi controls, tag characters, variation selectors
// outside emoji, other format characters, controls, ANSI escapes, invalid bytes). The
// template renders it as text only; no High character is ever in a Seg's Text.
type Text []Seg

// Seg is one piece of a Text: exactly one of its fields is set.
type Seg struct {
	// Text is shown as it is (html/template escapes it).
	Text string
	// Odd is one letter of a look-alike name that is not in the name's main script: shown
	// marked, with its code point and script.
	Odd *Letter
	// Char is one hidden or reordering character (or an escape sequence, or an invalid
	// byte), shown as a badge.
	Char *Char
	// Tags is a run of Unicode tag characters, shown as a badge per character under the
	// ASCII text they spell.
	Tags *TagRun
}

// Char is a badge for one suspicious character.
type Char struct {
	// Code is its code point, "U+200B" ("U+001B" for an escape sequence, "byte 0xFF" for
	// a byte that is not UTF-8).
	Code string
	// Class is textguard's class name: zero-width, bidi-control, tag, control, ...
	Class string
	// Shows is the printable rendering of an escape sequence (`\x1b[2J`), or the ASCII
	// character a tag character mirrors; "" otherwise.
	Shows string
}

// TagRun is a run of tag characters and the ASCII it spells.
type TagRun struct {
	// ASCII is the text the run spells (U+E0020..U+E007E mirror ASCII); what a model
	// reads and a person does not see.
	ASCII string
	Chars []Char
}

// Plain reports whether t has no badge.
func (t Text) Plain() bool {
	for _, s := range t {
		if s.Char != nil || s.Tags != nil || s.Odd != nil {
			return false
		}
	}
	return true
}

// String returns t as plain text with every badge as its code point: for titles and
// tests.
func (t Text) String() string {
	var b strings.Builder
	for _, s := range t {
		switch {
		case s.Char != nil:
			fmt.Fprintf(&b, "<%s>", s.Char.Code)
		case s.Tags != nil:
			fmt.Fprintf(&b, "<tags %q>", s.Tags.ASCII)
		case s.Odd != nil:
			b.WriteString(s.Odd.Char)
		default:
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// textOf splits s into plain runs and badges.
func textOf(s string) Text {
	fs := textguard.Scan(s)
	var t Text
	last := 0
	plain := func(end int) {
		if end > last {
			t = append(t, Seg{Text: s[last:end]})
		}
	}
	for i := 0; i < len(fs); i++ {
		f := fs[i]
		if f.Class.Severity() != textguard.High || f.Offset < last {
			continue
		}
		plain(f.Offset)
		if f.Class == textguard.ClassTag {
			run := &TagRun{}
			end := f.Offset
			var ascii strings.Builder
			for ; i < len(fs) && fs[i].Class == textguard.ClassTag && fs[i].Offset == end; i++ {
				c := Char{Code: fmt.Sprintf("U+%04X", fs[i].Rune), Class: fs[i].Class.String()}
				if r := fs[i].Rune; r >= 0xE0020 && r <= 0xE007E {
					c.Shows = string(rune(r - 0xE0000))
					ascii.WriteString(c.Shows)
				}
				run.Chars = append(run.Chars, c)
				end = fs[i].Offset + fs[i].Len
			}
			i--
			run.ASCII = ascii.String()
			t = append(t, Seg{Tags: run})
			last = end
			continue
		}
		c := Char{Code: fmt.Sprintf("U+%04X", f.Rune), Class: f.Class.String()}
		switch {
		case f.Rune == utf8.RuneError && f.Len == 1:
			c.Code = fmt.Sprintf("byte 0x%02X", s[f.Offset])
		case f.Class == textguard.ClassANSI:
			c.Shows = f.Visible
		}
		t = append(t, Seg{Char: &c})
		last = f.Offset + f.Len
	}
	plain(len(s))
	return t
}

// Letter is one character of a tool name, with its script.
type Letter struct {
	// Char is the character; a High one is shown as Badge instead.
	Char  string
	Badge *Char
	// Code is its code point ("U+0456").
	Code string
	// Script is its script ("Latin", "Cyrillic"), or "Common" for characters every script
	// uses (digits, "_").
	Script string
	// Odd is true when the letter is not in the name's main script: the look-alike.
	Odd bool
}

// Lookalike explains a name that looks like another tool's, or mixes scripts.
type Lookalike struct {
	Letters []Letter
	// Like are the other tools' names it looks like (UTS #39 skeleton).
	Like        []Text
	MixedScript bool
	Scripts     []string
}

// letters returns each character of name with its script; Odd marks those outside the
// script most of its letters are in.
func letters(name string) []Letter {
	var out []Letter
	count := map[string]int{}
	for _, r := range name {
		l := Letter{Char: string(r), Code: fmt.Sprintf("U+%04X", r), Script: "Common"}
		if ss := textguard.Scripts(string(r)); len(ss) == 1 {
			l.Script = ss[0]
			count[l.Script]++
		}
		if t := textOf(string(r)); !t.Plain() && len(t) == 1 {
			l.Badge = t[0].Char
			if t[0].Tags != nil && len(t[0].Tags.Chars) == 1 {
				l.Badge = &t[0].Tags.Chars[0]
			}
		}
		out = append(out, l)
	}
	main, best := "", 0
	for s, n := range count {
		if n > best || n == best && s < main {
			main, best = s, n
		}
	}
	for i := range out {
		out[i].Odd = out[i].Script != "Common" && out[i].Script != main
	}
	return out
}

// nameText renders a tool name: for a look-alike, every letter outside its main script
// marked (and every non-ASCII letter, which is where look-alikes hide).
func nameText(name string, lookalike bool) Text {
	if !lookalike {
		return textOf(name)
	}
	var t Text
	for _, l := range letters(name) {
		switch {
		case l.Badge != nil:
			t = append(t, Seg{Char: l.Badge})
		case l.Odd || l.Char[0] >= utf8.RuneSelf:
			t = append(t, Seg{Odd: &l})
		default:
			if n := len(t); n > 0 && t[n-1].Text != "" {
				t[n-1].Text += l.Char
			} else {
				t = append(t, Seg{Text: l.Char})
			}
		}
	}
	return t
}
