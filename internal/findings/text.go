package findings

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/textguard"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// prepared is a string made ready for matching: High-severity hidden characters removed
// (so "id_r\u200bsa" still reads "id_rsa"), ASCII letters lower-cased, each run of white
// space made one space (or one line break, or a blank line, which segments needs) and,
// for a name, words split at underscores, hyphens and case changes. off maps each byte of
// s back to the original. The patterns are written for this form: lower case, one space
// between words.
type prepared struct {
	orig string
	s    string
	off  []int // off[i] is the offset in orig of s[i]
}

func prepare(orig string, ident bool) prepared {
	var drop []textguard.Finding
	for _, f := range textguard.Scan(orig) {
		if f.Class.Severity() == textguard.High {
			drop = append(drop, f)
		}
	}
	b := make([]byte, 0, len(orig))
	off := make([]int, 0, len(orig))
	prevLower := false
	for i := 0; i < len(orig); {
		if len(drop) > 0 && drop[0].Offset == i {
			i += drop[0].Len
			drop = drop[1:]
			continue
		}
		if isSpace(orig[i]) {
			// A run of white space becomes one space, one line break, or a blank line.
			j, lines, nl := i, 0, i
			for j < len(orig) && isSpace(orig[j]) {
				if orig[j] == '\n' {
					if lines == 0 {
						nl = j
					}
					lines++
				}
				j++
			}
			switch {
			case lines == 0:
				b, off = append(b, ' '), append(off, i)
			case lines == 1:
				b, off = append(b, '\n'), append(off, nl)
			default:
				b, off = append(b, '\n', '\n'), append(off, nl, nl)
			}
			prevLower = false
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(orig[i:])
		if ident {
			if r == '_' || r == '-' {
				b, off = append(b, ' '), append(off, i)
				prevLower = false
				i += size
				continue
			}
			if unicode.IsUpper(r) && prevLower {
				b, off = append(b, ' '), append(off, i)
			}
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		}
		for j := range size {
			c := orig[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A' // ASCII only, so that offsets are kept
			}
			b, off = append(b, c), append(off, i+j)
		}
		i += size
	}
	return prepared{orig: orig, s: string(b), off: off}
}

// span maps the byte range [a, b) of p.s to the original.
func (p prepared) span(a, b int) (int, int) {
	if a >= len(p.off) || b <= a {
		return len(p.orig), len(p.orig)
	}
	start, end := p.off[a], p.off[b-1]+1
	for end < len(p.orig) && !utf8.RuneStart(p.orig[end]) {
		end++
	}
	return start, end
}

// maxSegment bounds one sentence: a longer run without a sentence end is cut into
// pieces at spaces, so that two phrases far apart in a wall of text do not combine.
const maxSegment = 600

// segments splits s into sentences: after '.', '!', '?' or ';' followed by a space or the
// end, at a blank line, and before a line that starts a list item or a heading. A single
// line break does not end a sentence; wrapped text often breaks mid-sentence.
func segments(s string) [][2]int {
	var out [][2]int
	start := 0
	flush := func(end int) {
		if strings.TrimSpace(s[start:end]) != "" {
			out = append(out, [2]int{start, end})
		}
		start = end
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == '.' || c == '!' || c == '?' || c == ';') && (i+1 == len(s) || isSpace(s[i+1])):
			flush(i + 1)
		case c == '\n' && startsBlock(s[i+1:]):
			flush(i + 1)
		case i-start >= maxSegment && isSpace(c):
			flush(i + 1)
		}
	}
	flush(len(s))
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// startsBlock reports whether the line that follows a line break is blank or starts a
// list item, a heading or a quote.
func startsBlock(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return true
	}
	switch rest[0] {
	case '\n', '\r', '-', '*', '#', '>', '+':
		return true
	}
	if strings.HasPrefix(rest, "•") {
		return true
	}
	n := 0
	for n < len(rest) && n < 3 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return n > 0 && n < len(rest) && (rest[n] == '.' || rest[n] == ')')
}

// render makes s printable on one line: every character textguard reports is rendered
// visibly, every run of white space becomes one space, and the result is cut at about
// limit bytes with an ellipsis.
func render(s string, limit int) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		c := s[i : i+size]
		i += size
		if len(c) == 1 && isSpace(c[0]) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteString(textguard.Visible(c))
		if b.Len() >= limit && i < len(s) {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}

// excerpt returns the original text around [a, b) (offsets in orig), with up to 40 bytes
// of context on each side, at most MaxExcerptBytes, rendered.
func excerpt(orig string, a, b int) string {
	const context = 40
	start, end := max(a-context, 0), min(b+context, len(orig))
	if end-start > MaxExcerptBytes {
		start = max(a-context/2, 0)
		end = min(start+MaxExcerptBytes, len(orig))
	}
	for start > 0 && !utf8.RuneStart(orig[start]) {
		start--
	}
	for end < len(orig) && !utf8.RuneStart(orig[end]) {
		end++
	}
	out := render(orig[start:end], MaxExcerptBytes*4)
	if start > 0 {
		out = "…" + out
	}
	if end < len(orig) {
		out += "…"
	}
	return out
}

// quote renders a matched phrase for a reason: on one line, visible, at most 60 bytes.
func quote(s string) string {
	return `"` + render(strings.TrimRight(strings.TrimSpace(s), ".,;:"), 60) + `"`
}

// hiddenChars reports the High-severity characters of s as one finding, and returns the
// ASCII its tag characters spell (for the phrase rules to read), "" when there is none.
func (sc *scanner) hiddenChars(ptr, s string) string {
	var high []textguard.Finding
	for _, f := range textguard.Scan(s) {
		if f.Class.Severity() == textguard.High {
			high = append(high, f)
		}
	}
	if len(high) == 0 {
		return ""
	}
	counts := map[textguard.Class]int{}
	var classes []textguard.Class
	for _, f := range high {
		if counts[f.Class] == 0 {
			classes = append(classes, f.Class)
		}
		counts[f.Class]++
	}
	var parts []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf("%s ×%d", c, counts[c]))
	}
	reason := fmt.Sprintf("holds %d hidden %s (%s; first %s): text the model reads but a reviewer does not see, or sees reordered",
		len(high), plural(len(high), "character", "characters"), strings.Join(parts, ", "), high[0].Visible)
	var tags []string
	for _, r := range textguard.DecodeTags(s) {
		if strings.TrimSpace(r.Text) != "" {
			tags = append(tags, r.Text)
		}
	}
	decoded := strings.Join(tags, " ")
	if decoded != "" {
		reason += "; the tag characters spell " + quote(decoded)
	}
	sc.add(Finding{Rule: RuleHiddenCharacters, Severity: warrant.Critical, Pointer: ptr,
		Excerpt: excerpt(s, high[0].Offset, high[0].Offset+high[0].Len), Reason: reason})
	return decoded
}

// padding reports a run of white space long enough to push what follows out of view in
// a client that shows the start of a description (32 blanks in a row, or 6 line breaks
// with only blanks between them).
func (sc *scanner) padding(ptr, s string) {
	run, lines, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			if run == 0 {
				start = i
			}
			run++
			if s[i] == '\n' {
				lines++
			}
			if run >= 32 || lines >= 6 {
				end := i
				for end < len(s) && isSpace(s[end]) {
					end++
				}
				sc.add(Finding{Rule: RuleConcealment, Severity: warrant.Warning, Pointer: ptr,
					Excerpt: excerpt(s, start, end),
					Reason:  fmt.Sprintf("pads the text with %d blank characters (%d line breaks): what follows is out of view in a client that shows the start, and the model still reads it", end-start, strings.Count(s[start:end], "\n"))})
				return
			}
		default:
			run, lines = 0, 0
		}
	}
}
