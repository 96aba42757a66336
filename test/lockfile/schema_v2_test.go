package lockfile_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// The version 2 contract, docs/spec/agentgate.lock.v2.schema.json, against what
// internal/lockfile writes and reads.

func compileSchemaV2(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSpecSchema(t, "agentgate.lock.v2.schema.json")
}

// randomV2 builds a version 2 lockfile from randomSurface's awkward names, with prompts
// and resources named after the tools, under two profiles.
func randomV2(t *testing.T, seed uint64) *lockfile.LockfileV2 {
	t.Helper()
	lf := &lockfile.LockfileV2{GeneratedBy: "agentgate@test", GeneratedAt: time.Unix(int64(seed)*7919, 0).UTC(), Servers: map[string]lockfile.ServerV2{}}
	for name, defs := range randomSurface(t, seed) {
		var d lockfile.Definitions
		for i, def := range defs {
			raw, _ := json.Marshal(map[string]any{"name": def.Name, "description": def.Description, "inputSchema": def.InputSchema, "annotations": map[string]any{"readOnlyHint": i%2 == 0}})
			d.Tools = append(d.Tools, raw)
			p, _ := json.Marshal(map[string]any{"name": def.Name, "arguments": []any{map[string]any{"name": "x", "required": true}}})
			d.Prompts = append(d.Prompts, p)
			r, _ := json.Marshal(map[string]any{"uri": fmt.Sprintf("x://%d/%s", i, def.Name), "name": def.Name, "size": i})
			d.Resources = append(d.Resources, r)
		}
		if seed%2 == 0 {
			s := "instructions for " + name
			d.Instructions = &s
		}
		srv := lockfile.ServerV2{Profiles: map[string]lockfile.ProfileV2{}}
		for _, c := range []struct{ name, caps string }{{"generic", `{"roots":{"listChanged":true}}`}, {"vscode", `{"sampling":{},"roots":{}}`}} {
			p, _, err := lockfile.LockProfile(lockfile.Client{ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(c.caps)}, d)
			if err != nil {
				t.Fatal(err)
			}
			srv.Profiles[c.name] = p
		}
		lf.Servers[name] = srv
	}
	return lf
}

func TestGeneratedV2LockfilesValidate(t *testing.T) {
	schema := compileSchemaV2(t)
	golden, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "internal", "lockfile", "testdata", "sample.v2.lock.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(schema, golden); err != nil {
		t.Errorf("sample.v2.lock.golden: %v", err)
	}
	// One server per package type (docs/agentgate.md, "Package identity").
	withPackages, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "internal", "lockfile", "testdata", "sample.v2.package.lock.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(schema, withPackages); err != nil {
		t.Errorf("sample.v2.package.lock.golden: %v", err)
	}
	for _, bad := range []struct{ from, to string }{
		{`"type": "npm"`, `"type": "cargo"`},
		{`"integrity": "sha512-`, `"integrity": "md5-`},
		{`"type": "remote",`, `"type": "remote", "name": "x",`},
	} {
		if err := validate(schema, []byte(strings.Replace(string(withPackages), bad.from, bad.to, 1))); err == nil {
			t.Errorf("the schema accepts %s", bad.to)
		}
	}
	for seed := range uint64(100) {
		data, err := randomV2(t, seed).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(schema, data); err != nil {
			t.Fatalf("seed %d: does not validate: %v\n%s", seed, err, data)
		}
		if _, warns, err := lockfile.ParseV2(data); err != nil || len(warns) > 0 {
			t.Fatalf("seed %d: ParseV2: %v %v", seed, err, warns)
		}
	}
	// The version 1 schema refuses a version 2 file, and the other way round.
	v1 := compileSchema(t)
	if err := validate(v1, golden); err == nil {
		t.Error("the version 1 schema accepts a version 2 lockfile")
	}
	v1golden, _ := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "internal", "lockfile", "testdata", "sample.lock.golden"))
	if err := validate(schema, v1golden); err == nil {
		t.Error("the version 2 schema accepts a version 1 lockfile")
	}
}

func TestSchemaV2RefusesWhatTheParserRefuses(t *testing.T) {
	schema := compileSchemaV2(t)
	good, err := randomV2(t, 4).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	tests := []refusal{
		{"lockfileVersion 3", func(s string) string { return strings.Replace(s, `"lockfileVersion": 2`, `"lockfileVersion": 3`, 1) }, true},
		{"digest without prefix", func(s string) string { return strings.Replace(s, `"digest": "sha256:`, `"digest": "`, 1) }, true},
		{"capabilities not an object", func(s string) string {
			return strings.Replace(s, `"capabilities": {"roots":{"listChanged":true}}`, `"capabilities": "roots"`, 1)
		}, true},
		{"missing resourceTemplates", func(s string) string {
			return strings.Replace(s, `,
          "resourceTemplates": []`, "", 1)
		}, true},
		{"empty prompt name", func(s string) string {
			i := strings.Index(s, `"prompts": [`)
			j := i + strings.Index(s[i:], `"name": "`)
			k := j + len(`"name": "`) + strings.Index(s[j+len(`"name": "`):], `"`)
			return s[:j] + `"name": ""` + s[k+1:]
		}, true},
		{"extra profile field", func(s string) string { return strings.Replace(s, `"surfaceHash"`, `"note": "x", "surfaceHash"`, 1) }, false},
	}
	checkRefusals(t, schema, good, tests, func(b []byte) ([]lockfile.Warning, error) {
		if _, err := lockfile.ReadVersion(b); err != nil {
			return nil, err
		}
		_, warns, err := lockfile.ParseV2(b)
		return warns, err
	})
}
