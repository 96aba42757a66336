package canon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// runNode runs one node process on script with stdin as its standard input and returns its
// standard output. The process is bounded by a timeout and killed by PID when done.
func runNode(t *testing.T, node, script string, stdin []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "-e", script)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	// Wait reaps it normally; the kill is for every way out of this function that
	// does not, so that no node outlives the test.
	defer func() { _ = cmd.Process.Kill() }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node (pid %d): %v\nstderr:\n%s", cmd.Process.Pid, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// nodeNumberScript reads lines of 16 hex digits (IEEE-754 bit patterns) and prints, for
// each, JSON.stringify of that double, which is ECMAScript's Number::toString.
const nodeNumberScript = `
const chunks = [];
process.stdin.on('data', c => chunks.push(c));
process.stdin.on('end', () => {
  const lines = Buffer.concat(chunks).toString('latin1').split('\n');
  const b = Buffer.alloc(8);
  const out = [];
  for (const l of lines) {
    if (l === '') continue;
    b.write(l, 0, 'hex');
    out.push(JSON.stringify(b.readDoubleBE(0)));
  }
  process.stdout.write(out.join('\n') + '\n');
});
`

// oracleNumbers returns the doubles compared with node: edge cases, then n random bit
// patterns (any finite double, uniformly over the encodings), then n random values with
// few significant digits in the decimal range, where the plain notation is used.
func oracleNumbers(r *rand.Rand, n int) []float64 {
	var fs []float64
	add := func(f float64) {
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			fs = append(fs, f, -f)
		}
	}
	near := func(f float64, steps int) {
		up, down := f, f
		add(f)
		for range steps {
			up, down = math.Nextafter(up, math.Inf(1)), math.Nextafter(down, math.Inf(-1))
			add(up)
			add(down)
		}
	}
	add(0)
	add(math.Copysign(0, -1))
	near(5e-324, 3)
	near(math.MaxFloat64, 3)
	near(2.2250738585072014e-308, 3) // smallest normal
	near(1e21, 10)
	near(1e-7, 10)
	near(1e-6, 10)
	near(1<<53, 3)
	near(1<<53-1, 1)
	near(1<<53+1, 1)
	for e := -324; e <= 308; e++ {
		near(math.Pow10(e), 1)
		if f, err := strconv.ParseFloat("1e"+strconv.Itoa(e), 64); err == nil {
			near(f, 1) // correctly rounded, unlike Pow10 for some e
		}
	}
	for e := -1074; e <= 1023; e++ {
		add(math.Ldexp(1, e))
	}
	for range n {
		f := math.Float64frombits(r.Uint64())
		add(f)
	}
	for range n {
		digits := r.Int64N(1_000_000_000)
		exp := r.IntN(40) - 25
		f, _ := strconv.ParseFloat(strconv.FormatInt(digits, 10)+"e"+strconv.Itoa(exp), 64)
		add(f)
	}
	return fs
}

func TestAppendNumberMatchesECMAScript(t *testing.T) {
	node := testenv.LookPath(t, "node")
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d (fixed seed 1 is also run)", seed)
	var fs []float64
	fs = append(fs, oracleNumbers(rand.New(rand.NewPCG(1, 1)), 60_000)...)
	fs = append(fs, oracleNumbers(rand.New(rand.NewPCG(seed, 2)), 60_000)...)
	var in bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&in, "%016x\n", math.Float64bits(f))
	}
	out := runNode(t, node, nodeNumberScript, in.Bytes())
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(fs) {
		t.Fatalf("node printed %d lines for %d numbers", len(lines), len(fs))
	}
	if len(fs) < 200_000 {
		t.Fatalf("only %d numbers compared", len(fs))
	}
	bad := 0
	var buf []byte
	for i, f := range fs {
		var err error
		buf, err = AppendNumber(buf[:0], f)
		if err != nil || string(buf) != lines[i] {
			t.Errorf("AppendNumber(%016x = %v) = %q, %v; ECMAScript says %q", math.Float64bits(f), f, buf, err, lines[i])
			if bad++; bad > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("compared %d doubles with node", len(fs))
}

// nodeCanonScript reads lines, each a JSON string holding one JSON text, and prints for
// each the RFC 8785 form that ECMAScript itself produces: JSON.parse, then JSON.stringify
// with members sorted by the default sort (UTF-16 code units). This is the reference
// implementation the RFC describes, independent of ours.
const nodeCanonScript = `
const canon = v => {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  return '{' + Object.keys(v).sort().map(k => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
};
const chunks = [];
process.stdin.on('data', c => chunks.push(c));
process.stdin.on('end', () => {
  const out = [];
  for (const l of Buffer.concat(chunks).toString('utf8').split('\n')) {
    if (l === '') continue;
    out.push(canon(JSON.parse(JSON.parse(l))));
  }
  process.stdout.write(out.join('\n') + '\n');
});
`

func TestTransformMatchesECMAScript(t *testing.T) {
	node := testenv.LookPath(t, "node")
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d (fixed seed 1 is also run)", seed)
	docs := append(toolDocs(t), rfcDocs(t)...)
	for _, tc := range transformCases() {
		docs = append(docs, doc{tc.name, []byte(tc.in)})
	}
	for i, r := range []*rand.Rand{rand.New(rand.NewPCG(1, 3)), rand.New(rand.NewPCG(seed, 4))} {
		for k := range 1500 {
			g := &docGen{r: r}
			g.value(0)
			docs = append(docs, doc{fmt.Sprintf("random %d/%d", i, k), g.b.Bytes()})
		}
	}
	var in bytes.Buffer
	for _, d := range docs {
		line, err := json.Marshal(string(d.json))
		if err != nil {
			t.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	// JCS output never holds a raw line feed (it is escaped), so lines split cleanly.
	out := runNode(t, node, nodeCanonScript, in.Bytes())
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("node printed %d lines for %d documents", len(lines), len(docs))
	}
	bad := 0
	for i, d := range docs {
		got, err := Transform(d.json)
		if err != nil || string(got) != lines[i] {
			t.Errorf("%s: Transform(%q)\n= %q, %v\nECMAScript: %q", d.name, d.json, got, err, lines[i])
			if bad++; bad > 10 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("compared %d documents with node", len(docs))
}

// docGen writes random JSON text that Transform must accept: unique member names, no lone
// surrogates, no overflowing numbers, but every other freedom of the grammar — random
// whitespace, escapes of any character (\u with either hex case, surrogate pairs), and
// numbers in many spellings — and characters from the ranges where UTF-16 and byte order
// disagree.
type docGen struct {
	r *rand.Rand
	b bytes.Buffer
}

var genRunes = []rune{
	'a', 'b', 'z', 'A', '0', '1', ' ', '"', '\\', '/', '\n', '\t', 0, 0x1f, 0x7f, 0x80,
	0xe9, 0x2028, 0xd7ff, 0xe000, 0xfb33, 0xfeff, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff,
}

func (g *docGen) space() {
	for g.r.IntN(4) == 0 {
		g.b.WriteByte(" \t\n\r"[g.r.IntN(4)])
	}
}

func (g *docGen) str(s []rune) {
	g.b.WriteByte('"')
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 || g.r.IntN(4) == 0 {
			format := "\\u%04x"
			if g.r.IntN(2) == 0 {
				format = "\\u%04X"
			}
			switch {
			case c == '"' && g.r.IntN(2) == 0:
				g.b.WriteString(`\"`)
			case c == '\\' && g.r.IntN(2) == 0:
				g.b.WriteString(`\\`)
			case c == '\n' && g.r.IntN(2) == 0:
				g.b.WriteString(`\n`)
			case c == '/' && g.r.IntN(2) == 0:
				g.b.WriteString(`\/`)
			case c >= 0x10000:
				hi, lo := utf16.EncodeRune(c)
				fmt.Fprintf(&g.b, format+format, hi, lo)
			default:
				fmt.Fprintf(&g.b, format, c)
			}
			continue
		}
		g.b.WriteRune(c)
	}
	g.b.WriteByte('"')
}

func (g *docGen) runes() []rune {
	s := make([]rune, g.r.IntN(5))
	for i := range s {
		s[i] = genRunes[g.r.IntN(len(genRunes))]
	}
	return s
}

func (g *docGen) number() {
	for {
		var s string
		switch g.r.IntN(6) {
		case 0:
			s = strconv.FormatInt(g.r.Int64N(2000)-1000, 10)
		case 1: // up to 25 digits: past 2^53, so rounding matters
			s = strconv.FormatUint(g.r.Uint64(), 10) + strings.Repeat("7", g.r.IntN(6))
		case 2:
			s = strconv.FormatFloat(math.Float64frombits(g.r.Uint64()), 'e', -1, 64)
		case 3: // more digits than needed, so parsing must round
			s = strconv.FormatFloat(math.Float64frombits(g.r.Uint64()), 'e', 17+g.r.IntN(8), 64)
		case 4:
			s = fmt.Sprintf("%d.%0*dE%+d", g.r.IntN(100), 1+g.r.IntN(5), g.r.IntN(1000), g.r.IntN(60)-30)
		default:
			s = strconv.FormatFloat(g.r.Float64()*math.Pow10(g.r.IntN(30)-10), 'f', -1, 64)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
			if f == 0 && g.r.IntN(2) == 0 {
				s = "-0.0"
			}
			g.b.WriteString(s)
			return
		}
	}
}

func (g *docGen) value(depth int) {
	g.space()
	k := g.r.IntN(9)
	if depth >= 4 {
		k = g.r.IntN(5)
	}
	switch k {
	case 0:
		g.b.WriteString([]string{"true", "false", "null"}[g.r.IntN(3)])
	case 1, 2:
		g.number()
	case 3, 4:
		g.str(g.runes())
	case 5, 6:
		g.b.WriteByte('[')
		n := g.r.IntN(4)
		for i := range n {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.value(depth + 1)
		}
		g.space()
		g.b.WriteByte(']')
	default:
		g.b.WriteByte('{')
		seen := map[string]bool{}
		n := g.r.IntN(6)
		for range n {
			name := g.runes()
			if seen[string(name)] {
				continue
			}
			seen[string(name)] = true
			if len(seen) > 1 {
				g.b.WriteByte(',')
			}
			g.space()
			g.str(name)
			g.space()
			g.b.WriteByte(':')
			g.value(depth + 1)
		}
		g.space()
		g.b.WriteByte('}')
	}
	g.space()
}
