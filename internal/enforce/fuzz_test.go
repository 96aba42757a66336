package enforce

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValid: the strict validator accepts exactly what encoding/json accepts, restricted
// to valid UTF-8 (encoding/json would replace invalid bytes rather than refuse them).
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `[1,-0.5e+3,"a\u00e9\n",true,false,null]`, `{"a":{"b":[]}}`, `"\ud800"`, "\"\xff\"", `01`, `1.`, `-`, `[1,]`, `{"a" 1}`, ` 7 `, `"\x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if strings.Count(string(b), "[")+strings.Count(string(b), "{") >= maxDepth {
			return
		}
		want := json.Valid(b) && utf8.Valid(b)
		if got := valid(b); got != want {
			t.Fatalf("valid(%q) = %v, encoding/json and UTF-8 say %v", b, got, want)
		}
	})
}

// FuzzListTools: whatever the gateway sends, the decision never panics, a pass means the
// result was valid JSON, and a mutated result is valid JSON holding only approved tools.
func FuzzListTools(f *testing.F) {
	a := `{"name":"a","inputSchema":{}}`
	f.Add([]byte(`{"tools":[` + a + `,{"name":"b","inputSchema":{}}],"ttlMs":0}`))
	f.Add([]byte(`{"tools":[` + a + `]}`))
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{"x":"\ud800"}}],"nextCursor":"x"}`))
	src := newMemSource()
	src.set("s", "a", ToolEvidence{Approved: d([]byte(a)), Crawled: d([]byte(a))})
	tp := newTestProcessor(f, src, []string{"s"}, nil)
	f.Fuzz(func(t *testing.T, in []byte) {
		got := tp.ListTools(t.Context(), []string{"s"}, in)
		switch got.Outcome {
		case OutcomePass:
			if !json.Valid(in) || !utf8.Valid(in) {
				t.Fatalf("passed invalid JSON %q", in)
			}
		case OutcomeMutated:
			var doc struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if !json.Valid(got.Mutated) || json.Unmarshal(got.Mutated, &doc) != nil {
				t.Fatalf("mutated result %q is not valid JSON (input %q)", got.Mutated, in)
			}
			for _, tool := range doc.Tools {
				if d([]byte(tool)) != d([]byte(a)) {
					t.Fatalf("kept an unapproved tool %s", tool)
				}
			}
		}
	})
}
