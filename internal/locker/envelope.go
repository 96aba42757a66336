package locker

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// EnvelopeSchema is the only block-0 schema the daemon accepts.
const EnvelopeSchema = "locker.handoff.v1"

// EnvelopeError returns why payload is not a valid locker.handoff.v1 envelope, or "" when it
// is. The reasons are the wire contract's exact texts (docs/spec/padlock-wire.md §1.6); the daemon
// prefixes them with "block 0 invalid envelope: ".
//
// Required fields are checked in the contract's order: task_id, from_agent, to_agent
// (non-empty strings), constraints (array of strings), artifacts (array of objects),
// budget_usd (number or null; booleans refused). allowed_paths is optional: absent, null or an
// array of strings. Extra keys are allowed. Unlike the Python peer, NaN and Infinity literals
// are refused as "payload must be JSON": they are not JSON.
func EnvelopeError(payload []byte) string {
	if !utf8.Valid(payload) {
		return "payload must be JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "payload must be JSON"
	}
	if _, err := dec.Token(); err != io.EOF {
		return "payload must be JSON" // trailing data after the value
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "payload must be a JSON object"
	}
	if s, ok := obj["schema"].(string); !ok || s != EnvelopeSchema {
		return "schema must be '" + EnvelopeSchema + "'"
	}
	checks := []struct {
		field string
		ok    func(any) bool
	}{
		{"task_id", nonEmptyString},
		{"from_agent", nonEmptyString},
		{"to_agent", nonEmptyString},
		{"constraints", stringList},
		{"artifacts", objectList},
		{"budget_usd", numberOrNull},
	}
	for _, c := range checks {
		val, present := obj[c.field]
		if !present {
			return "missing required field '" + c.field + "'"
		}
		if !c.ok(val) {
			return "field '" + c.field + "' has an invalid type/value"
		}
	}
	if ap, present := obj["allowed_paths"]; present && ap != nil && !stringList(ap) {
		return "field 'allowed_paths' has an invalid type/value (expected list[str] or null)"
	}
	return ""
}

func nonEmptyString(v any) bool { s, ok := v.(string); return ok && s != "" }

func stringList(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

func objectList(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		if _, ok := x.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func numberOrNull(v any) bool {
	if v == nil {
		return true
	}
	_, ok := v.(json.Number) // booleans decode as bool, never as a number
	return ok
}
