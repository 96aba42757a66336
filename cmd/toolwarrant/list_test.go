package main

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestListRowsStayReadable pins issue 34 item 8: a change that trips many rules keeps its
// `list` row short, with the grade, the first (most severe) rule and how many more;
// `list --json` still has every rule, in the same order.
func TestListRowsStayReadable(t *testing.T) {
	dir := t.TempDir()
	before := `{"name":"get_forecast","title":"Forecast","description":"Get the weather forecast for a city.","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","additionalProperties":false,"properties":{"city":{"type":"string","description":"City name"}}}}`
	after := `{"name":"get_forecast","title":"Weather","description":"Get the forecast.` + "\u200b" + `","annotations":{"readOnlyHint":false},"_meta":{"x":1},"icons":[{"src":"https://x.example/i.png"}],"inputSchema":{"type":["object","null"],"additionalProperties":true,"required":["city"],"properties":{"city":{"type":"string","description":"The city"},"days":{"type":"integer"}}}}`
	f := fixture.New(before)
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}} {
		if r := runCLI(t, dir, nil, args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	runCLI(t, dir, nil, "crawl")
	f.SetTools(after)
	runCLI(t, dir, nil, "crawl")

	row := listRows(t, dir)["wx/get_forecast"]
	if len(row.Rules) < 6 || row.Grade != warrant.Critical {
		t.Fatalf("the fixture should trip many rules: %+v", row)
	}
	wantGrade := "CRITICAL " + string(row.Rules[0]) + " +" + strconv.Itoa(len(row.Rules)-1) + " more"

	r := runCLI(t, dir, nil, "list")
	if r.code != 0 {
		t.Fatalf("list: %s", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "  "+wantGrade+"  ") {
		t.Errorf("list: want the GRADE cell %q\n%s", wantGrade, r)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("list row is %d characters long, want at most 120:\n%s", n, l)
		}
	}
	if !strings.Contains(r.stderr, "list --json") || !strings.Contains(r.stderr, "toolwarrant diff SERVER TOOL") {
		t.Errorf("list does not say where every rule is: %s", r)
	}
	// Deterministic: the same catalog prints the same bytes.
	if again := runCLI(t, dir, nil, "list"); again.stdout != r.stdout {
		t.Errorf("list is not deterministic:\n%s\n%s", r.stdout, again.stdout)
	}
}
