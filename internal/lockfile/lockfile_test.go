package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// Expected hashes below were computed outside Go, with `printf '%s' '<canonical text>' |
// sha256sum`, from canonical strings written by hand. Any independent implementation of the
// lockfile specification must reproduce them.
const (
	hashEcho      = "092c79e8f80e559e404bcf660c48f3522b67aba9ff1484b0367e1a4ddef7431d" // "echo"
	hashEchoDesc  = "befddbd2f7f4e08645d4777c5722d61db17d56a0115f5c9bdb19577e865a299b" // "Echoes back the input"
	hashEchoSchem = "1f339f5cf38cb82d6de887f0ce761337a02c2ccb35955016cc3fdbf67dd5ce06" // {"properties":{"a":{"type":"string"},"b":{"maximum":100,"type":"number"}},"required":["a"],"type":"object"}
	hashNow       = "ed5eb9a37e2d8231af3388319b941995f6dc8755c56043d0cc52b5fe405a87de" // "now"
	hashEmpty     = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // ""
	hashEmptyObj  = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" // {}
	hashEmptyArr  = "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945" // []
	// [["<hashEcho>","<hashEchoDesc>","<hashEchoSchem>"],["<hashNow>","<hashEmpty>","<hashEmptyObj>"]]
	hashSurface = "386ffbd7a40f19048e4f5d9db686f15af78cfed9130a6644647056fb3a203ddf"
	hashCafe    = "850f7dc43910ff890f8879c0ed26fe697c93a067ad93a7d50f466a7028a9bf4e" // "café" (UTF-8 c3 a9)
	hashZWSP    = "dc18220f0179b9f112b0b6670d33316dffb13afeb8b11030d109f994a9917ae0" // "Adds\u200b numbers" (UTF-8 e2 80 8b)
	// {"enum":["\u0000",1e+21,1e-7,-0.5],"x":"é"}
	hashNumbers = "b85312db429f7116a5037dcdcc5ea868a7611211007330f34b9c17ea26939b32"
)

func TestHashesMatchIndependentComputation(t *testing.T) {
	// Whitespace, member order and number spelling all differ from the canonical text.
	echo := `{ "inputSchema": {"type": "object", "required": ["a"],
		"properties": {"b": {"type": "number", "maximum": 1E2}, "a": {"type": "string"}}},
		"description": "Echoes back the input", "name": "echo", "annotations": {"readOnlyHint": true} }`
	now := `{"name":"now"}` // no description, no inputSchema
	srv := lockRaw(t, echo, now)
	want := Server{
		SurfaceHash: hashSurface,
		Tools: []Tool{
			{Name: "echo", NameHash: hashEcho, DescriptionHash: hashEchoDesc, InputSchemaHash: hashEchoSchem},
			{Name: "now", NameHash: hashNow, DescriptionHash: hashEmpty, InputSchemaHash: hashEmptyObj},
		},
	}
	if diff := cmp.Diff(want, srv); diff != "" {
		t.Errorf("LockServer (-want +got):\n%s", diff)
	}
	// Order of listing does not matter.
	if diff := cmp.Diff(want, lockRaw(t, now, echo)); diff != "" {
		t.Errorf("LockServer reversed (-want +got):\n%s", diff)
	}

	uni := lockRaw(t, `{"name":"caf\u00e9","description":"Adds`+"\u200b"+` numbers","inputSchema":{"x":"\u00e9","enum":["\u0000",1E21,0.0000001,-5e-1]}}`)
	if got := uni.Tools[0]; got.NameHash != hashCafe || got.DescriptionHash != hashZWSP || got.InputSchemaHash != hashNumbers {
		t.Errorf("unicode tool = %+v, want name %s description %s schema %s", got, hashCafe, hashZWSP, hashNumbers)
	}
	if got := SurfaceHash(nil); got != hashEmptyArr {
		t.Errorf("SurfaceHash(no tools) = %s, want %s", got, hashEmptyArr)
	}
}

func lockRaw(t *testing.T, raws ...string) Server {
	t.Helper()
	var defs []Definition
	for _, r := range raws {
		d, err := ParseTool([]byte(r))
		if err != nil {
			t.Fatalf("ParseTool(%s): %v", r, err)
		}
		defs = append(defs, d)
	}
	s, err := LockServer(defs)
	if err != nil {
		t.Fatalf("LockServer: %v", err)
	}
	return s
}

func TestParseTool(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Definition
		wantErr string
	}{
		{name: "absent fields", raw: `{"name":"a"}`, want: Definition{Name: "a", InputSchema: json.RawMessage(`{}`)}},
		{name: "null fields", raw: `{"name":"a","description":null,"inputSchema":null}`, want: Definition{Name: "a", InputSchema: json.RawMessage(`{}`)}},
		{name: "schema canonicalized", raw: `{"name":"a","inputSchema":{"b":1.50,"a":[true, null]}}`, want: Definition{Name: "a", InputSchema: json.RawMessage(`{"a":[true,null],"b":1.5}`)}},
		{name: "escapes decoded", raw: `{"name":"a\u0062","description":"line\nnext \ud83d\ude00"}`, want: Definition{Name: "ab", Description: "line\nnext 😀", InputSchema: json.RawMessage(`{}`)}},
		{name: "keys are case-sensitive", raw: `{"Name":"a"}`, wantErr: `"name" is missing`},
		{name: "name not a string", raw: `{"name":1}`, wantErr: `"name" is missing or not a string`},
		{name: "name empty", raw: `{"name":""}`, wantErr: `"name" is empty`},
		{name: "description not a string", raw: `{"name":"a","description":["x"]}`, wantErr: `"description" is not a string`},
		{name: "duplicate member", raw: `{"name":"a","description":"x","description":"y"}`, wantErr: "duplicate"},
		{name: "lone surrogate", raw: `{"name":"a","description":"\ud800"}`, wantErr: "surrogate"},
		{name: "invalid utf-8", raw: "{\"name\":\"a\xff\"}", wantErr: "UTF-8"},
		{name: "number out of range", raw: `{"name":"a","inputSchema":{"maximum":1e400}}`, wantErr: "offset"},
		{name: "not an object", raw: `["name"]`, wantErr: "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTool([]byte(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseTool error = %v, want one containing %q wrapping ErrInvalid", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTool (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLockServerRefusesDuplicateNames(t *testing.T) {
	_, err := LockServer([]Definition{{Name: "a"}, {Name: "b"}, {Name: "a", Description: "shadow"}})
	if err == nil || !strings.Contains(err.Error(), `two tools are named "a"`) {
		t.Fatalf("LockServer = %v, want a duplicate-name error", err)
	}
}

func TestLessIsUTF16Order(t *testing.T) {
	// U+FB33 (one UTF-16 unit 0xFB33) sorts after U+1F600 (units 0xD83D 0xDE00), though its
	// UTF-8 bytes sort first.
	if !Less("\U0001F600", "\uFB33") || Less("\uFB33", "\U0001F600") {
		t.Error("Less does not order by UTF-16 code units")
	}
	for _, tc := range []struct{ a, b string }{{"a", "b"}, {"a", "ab"}, {"", "a"}, {"B", "a"}, {"a_b", "ab"}} {
		if !Less(tc.a, tc.b) || Less(tc.b, tc.a) {
			t.Errorf("Less(%q, %q) wrong", tc.a, tc.b)
		}
	}
}

// sampleSurface is the fixture surface behind testdata/sample.lock.golden.
func sampleSurface(t *testing.T) Surface {
	t.Helper()
	parse := func(raws ...string) []Definition {
		var ds []Definition
		for _, r := range raws {
			d, err := ParseTool([]byte(r))
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		return ds
	}
	return Surface{
		"weather": parse(
			`{"name":"get_forecast","description":"Get the weather forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`,
			`{"name":"get_alerts","description":"Get weather alerts for a US state.","inputSchema":{"type":"object","properties":{"state":{"type":"string"}}}}`,
		),
		"everything":    parse(`{"name":"echo","description":"Echoes back the input","inputSchema":{"type":"object","required":["a"],"properties":{"b":{"type":"number","maximum":100},"a":{"type":"string"}}}}`, `{"name":"now"}`),
		"empty":         {},
		"ünïcode \"q\"": parse(`{"name":"\uFB33","description":"<b>&amp;</b>"}`, `{"name":"\ud83d\ude00"}`),
	}
}

var sampleTime = time.Date(2026, 8, 3, 12, 0, 0, 123456789, time.UTC)

func TestMarshalGolden(t *testing.T) {
	lf, err := New(sampleSurface(t), "[email protected]", sampleTime)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.lock.golden", got)
	// Byte-identical on every run.
	for range 3 {
		again, _ := New(sampleSurface(t), "[email protected]", sampleTime)
		b, _ := again.Marshal()
		if !bytes.Equal(b, got) {
			t.Fatal("Marshal is not deterministic")
		}
	}
	snap, err := MarshalSnapshot(sampleSurface(t))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.snapshot.golden", snap)
}

// golden compares got with testdata/name, or rewrites it under -update. The first lines
// of each golden file up to a blank line are a comment saying what it guards, and are
// kept.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

func TestParseRoundTrip(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "sample.lock.golden"))
	if err != nil {
		t.Fatal(err)
	}
	lf, warns, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings on canonical file: %v", warns)
	}
	out, _ := lf.Marshal()
	if !bytes.Equal(out, data) {
		t.Errorf("Parse then Marshal changed the file:\n%s", cmp.Diff(string(data), string(out)))
	}
	want, _ := New(sampleSurface(t), "x", time.Time{})
	if !SameSurface(lf, want) {
		t.Error("parsed surface differs from the generated one")
	}
	if !lf.GeneratedAt.Equal(sampleTime.Truncate(time.Millisecond)) {
		t.Errorf("GeneratedAt = %v", lf.GeneratedAt)
	}

	snap, err := os.ReadFile(filepath.Join("testdata", "sample.snapshot.golden"))
	if err != nil {
		t.Fatal(err)
	}
	s, warns, err := ParseSnapshot(snap)
	if err != nil || len(warns) > 0 {
		t.Fatalf("ParseSnapshot: %v %v", err, warns)
	}
	wantSurface := sampleSurface(t)
	for _, defs := range wantSurface {
		sort.Slice(defs, func(i, j int) bool { return Less(defs[i].Name, defs[j].Name) })
	}
	if diff := cmp.Diff(wantSurface, s); diff != "" {
		t.Errorf("snapshot round trip (-want +got):\n%s", diff)
	}
}

const h64 = "0000000000000000000000000000000000000000000000000000000000000000"

func TestParseErrorsAndWarnings(t *testing.T) {
	one := func(tools string) string {
		return `{"lockfileVersion":1,"generatedBy":"x","generatedAt":"2026-08-03T12:00:00Z","servers":{"s":{"surfaceHash":"SURFACE","tools":[` + tools + `]}}}`
	}
	tool := func(name, extra string) string {
		return `{"name":"` + name + `","nameHash":"` + hashString(name) + `","descriptionHash":"` + hashEmpty + `","inputSchemaHash":"` + hashEmptyObj + `"` + extra + `}`
	}
	withSurface := func(doc string, names ...string) string {
		var ts []Tool
		for _, n := range names {
			ts = append(ts, Tool{Name: n, NameHash: hashString(n), DescriptionHash: hashEmpty, InputSchemaHash: hashEmptyObj})
		}
		SortTools(ts)
		return strings.Replace(doc, "SURFACE", SurfaceHash(ts), 1)
	}
	tests := []struct {
		name      string
		doc       string
		wantErr   string
		wantWarns []string
	}{
		{name: "future version", doc: `{"lockfileVersion":2,"servers":"whatever"}`, wantErr: "lockfileVersion 2 is not supported; this build understands version 1"},
		{name: "missing version", doc: `{"servers":{}}`, wantErr: "lockfileVersion is missing; this build understands version 1"},
		{name: "string version", doc: `{"lockfileVersion":"1"}`, wantErr: `lockfileVersion "1" is not supported`},
		{name: "duplicate key", doc: `{"lockfileVersion":1,"lockfileVersion":1}`, wantErr: "line 1, column 22"},
		{name: "syntax error has line", doc: "{\n\"lockfileVersion\": 1,\n}", wantErr: "line 3"},
		{name: "missing servers", doc: `{"lockfileVersion":1,"generatedBy":"x","generatedAt":"2026-08-03T12:00:00Z"}`, wantErr: "servers is missing"},
		{name: "bad time", doc: `{"lockfileVersion":1,"generatedBy":"x","generatedAt":"yesterday","servers":{}}`, wantErr: "generatedAt is not an RFC 3339"},
		{name: "uppercase hash", doc: strings.Replace(withSurface(one(tool("a", "")), "a"), hashEmpty, strings.ToUpper(hashEmpty), 1), wantErr: "descriptionHash must be 64 lowercase hex"},
		{name: "wrong name hash", doc: withSurface(one(strings.Replace(tool("a", ""), hashString("a"), h64, 1)), "a"), wantErr: "nameHash is not the SHA-256"},
		{name: "surface mismatch", doc: strings.Replace(one(tool("a", "")), "SURFACE", h64, 1), wantErr: "surfaceHash does not match its tools"},
		{name: "duplicate tools", doc: withSurface(one(tool("a", "")+","+tool("a", "")), "a", "a"), wantErr: `two tools named "a"`},
		{name: "unknown fields warned", doc: withSurface(strings.Replace(one(tool("a", `,"title":"A"`)), `"servers"`, `"comment":"hi","servers"`, 1), "a"),
			wantWarns: []string{"comment: unknown field", "servers.s.tools[0].title: unknown field"}},
		{name: "unsorted warned", doc: withSurface(one(tool("b", "")+","+tool("a", "")), "a", "b"), wantWarns: []string{"servers.s.tools: not sorted by name"}},
		{name: "non-canonical layout warned", doc: withSurface(one(tool("a", "")), "a"), wantWarns: []string{"not in canonical form"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lf, warns, err := Parse([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if lf == nil {
				t.Fatal("nil lockfile")
			}
			var got []string
			for _, w := range warns {
				got = append(got, w.String())
			}
			if len(got) != len(tc.wantWarns) {
				t.Fatalf("warnings = %q, want %q", got, tc.wantWarns)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.wantWarns[i]) {
					t.Errorf("warning %d = %q, want prefix %q", i, got[i], tc.wantWarns[i])
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "sample.lock.golden")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"lockfileVersion":1,"generatedBy":"x","generatedAt":"2026-08-03T12:00:00Z","servers":{}}`))
	f.Add([]byte(`{"lockfileVersion":2}`))
	f.Add([]byte(`{"lockfileVersion":1,"servers":{"s":{"surfaceHash":"` + hashEmptyArr + `","tools":[]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, _, err := Parse(data)
		if err != nil {
			if lf != nil {
				t.Fatal("lockfile returned with an error")
			}
			return
		}
		// What Parse accepts, Marshal writes canonically, and that parses to the same
		// surface with no warnings, and marshals to the same bytes: a fixed point.
		out, err := lf.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed lockfile: %v", err)
		}
		lf2, warns, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(x)): %v\n%s", err, out)
		}
		if len(warns) != 0 {
			t.Fatalf("canonical output has warnings: %v", warns)
		}
		if !SameSurface(lf, lf2) {
			t.Fatal("round trip changed the surface")
		}
		out2, _ := lf2.Marshal()
		if !bytes.Equal(out, out2) {
			t.Fatal("Marshal is not a fixed point")
		}
	})
}

func FuzzParseTool(f *testing.F) {
	f.Add([]byte(`{"name":"echo","description":"x","inputSchema":{"type":"object"}}`))
	f.Add([]byte(`{"name":"a","description":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := ParseTool(raw)
		if err != nil {
			return
		}
		s, err := LockServer([]Definition{d})
		if err != nil {
			t.Fatalf("LockServer of a parsed tool: %v", err)
		}
		if s.Tools[0].Name != d.Name || !IsHash(s.SurfaceHash) {
			t.Fatalf("bad lock %+v", s)
		}
	})
}
