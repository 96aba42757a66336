package mcpclient

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// expander resolves the ${...} references of one configuration file.
type expander struct {
	getenv    func(string) string
	home      string
	workspace string
}

// expand resolves every ${...} reference in s; field names the value in errors.
func (x *expander) expand(s, field string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%s: unterminated %q", field, s[i:])
		}
		ref := s[i+2 : i+end]
		v, err := x.resolve(ref, field)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func (x *expander) resolve(ref, field string) (string, error) {
	switch ref {
	case "workspaceFolder", "workspaceRoot":
		return x.workspace, nil
	case "workspaceFolderBasename":
		return filepath.Base(x.workspace), nil
	case "userHome":
		if x.home == "" {
			return "", fmt.Errorf("%s: ${userHome} is used but HOME is not set", field)
		}
		return x.home, nil
	case "pathSeparator", "/":
		return string(os.PathSeparator), nil
	}
	if name, ok := strings.CutPrefix(ref, "env:"); ok {
		return x.getenv(name), nil
	}
	if id, ok := strings.CutPrefix(ref, "input:"); ok {
		v := InputVariable(id)
		if val := x.getenv(v); val != "" {
			return val, nil
		}
		return "", fmt.Errorf("%s: ${input:%s} is a VS Code prompt that cannot be answered here; set %s to its value", field, id, v)
	}
	name, def, hasDef := strings.Cut(ref, ":-")
	if isEnvName(name) {
		if v := x.getenv(name); v != "" {
			return v, nil
		}
		if hasDef {
			return def, nil
		}
		return "", fmt.Errorf("%s: ${%s} is not set; export %s or write ${%s:-default}", field, name, name, name)
	}
	return "", fmt.Errorf("%s: unsupported reference ${%s}; replace it with its value or ${env:NAME}", field, ref)
}

// InputVariable is the environment variable that answers the VS Code prompt ${input:id}:
// AGENTGATE_INPUT_ followed by id upper-cased, with every character other than an ASCII
// letter or digit replaced by an underscore.
func InputVariable(id string) string {
	var b strings.Builder
	b.WriteString("AGENTGATE_INPUT_")
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
