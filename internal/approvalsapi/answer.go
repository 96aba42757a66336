package approvalsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// MaxAnswerBytes bounds one answer as Lambda carries it. A synchronous invocation's
// response may not exceed 6 MB (6,291,456 bytes), and the answer travels inside it as a
// JSON string — every quote and backslash escaped, control and HTML characters as \uXXXX — next to
// the status and headers; 64 KiB is left for those. API Gateway answers 500 for a Lambda
// response over the limit, so the handler must never produce one.
const MaxAnswerBytes = 6*1024*1024 - 64*1024

// errTooLarge is an answer over MaxAnswerBytes.
var errTooLarge = errors.New("answer too large for one Lambda response")

// encodeAnswer encodes v and checks its size as Lambda carries it.
func encodeAnswer(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if n := escapedLen(buf.Bytes()); n > MaxAnswerBytes {
		return nil, fmt.Errorf("%w: %d bytes as a JSON string, over %d", errTooLarge, n, MaxAnswerBytes)
	}
	return buf.Bytes(), nil
}

// escapedLen is len(b) once escaped as a JSON string body (without the quotes).
func escapedLen(b []byte) int {
	n := len(b)
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&': // \u00XX; the Lambda runtime's encoder escapes HTML characters too
			n += 5
		}
	}
	return n
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	b, err := encodeAnswer(v)
	if err != nil {
		status = http.StatusInternalServerError
		msg := "could not encode the answer"
		if errors.Is(err, errTooLarge) {
			status, msg = http.StatusRequestEntityTooLarge, err.Error()+": Lambda cannot return it; the tool's definition is too large to be shown through the approvals API (read it with toolwarrant show on the catalog, or from the catalog blob bucket by its digest)"
		}
		b, _ = json.Marshal(map[string]string{"error": msg})
		b = append(b, '\n')
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_, _ = rw.Write(b)
}
