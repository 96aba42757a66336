package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func dumps(t *testing.T, in string) string {
	t.Helper()
	v, err := parseJSON([]byte(in))
	if err != nil {
		t.Fatalf("parse %q: %v", in, err)
	}
	out, err := pyDumps(v)
	if err != nil {
		t.Fatalf("dumps %q: %v", in, err)
	}
	return string(out)
}

// TestPyDumpsGolden holds pyDumps to CPython's json.dumps output recorded in the golden file.
func TestPyDumpsGolden(t *testing.T) {
	in := readLines(t, "testdata/pydumps_inputs.txt")
	want := readLines(t, "testdata/pydumps.golden")
	if len(in) != len(want) {
		t.Fatalf("%d inputs, %d golden lines", len(in), len(want))
	}
	for i := range in {
		if got := dumps(t, in[i]); got != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got, want[i])
		}
	}
}

// TestPyDumpsOracle compares with a live CPython when one is installed (the golden file
// covers machines without one).
func TestPyDumpsOracle(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH; TestPyDumpsGolden covers the recorded cases")
	}
	in := readLines(t, "testdata/pydumps_inputs.txt")
	in = append(in, `{"a":[1.25e-7,7e22,-12.5e-3,"\u2028"]}`, `"\ud834\udd1e tab\t"`)
	script := "import json,sys\nfor l in sys.stdin.read().split('\\n'):\n    print(json.dumps(json.loads(l)))\n"
	cmd := exec.CommandContext(t.Context(), py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(in, "\n"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i := range in {
		if got := dumps(t, in[i]); got != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", in[i], got, want[i])
		}
	}
}

// TestDemoEnvelopeBytes: the demo pad's block 0, sent as a dict, must hash to the demo head's
// first link — the same bytes the peer's json.dumps produced.
func TestDemoEnvelopeBytes(t *testing.T) {
	in := `{"schema":"locker.handoff.v1","task_id":"demo-pad-v1","from_agent":"lockerd-demo","to_agent":"you","constraints":["read-only demo","illustrates hash-chain integrity"],"artifacts":[{"name":"demo-payload.txt","size":45}],"budget_usd":0.0}`
	got := dumps(t, in)
	if len(got) != 253 || locker.NextHash(locker.GenesisHash, []byte(got)) != "f71d0bad52603d552b94e201c9513820ff571aaac3a36b0d80ee5876ddc01463" {
		t.Fatalf("demo envelope re-encoded as %d bytes: %s", len(got), got)
	}
}

func TestParseJSONRefusals(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `NaN`, `Infinity`, `"\x01"`, `"\q"`, `"\u12"`, `tru`, `{} x`, `{1:2}`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600)} {
		if _, err := parseJSON([]byte(in)); err == nil {
			t.Errorf("parseJSON(%q) accepted", in)
		}
	}
}

func TestUTF8Bytes(t *testing.T) {
	v, err := parseJSON([]byte(`"é\ud83d\ude00"`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := utf8Bytes(v.str)
	if err != nil || string(b) != "é😀" {
		t.Fatalf("utf8Bytes = %q, %v", b, err)
	}
	v, _ = parseJSON([]byte(`"\ud800"`))
	if _, err := utf8Bytes(v.str); err == nil {
		t.Fatal("lone surrogate encoded")
	}
}

// FuzzPyDumps: whatever parses re-encodes to JSON that encoding/json accepts (once Python's
// Infinity literals are set aside) and that parses back to the same encoding.
func FuzzPyDumps(f *testing.F) {
	for _, l := range []string{`{"a":1}`, `[1.5e300,-0,"\ud800"]`, `"😀"`, `{"k":1,"k":2}`, `1e400`} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := parseJSON(in)
		if err != nil {
			return
		}
		out, err := pyDumps(v)
		if err != nil {
			return
		}
		if bytes.Contains(out, []byte("Infinity")) || bytes.Contains(out, []byte("NaN")) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("pyDumps(%q) = %q is not JSON", in, out)
		}
		for _, c := range out {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("pyDumps(%q) = %q is not printable ASCII", in, out)
			}
		}
		v2, err := parseJSON(out)
		if err != nil {
			t.Fatal(err)
		}
		out2, _ := pyDumps(v2)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %q then %q", out, out2)
		}
	})
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {1e16, "1e+16"}, {1e-5, "1e-05"}, {123.456, "123.456"}, {1e22, "1e+22"}, {math.Inf(1), "Infinity"}}
	for _, tc := range tests {
		if got := string(appendPyFloat(nil, tc.f)); got != tc.want {
			t.Errorf("repr(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}
