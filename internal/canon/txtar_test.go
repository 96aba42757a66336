package canon

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// archive is a txtar archive: a prose comment, then files introduced by "-- name --" lines.
// The format is small enough that a dozen lines beat a dependency.
type archive struct {
	comment string
	names   []string
	files   map[string][]byte
}

func readArchive(t testing.TB, path string) archive {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseArchive(data)
}

func parseArchive(data []byte) archive {
	a := archive{files: map[string][]byte{}}
	var cur string
	var body []byte
	flush := func() {
		if cur != "" {
			a.names = append(a.names, cur)
			a.files[cur] = body
		}
	}
	inComment := true
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if s := string(line); strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			flush()
			cur, body, inComment = strings.TrimSpace(s[3:len(s)-3]), []byte{}, false
			continue
		}
		if inComment {
			a.comment += string(line) + "\n"
			continue
		}
		body = append(append(body, line...), '\n')
	}
	flush()
	return a
}

// formatArchive is parseArchive's inverse, for -update.
func formatArchive(a archive) []byte {
	var b bytes.Buffer
	b.WriteString(a.comment)
	for _, name := range a.names {
		b.WriteString("-- " + name + " --\n")
		f := a.files[name]
		b.Write(f)
		if len(f) > 0 && f[len(f)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// trimNewline drops the one newline that the archive format adds to a file's last line.
func trimNewline(b []byte) []byte {
	return bytes.TrimSuffix(b, []byte("\n"))
}
