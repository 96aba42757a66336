package review

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func TestTextOf(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Get the forecast.", "Get the forecast."},
		{"zero width", "pass it as\u200b note", "pass it as<U+200B> note"},
		{"bidi", "\u202Etxt.exe\u202C", "<U+202E>txt.exe<U+202C>"},
		{"tags", "hi" + tagText("ok!") + "there", `hi<tags "ok!">there`},
		{"two tag runs", tagText("a") + "x" + tagText("b"), `<tags "a">x<tags "b">`},
		{"ansi", "a\x1b[2Jb", "a<U+001B>b"},
		{"invalid byte", "a\xffb", "a<byte 0xFF>b"},
		{"emoji kept", "👩🏽‍💻 ok", "👩🏽‍💻 ok"},
		{"html is text", "<script>x</script>", "<script>x</script>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := textOf(tc.in).String(); got != tc.want {
				t.Errorf("textOf(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	tags := textOf(tagText("Hi"))[0].Tags
	if diff := cmp.Diff(&TagRun{ASCII: "Hi", Chars: []Char{{Code: "U+E0048", Class: "tag", Shows: "H"}, {Code: "U+E0069", Class: "tag", Shows: "i"}}}, tags); diff != "" {
		t.Errorf("tag run (-want +got):\n%s", diff)
	}
	if c := textOf("a\x1b[2Jb")[1].Char; c.Shows != `\x1b[2J` {
		t.Errorf("ANSI badge shows %q", c.Shows)
	}
}

func TestLetters(t *testing.T) {
	got := letters("read_f\u0456le")
	var odd []string
	for _, l := range got {
		if l.Odd {
			odd = append(odd, l.Code+" "+l.Script)
		}
	}
	if diff := cmp.Diff([]string{"U+0456 Cyrillic"}, odd); diff != "" {
		t.Errorf("odd letters (-want +got):\n%s", diff)
	}
	if got[4].Script != "Common" || got[0].Script != "Latin" {
		t.Errorf("scripts: %+v", got)
	}
	if s := nameText("read_f\u0456le", true).String(); s != "read_f\u0456le" {
		t.Errorf("nameText: %q", s)
	}
	if n := nameText("read_f\u0456le", true); n[1].Odd == nil || n[1].Odd.Code != "U+0456" {
		t.Errorf("nameText marks: %+v", n)
	}
}

func TestSchemaTree(t *testing.T) {
	old := []byte(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}`)
	new := []byte(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","description":"x"}},"required":["a","b"]}}`)
	d, err := warrant.Grade(old, new, warrant.GradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	trees := schemaTrees(old, new, d.Changes)
	if len(trees) != 1 || trees[0].Status != "changed" || !trees[0].Open {
		t.Fatalf("trees: %+v", trees)
	}
	var walk func(n Node, path string) map[string]string
	walk = func(n Node, path string) map[string]string {
		out := map[string]string{path: n.Status + " " + n.Severity}
		for _, c := range n.Children {
			for k, v := range walk(c, path+"/"+c.Key.String()) {
				out[k] = v
			}
		}
		return out
	}
	got := walk(trees[0], "")
	want := map[string]string{
		"":                          "changed ",
		"/properties":               "changed ",
		"/properties/a":             "same ",
		"/properties/a/type":        "same ",
		"/properties/b":             "added WARNING",
		"/properties/b/type":        "added ",
		"/properties/b/description": "added CRITICAL",
		"/required":                 "changed CRITICAL",
		"/required/[0]":             "same ",
		"/required/[1]":             "added ",
		"/type":                     "same ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}
