package findings

import (
	"slices"

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

// FirstSight scans a first-sight tool definition (canonical JSON, no baseline) with
// every rule, given the names of its server's tools, and returns the names of the rules
// that found something, sorted, once each: warrant.Config.FirstSight, the screen a bulk
// approval passes only tools with none.
func FirstSight(canonical []byte, siblings []string) ([]string, error) {
	fs, err := Introduced(warrant.KindTool, nil, canonical, siblings)
	if err != nil {
		return nil, err
	}
	var rules []string
	for _, f := range fs {
		if r := string(f.Rule); !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	slices.Sort(rules)
	return rules, nil
}
