package mcpclient

import (
	"testing"
	"time"
)

// server-everything registers some tools only for clients that declare the capability they
// need: 14 tools for the generic profile (roots only), 19 for VS Code's (sampling,
// elicitation with url, and tasks for both); Claude Code and Cursor (elicitation) get 15.
func TestRealServerToolsDependOnProfile(t *testing.T) {
	want := map[string]int{"generic": 14, "vscode": 19, "claude-code": 15, "cursor": 15}
	for _, p := range BuiltinProfiles() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			l, err := ListTools(t.Context(), nodeServer(t, "everything", "@modelcontextprotocol/server-everything", "stdio"),
				Options{Timeout: 30 * time.Second, Profile: &p, Everything: true})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range l.Tools {
				names = append(names, tool.Name)
			}
			if len(l.Tools) != want[p.Name] {
				t.Errorf("%d tools, want %d: %v", len(l.Tools), want[p.Name], names)
			}
			if len(l.Prompts) == 0 || len(l.Resources) == 0 || len(l.ResourceTemplates) == 0 || l.Instructions == nil {
				t.Errorf("prompts %d, resources %d, templates %d, instructions %v", len(l.Prompts), len(l.Resources), len(l.ResourceTemplates), l.Instructions != nil)
			}
			t.Logf("%s: protocol %s, %d tools, %d prompts, %d resources, %d templates, notes %q, probe unanswered %v", p.Name, l.ProtocolVersion, len(l.Tools), len(l.Prompts), len(l.Resources), len(l.ResourceTemplates), l.Notes, l.ProbeUnanswered)
			waitGone(t, l.PID)
		})
	}
}
