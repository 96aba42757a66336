package textguard_test

import (
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/textguard"
)

func ExampleScan() {
	desc := "Reads a file.\u200B\U000E0049\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065"
	for _, f := range textguard.Scan(desc) {
		fmt.Println(f.Offset, f.Class, f.Class.Severity(), f.Visible)
	}
	for _, run := range textguard.DecodeTags(desc) {
		fmt.Printf("hidden text at %d: %q\n", run.Offset, run.Text)
	}
	// Output:
	// 13 zero-width high \u200b
	// 16 tag high <U+E0049>
	// 20 tag high <U+E0067>
	// 24 tag high <U+E006E>
	// 28 tag high <U+E006F>
	// 32 tag high <U+E0072>
	// 36 tag high <U+E0065>
	// hidden text at 16: "Ignore"
}

func ExampleVisible() {
	fmt.Println(textguard.Visible("invoice\u202Efdp.exe \x1b[2J"))
	fmt.Println(textguard.Render("I ❤️ Go\u200B", textguard.High))
	// Output:
	// invoice\u202efdp.exe \x1b[2J
	// I ❤️ Go\u200b
}

func ExampleConfusable() {
	fmt.Println(textguard.Confusable("read_file", "read_f\u0456le"))
	fmt.Println(textguard.MixedScript("read_f\u0456le"), textguard.Scripts("read_f\u0456le"))
	fmt.Println(textguard.MixedScript("東京の天気"))
	// Output:
	// true
	// true [Cyrillic Latin]
	// false
}
