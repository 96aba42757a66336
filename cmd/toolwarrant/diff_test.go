package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
)

// TestDiffShowsTagCharacters pins how diff prints hidden tag characters (issue 34 item 6):
// the human output writes each one as <U+E0041>, as agentgate's diff does and
// docs/agentgate.md promises, never raw and never as the JSON surrogate pair
// \udb40\udc41; --json stays valid JSON whose value holds the real characters;
// --accept-suspicious prints them raw.
func TestDiffShowsTagCharacters(t *testing.T) {
	dir := t.TempDir()
	const tagged = "\U000E0041\U000E0042" // "AB" spelt in tag characters
	hidden := strings.Replace(forecast, "for a city.", "for a city."+tagged, 1)
	f := fixture.New(forecast)
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}} {
		if r := runCLI(t, dir, nil, args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	runCLI(t, dir, nil, "crawl")
	f.SetTools(hidden)
	if r := runCLI(t, dir, nil, "crawl"); r.code != 1 {
		t.Fatalf("second crawl: %s", r)
	}

	r := runCLI(t, dir, nil, "diff", "wx", "get_forecast")
	want := `+ "Get the weather forecast for a city.<U+E0041><U+E0042>"`
	if r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("diff: want %q in stdout\n%s", want, r)
	}
	if strings.Contains(r.stdout, `\udb40`) || strings.ContainsRune(r.stdout, 0xE0041) || strings.ContainsRune(r.stderr, 0xE0041) {
		t.Errorf("diff printed a surrogate pair or a raw tag character:\n%s", r)
	}
	if !strings.Contains(r.stderr, "not printed raw") {
		t.Errorf("diff did not say on stderr why: %s", r)
	}

	r = runCLI(t, dir, nil, "diff", "wx", "get_forecast", "--json")
	var dj diffJSON
	if err := json.Unmarshal([]byte(r.stdout), &dj); err != nil || r.code != 1 || len(dj.Changes) == 0 {
		t.Fatalf("diff --json: %v %s", err, r)
	}
	var got string
	if err := json.Unmarshal(dj.Changes[0].New, &got); err != nil || !strings.HasSuffix(got, "for a city."+tagged) {
		t.Errorf("diff --json: new value %q (%v), want it to end with the tag characters", got, err)
	}

	r = runCLI(t, dir, nil, "diff", "wx", "get_forecast", "--accept-suspicious")
	if r.code != 1 || !strings.Contains(r.stdout, "for a city."+tagged+`"`) {
		t.Errorf("diff --accept-suspicious does not print the raw characters: %s", r)
	}
}
