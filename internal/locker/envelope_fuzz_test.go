package locker

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

var envelopeSeeds = []string{
	`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`,
	`{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":["x"],"artifacts":[{}],"budget_usd":1.5,"allowed_paths":["a/**"]}`,
	`{"schema":"locker.handoff.v1","budget_usd":true}`,
	`{"schema":"locker.handoff.v2"}`,
	`[]`, `"x"`, `{`, "\xff", "\ufeff{}", `{"schema":"locker.handoff.v1","task_id":""}`,
}

// FuzzEnvelopeError: never panics, and accepts only what its own rules accept — valid UTF-8,
// one JSON object with the schema and every required field of the right type.
func FuzzEnvelopeError(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		reason := EnvelopeError(payload)
		if reason != "" {
			return
		}
		if !utf8.Valid(payload) || !json.Valid(payload) {
			t.Fatalf("accepted invalid JSON %q", payload)
		}
		var obj map[string]any
		if err := json.Unmarshal(payload, &obj); err != nil {
			t.Fatalf("accepted a non-object %q: %v", payload, err)
		}
		if obj["schema"] != EnvelopeSchema {
			t.Fatalf("accepted schema %v", obj["schema"])
		}
		for _, f := range []string{"task_id", "from_agent", "to_agent"} {
			if s, ok := obj[f].(string); !ok || s == "" {
				t.Fatalf("accepted %s = %v", f, obj[f])
			}
		}
		if _, ok := obj["constraints"].([]any); !ok {
			t.Fatalf("accepted constraints = %v", obj["constraints"])
		}
		if _, ok := obj["artifacts"].([]any); !ok {
			t.Fatalf("accepted artifacts = %v", obj["artifacts"])
		}
		switch obj["budget_usd"].(type) {
		case nil, float64:
		default:
			t.Fatalf("accepted budget_usd = %v", obj["budget_usd"])
		}
	})
}
