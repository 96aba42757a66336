package textguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfusable(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"Cyrillic і in a tool name", "read_file", "read_f\u0456le", true},
		{"Greek omicron", "config", "c\u03BFnfig", true},
		{"Cyrillic а", "paypal", "p\u0430ypal", true},
		{"digit one for l", "delete_all", "de1ete_a11", true},
		{"capital I for l", "list_files", "Iist_fiIes", true},
		{"m and rn", "commit", "cornrnit", true},
		{"zero-width space is ignored", "readfile", "read\u200Bfile", true},
		{"mathematical bold", "run", "𝐫𝐮𝐧", true},
		{"identical strings are not confusable", "read_file", "read_file", false},
		{"different names", "read_file", "write_file", false},
		{"case differs", "Read_File", "read_file", false},
		{"Japanese names", "ファイル", "フアイル", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Confusable(tc.a, tc.b); got != tc.want {
				t.Errorf("Confusable(%q, %q) = %v, want %v (skeletons %q, %q)", tc.a, tc.b, got, tc.want, Skeleton(tc.a), Skeleton(tc.b))
			}
			if got := Confusable(tc.b, tc.a); got != tc.want {
				t.Errorf("Confusable(%q, %q) = %v, want %v (not symmetric)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestSkeleton(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"read_f\u0456le", "read_file"},
		{"0", "O"},
		{"m", "rn"},
		{"é", "e\u0301"},   // NFD
		{"a\u00ADb", "ab"}, // soft hyphen is default-ignorable
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Skeleton(tc.in)); diff != "" {
			t.Errorf("Skeleton(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestMixedScript(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"ASCII identifier", "read_file", false},
		{"digits and punctuation only", "v1.2-3_4", false},
		{"Cyrillic і in a Latin name", "read_f\u0456le", true},
		{"Greek omicron in a Latin name", "c\u03BFnfig", true},
		{"all Cyrillic", "пример", false},
		{"all Greek", "παράδειγμα", false},
		{"German", "größe_ändern", false},
		{"Japanese: Han, Hiragana, Katakana", "東京の天気をチェック", false},
		{"Japanese prolonged sound mark", "データー", false},
		{"Korean: Hangul and Han", "서울天氣", false},
		{"Chinese with Bopomofo", "注音ㄅㄆㄇ", false},
		{"Arabic with Arabic-Indic digits", "ملف٣", false},
		{"Latin with Arabic-Indic digit", "file٣", true},
		{"Latin and Han", "weather東京", true},
		{"Hiragana and Hangul", "の서", true},
		{"emoji fits any script", "deploy🚀", false},
		{"combining mark fits any script", "cafe\u0301", false},
		{"unassigned code point", "a\U0003FFFD", true},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MixedScript(tc.in); got != tc.want {
				t.Errorf("MixedScript(%q) = %v, want %v (scripts %v)", tc.in, got, tc.want, Scripts(tc.in))
			}
		})
	}
}

func TestScripts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"123", nil},
		{"read_f\u0456le", []string{"Cyrillic", "Latin"}},
		{"東京の", []string{"Han", "Hiragana"}},
		{"ab\U0003FFFD", []string{"Latin", "Unknown"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Scripts(tc.in)); diff != "" {
			t.Errorf("Scripts(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
