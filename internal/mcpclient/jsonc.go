package mcpclient

import (
	"errors"
)

// stripJSONC removes // and /* */ comments and trailing commas (before } or ]) outside
// strings, keeping byte offsets of everything else where it can, so that JSON errors still
// point near the right line. Plain JSON passes through unchanged.
func stripJSONC(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(data) {
					i++
					out = append(out, data[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			closed := false
			for i += 2; i+1 < len(data); i++ {
				if data[i] == '*' && data[i+1] == '/' {
					i++
					closed = true
					break
				}
				if data[i] == '\n' {
					out = append(out, '\n')
				}
			}
			if !closed {
				return nil, errors.New("unterminated /* comment")
			}
			out = append(out, ' ', ' ')
		case c == ',':
			// A comma followed only by whitespace and comments before } or ] is trailing.
			if trailingComma(data[i+1:]) {
				out = append(out, ' ')
			} else {
				out = append(out, c)
			}
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func trailingComma(rest []byte) bool {
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == '/' && i+1 < len(rest) && rest[i+1] == '/':
			for i < len(rest) && rest[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(rest) && rest[i+1] == '*':
			for i += 2; i+1 < len(rest) && !(rest[i] == '*' && rest[i+1] == '/'); i++ {
			}
			i++
		case c == '}' || c == ']':
			return true
		default:
			return false
		}
	}
	return false
}
