// Package lockfile_test checks the published contract docs/spec/agentgate.lock.schema.json
// against what internal/lockfile writes and reads: everything the writer produces validates,
// and the schema refuses the same malformed documents the parser refuses.
package lockfile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSpecSchema(t, "agentgate.lock.schema.json")
}

// compileSpecSchema compiles docs/spec/<name>, asserting formats.
func compileSpecSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(t), "docs", "spec", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "https://github.com/agentgate-dev/agentgate/docs/spec/" + name
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	return s
}

// refusal is one malformed edit of a valid document: both the schema and the parser
// must refuse it, or (parserErr false) the parser accepts it with a warning.
type refusal struct {
	name      string
	edit      func(string) string
	parserErr bool // false: the parser accepts it with a warning
}

// checkRefusals applies each case's edit to good and checks the schema refuses the
// result and parse reacts as the case says.
func checkRefusals(t *testing.T, schema *jsonschema.Schema, good []byte, tests []refusal, parse func([]byte) ([]lockfile.Warning, error)) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := []byte(tc.edit(string(good)))
			if bytes.Equal(bad, good) {
				t.Fatal("edit did not change the document")
			}
			if err := validate(schema, bad); err == nil {
				t.Errorf("schema accepts:\n%s", bad)
			}
			warns, err := parse(bad)
			switch {
			case tc.parserErr && err == nil:
				t.Errorf("parser accepts what the schema refuses:\n%s", bad)
			case !tc.parserErr && (err != nil || len(warns) == 0):
				t.Errorf("parser should accept with a warning: err=%v warnings=%v", err, warns)
			}
		})
	}
}

func validate(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// randomSurface builds a surface with awkward names and schemas, deterministically.
func randomSurface(t *testing.T, seed uint64) lockfile.Surface {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := []string{"read", "write", "fetch", "café", "😀", "דּ", "zero\u200bwidth", `q"uote`, "back\\slash", "tab\t"}
	s := lockfile.Surface{}
	for i := range 1 + r.IntN(4) {
		var defs []lockfile.Definition
		seen := map[string]bool{}
		for range r.IntN(6) {
			name := words[r.IntN(len(words))] + fmt.Sprint(r.IntN(3))
			if seen[name] {
				continue
			}
			seen[name] = true
			raw := fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object","properties":{"x":{"type":"number","maximum":%d.5e%d}}}}`,
				name, strings.Repeat(words[r.IntN(len(words))]+" ", r.IntN(4)), r.IntN(1000), r.IntN(30)-15)
			d, err := lockfile.ParseTool([]byte(raw))
			if err != nil {
				t.Fatalf("ParseTool(%s): %v", raw, err)
			}
			defs = append(defs, d)
		}
		s[fmt.Sprintf("%s-%d", words[r.IntN(len(words))], i)] = defs
	}
	return s
}

func TestGeneratedLockfilesValidate(t *testing.T) {
	schema := compileSchema(t)
	golden, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "internal", "lockfile", "testdata", "sample.lock.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(schema, golden); err != nil {
		t.Errorf("sample.lock.golden: %v", err)
	}
	for seed := range uint64(200) {
		lf, err := lockfile.New(randomSurface(t, seed), "agentgate@test", time.Unix(int64(seed)*7919, int64(seed)*1e6).UTC())
		if err != nil {
			t.Fatal(err)
		}
		data, err := lf.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(schema, data); err != nil {
			t.Fatalf("seed %d: generated lockfile does not validate: %v\n%s", seed, err, data)
		}
		if _, warns, err := lockfile.Parse(data); err != nil || len(warns) > 0 {
			t.Fatalf("seed %d: Parse: %v %v", seed, err, warns)
		}
	}
}

func TestSchemaRefusesWhatTheParserRefuses(t *testing.T) {
	schema := compileSchema(t)
	lf, err := lockfile.New(lockfile.Surface{"s": {{Name: "a", InputSchema: []byte(`{}`)}}}, "agentgate@test", time.Date(2026, 8, 3, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := lf.Marshal()
	tool := lf.Servers["s"].Tools[0]
	tests := []refusal{
		{"lockfileVersion 2", func(s string) string { return strings.Replace(s, `"lockfileVersion": 1`, `"lockfileVersion": 2`, 1) }, true},
		{"lockfileVersion as string", func(s string) string { return strings.Replace(s, `"lockfileVersion": 1`, `"lockfileVersion": "1"`, 1) }, true},
		{"uppercase hash", func(s string) string {
			return strings.Replace(s, tool.DescriptionHash, strings.ToUpper(tool.DescriptionHash), 1)
		}, true},
		{"short hash", func(s string) string { return strings.Replace(s, tool.InputSchemaHash, tool.InputSchemaHash[:63], 1) }, true},
		{"missing generatedAt", func(s string) string {
			return strings.Replace(s, `  "generatedAt": "2026-08-03T12:00:00.000Z",`+"\n", "", 1)
		}, true},
		{"bad generatedAt", func(s string) string { return strings.Replace(s, "2026-08-03T12:00:00.000Z", "03/08/2026", 1) }, true},
		{"missing tools", func(s string) string {
			i := strings.Index(s, `,`+"\n"+`      "tools"`)
			j := strings.Index(s, "]\n    }")
			return s[:i] + "\n    }" + s[j+len("]\n    }"):]
		}, true},
		{"empty tool name", func(s string) string { return strings.Replace(s, `"name": "a"`, `"name": ""`, 1) }, true},
		{"extra top-level field", func(s string) string { return strings.Replace(s, `"servers"`, `"extra": true, "servers"`, 1) }, false},
		{"extra tool field", func(s string) string { return strings.Replace(s, `"name": "a",`, `"name": "a", "title": "A",`, 1) }, false},
	}
	checkRefusals(t, schema, good, tests, func(b []byte) ([]lockfile.Warning, error) {
		_, warns, err := lockfile.Parse(b)
		return warns, err
	})
}
