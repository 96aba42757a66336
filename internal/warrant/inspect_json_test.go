package warrant

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInspectionFindingsNeverNull: list --json, show --json and the approvals API print
// "findings": [] for a definition with none, never null.
func TestInspectionFindingsNeverNull(t *testing.T) {
	for _, in := range []Inspection{{}, {Findings: []TextFinding{}}} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"findings":[]`) {
			t.Errorf("%+v marshals as %s", in, b)
		}
	}
	b, _ := json.Marshal(struct{ I Inspection }{Inspection{Findings: []TextFinding{{Pointer: "/d", Class: "tag"}}, MixedScript: true}})
	if want := `{"I":{"findings":[{"pointer":"/d","offset":0,"class":"tag","visible":""}],"mixedScript":true}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
