package findings

import (
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Introduced returns the findings of the definition after that the definition before did
// not have (the same rule at the same pointer), for a changed definition: what was
// accepted with before was read then. A nil before (a definition seen for the first time)
// returns every finding of after. Hidden characters (RuleHiddenCharacters) are left out:
// drift grading and the inspections already report them, character by character.
//
// after must be a JSON object (ScanObject's error otherwise); a before that is not one
// counts as absent.
func Introduced(kind warrant.Kind, before, after []byte, siblings []string) ([]Finding, error) {
	now, err := ScanObject(kind, after, siblings)
	if err != nil {
		return nil, err
	}
	had := map[string]bool{}
	if before != nil {
		old, _ := ScanObject(kind, before, siblings)
		for _, f := range old {
			had[string(f.Rule)+"\x00"+f.Pointer] = true
		}
	}
	out := now[:0:0]
	for _, f := range now {
		if f.Rule != RuleHiddenCharacters && !had[string(f.Rule)+"\x00"+f.Pointer] {
			out = append(out, f)
		}
	}
	return out, nil
}
