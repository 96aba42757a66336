package warrant

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/textguard"
)

// FuzzGrade checks properties of the grader on arbitrary pairs of definitions: it never
// panics, a definition graded against itself has no change, two definitions with different
// digests always have at least one change, and the grade is the worst change's severity.
func FuzzGrade(f *testing.F) {
	f.Add([]byte(baseTool), []byte(baseTool))
	for _, tc := range driftCases {
		f.Add([]byte(baseTool), []byte(tc.name))
	}
	f.Add([]byte(`{"name":"a","inputSchema":true}`), []byte(`{"name":"a","inputSchema":{"anyOf":[{"type":"x"}],"required":[1]}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		da, _, errA := DigestTool(a)
		db, _, errB := DigestTool(b)
		if errA != nil || errB != nil {
			return
		}
		self, err := Grade(a, a, GradeOptions{})
		if err != nil || len(self.Changes) != 0 || self.Grade != SeverityNone {
			t.Fatalf("a definition against itself: %v %+v", err, self)
		}
		d, err := Grade(a, b, GradeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if (da != db) != (len(d.Changes) > 0) {
			t.Fatalf("digests differ: %v, changes: %d", da != db, len(d.Changes))
		}
		worst := SeverityNone
		for _, c := range d.Changes {
			worst = max(worst, c.Severity)
			if c.Reason == "" || c.Rule == "" {
				t.Fatalf("change without rule or reason: %+v", c)
			}
		}
		if worst != d.Grade {
			t.Fatalf("grade %s, worst change %s", d.Grade, worst)
		}
		if _, err := Grade(nil, b, GradeOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzVisibleJSON checks that the visible rendering of any definition is valid JSON with
// the same value and no High finding left.
func FuzzVisibleJSON(f *testing.F) {
	f.Add([]byte(`{"name":"x","description":"a\u200bb \u202e \udb40\udc41 ☀️ \u0085"}`))
	f.Add([]byte(baseTool))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, c, err := DigestTool(raw)
		if err != nil {
			return
		}
		v := VisibleJSON(c)
		if textguard.Suspicious(string(v)) {
			t.Fatalf("High finding left in %q", v)
		}
		var x, y any
		dec := func(b []byte, out *any) error {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			return d.Decode(out)
		}
		if err := dec(c, &x); err != nil {
			t.Fatal(err)
		}
		if err := dec(v, &y); err != nil {
			t.Fatalf("VisibleJSON output is not JSON: %v\n%q", err, v)
		}
		if !equal(x, y) {
			t.Fatalf("VisibleJSON changed the value:\n%q\n%q", c, v)
		}
	})
}
