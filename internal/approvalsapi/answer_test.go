package approvalsapi

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEscapedLen: the size of an answer as the Lambda runtime carries it, a JSON string
// with HTML escaping, is computed exactly.
func TestEscapedLen(t *testing.T) {
	for _, s := range []string{"", "plain", `{"a":"b\\c"}`, "line\nbreak\ttab\r", "<tag>&amp;", "\x01\x1f", "naïve ☃"} {
		want, _ := json.Marshal(s) // encoding/json's default: what aws-lambda-go uses
		if got := escapedLen([]byte(s)); got != len(want)-2 {
			t.Errorf("escapedLen(%q) = %d, want %d", s, got, len(want)-2)
		}
	}
}

// TestAnswerTooLarge: an answer that would exceed Lambda's response limit is refused with
// 413 and a reason, never sent (API Gateway would answer 500 for it).
func TestAnswerTooLarge(t *testing.T) {
	big := strings.Repeat(`"`, MaxAnswerBytes/2+1) // each quote doubles when escaped
	if _, err := encodeAnswer(map[string]string{"x": big}); !errors.Is(err, errTooLarge) {
		t.Fatalf("encodeAnswer of %d quotes: %v", len(big), err)
	}
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]string{"x": big})
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "Lambda cannot return it") || rec.Body.Len() > 1000 {
		t.Errorf("writeJSON: %d %.200s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	writeJSON(rec, 200, map[string]string{"x": strings.Repeat("a", MaxAnswerBytes-100)})
	if rec.Code != 200 {
		t.Errorf("an answer within the limit: %d", rec.Code)
	}
}
