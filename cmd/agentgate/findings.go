package main

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentgate-dev/agentgate/internal/findings"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// First-sight findings (docs/findings.md): what a definition tells the model, read on first
// sight. lock prints them for every definition it pins for the first time; ci and diff add
// them to the grade of every added or changed item, so a new tool that tells the model to
// read ~/.ssh is CRITICAL, not only "new".

// sightedFinding is one finding on one definition, for lock's output.
type sightedFinding struct {
	Server  string       `json:"server"`
	Profile string       `json:"profile"`
	Kind    warrant.Kind `json:"kind"`
	// Name is the tool's or prompt's name, the resource's uri ("" for instructions).
	Name string `json:"name"`
	findings.Finding
}

// keyOf returns the identifying member of a definition object (name, uri or uriTemplate).
func keyOf(kind warrant.Kind, raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	member := "name"
	switch kind {
	case lockfile.KindResource:
		member = "uri"
	case lockfile.KindResourceTemplate:
		member = "uriTemplate"
	}
	var s string
	_ = json.Unmarshal(obj[member], &s)
	return s
}

// definitionsOf lists the objects of one profile's definitions by kind.
func definitionsOf(d lockfile.Definitions) []struct {
	kind warrant.Kind
	list []json.RawMessage
} {
	return []struct {
		kind warrant.Kind
		list []json.RawMessage
	}{{lockfile.KindTool, d.Tools}, {lockfile.KindPrompt, d.Prompts}, {lockfile.KindResource, d.Resources}, {lockfile.KindResourceTemplate, d.ResourceTemplates}}
}

// siblingsOf lists the names of d's tools, for the cross-tool rule.
func siblingsOf(d lockfile.Definitions) []string {
	var out []string
	for _, t := range d.Tools {
		out = append(out, keyOf(lockfile.KindTool, t))
	}
	return out
}

// objectOf returns the object of kind and name in d (nil when there is none), or for the
// instructions an object holding them, as findings reads it.
func objectOf(d lockfile.Definitions, kind warrant.Kind, name string) json.RawMessage {
	if kind == lockfile.KindInstructions {
		if d.Instructions == nil {
			return nil
		}
		raw, _ := json.Marshal(map[string]string{"description": *d.Instructions}) // ScanObject reads it as Description: pointer /instructions
		return raw
	}
	for _, group := range definitionsOf(d) {
		if group.kind != kind {
			continue
		}
		for _, raw := range group.list {
			if keyOf(kind, raw) == name {
				return raw
			}
		}
	}
	return nil
}

// introduced returns the findings of the item of kind and name in live that the same item
// in locked (nil: none) did not have; hidden characters are left to drift's
// suspicious-text-added, so nothing is counted twice.
func introduced(live lockfile.Definitions, locked *lockfile.Definitions, kind warrant.Kind, name string) []findings.Finding {
	after := objectOf(live, kind, name)
	if after == nil {
		return nil
	}
	var before json.RawMessage
	if locked != nil {
		before = objectOf(*locked, kind, name)
	}
	fk := kind
	if kind == lockfile.KindInstructions {
		fk = findings.KindInstructions
	}
	fs, err := findings.Introduced(fk, before, after, siblingsOf(live))
	if err != nil {
		return nil
	}
	return fs
}

// addFindings adds the findings of every added or changed item's live definition to its
// changes and raises the grades above it. A changed item keeps only the findings its
// locked definition (when the snapshot has it) did not have: what was pinned was read
// then.
func addFindings(rep *lockfile.ReportV2, live, locked lockfile.SnapshotV2) {
	for si := range rep.Servers {
		s := &rep.Servers[si]
		for pi := range s.Profiles {
			p := &s.Profiles[pi]
			defs, ok := live[s.Server][p.Profile]
			if !ok {
				continue
			}
			var was *lockfile.Definitions
			if d, ok := locked[s.Server][p.Profile]; ok {
				was = &d
			}
			for ii := range p.Items {
				it := &p.Items[ii]
				if it.Change == lockfile.Removed {
					continue
				}
				before := was
				if it.Change != lockfile.Changed {
					before = nil
				}
				for _, f := range introduced(defs, before, it.Kind, it.Name) {
					it.Changes = append(it.Changes, warrant.Change{Rule: f.Rule, Severity: f.Severity, Kind: warrant.Added, Pointer: f.Pointer,
						Reason: fmt.Sprintf("%s (first-sight finding: %s)", f.Reason, f.Excerpt)})
					it.Grade = max(it.Grade, f.Severity)
				}
				sort.SliceStable(it.Changes, func(i, j int) bool { return it.Changes[i].Severity > it.Changes[j].Severity })
				p.Grade = max(p.Grade, it.Grade)
			}
			s.Grade = max(s.Grade, p.Grade)
		}
		rep.Grade = max(rep.Grade, s.Grade)
	}
}

// firstSight scans every definition of snap that old does not pin already (all of them for
// a new lockfile): what lock shows before it is committed.
func firstSight(snap lockfile.SnapshotV2, next, old *lockfile.LockfileV2) []sightedFinding {
	seen := map[string]bool{}
	if old != nil {
		for _, s := range old.Servers {
			for _, p := range s.Profiles {
				for _, t := range p.Tools {
					seen[t.Digest] = true
				}
				for _, x := range p.Prompts {
					seen[x.Digest] = true
				}
				for _, x := range p.Resources {
					seen[x.Digest] = true
				}
				for _, x := range p.ResourceTemplates {
					seen[x.Digest] = true
				}
				seen["instructions\x00"+p.InstructionsHash] = true
			}
		}
	}
	var out []sightedFinding
	dup := map[string]bool{}
	add := func(server, profile string, kind warrant.Kind, name string, fs []findings.Finding) {
		for _, f := range fs {
			k := server + "\x00" + string(kind) + "\x00" + name + "\x00" + string(f.Rule) + "\x00" + f.Pointer
			if dup[k] {
				continue // the same definition under another profile
			}
			dup[k] = true
			out = append(out, sightedFinding{Server: server, Profile: profile, Kind: kind, Name: name, Finding: f})
		}
	}
	for _, server := range sortedKeys(snap) {
		ls := next.Servers[server]
		for _, profile := range ls.SortedProfiles() {
			defs := snap[server][profile]
			lp := ls.Profiles[profile]
			if defs.Instructions != nil && !seen["instructions\x00"+lp.InstructionsHash] {
				add(server, profile, lockfile.KindInstructions, "", introduced(defs, nil, lockfile.KindInstructions, ""))
			}
			digests := map[string]string{}
			for _, t := range lp.Tools {
				digests["tool\x00"+t.Name] = t.Digest
			}
			for _, x := range lp.Prompts {
				digests["prompt\x00"+x.Key] = x.Digest
			}
			for _, x := range lp.Resources {
				digests["resource\x00"+x.Key] = x.Digest
			}
			for _, x := range lp.ResourceTemplates {
				digests["resourceTemplate\x00"+x.Key] = x.Digest
			}
			for _, group := range definitionsOf(defs) {
				for _, raw := range group.list {
					name := keyOf(group.kind, raw)
					if seen[digests[string(group.kind)+"\x00"+name]] {
						continue
					}
					add(server, profile, group.kind, name, introduced(defs, nil, group.kind, name))
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Severity != out[j].Severity {
			return out[i].Severity > out[j].Severity
		}
		if out[i].Server != out[j].Server {
			return lockfile.Less(out[i].Server, out[j].Server)
		}
		return lockfile.Less(out[i].Name, out[j].Name)
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lockfile.Less(keys[i], keys[j]) })
	return keys
}

// reportFirstSight prints lock's findings on stderr, most severe first, and a summary.
func (a *app) reportFirstSight(fs []sightedFinding) {
	counts := map[warrant.Severity]int{}
	for _, f := range fs {
		counts[f.Severity]++
		what := string(f.Kind)
		if f.Name != "" {
			what += fmt.Sprintf(" %q", visible(f.Name))
		}
		a.warnf("server %q (%s) %s: %s %s at %s: %s — %s", f.Server, f.Profile, what, f.Severity, f.Rule, visible(f.Pointer), f.Reason, f.Excerpt)
	}
	if len(fs) > 0 {
		a.warnf("%d first-sight %s (%d CRITICAL, %d WARNING, %d INFO) in what was just pinned: read them before you commit the lockfile (docs/findings.md)",
			len(fs), plural(len(fs), "finding", "findings"), counts[warrant.Critical], counts[warrant.Warning], counts[warrant.Info])
	}
}
