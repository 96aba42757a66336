package lockfile

import (
	"encoding/json"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// RuleUngraded names a change that could not be graded because the locked definition is not
// in the snapshot: the lockfile holds hashes only. It is graded CRITICAL (fail closed).
const RuleUngraded warrant.Rule = "ungraded"

// ReportV2 is the graded difference between a version 2 lockfile and the live surface. Its
// JSON form is the output of agentgate diff --json and ci --json for a version 2 lockfile
// (docs/agentgate.md).
type ReportV2 struct {
	// LockfileVersion is 2.
	LockfileVersion int `json:"lockfileVersion"`
	// Drift is true when anything differs.
	Drift bool `json:"drift"`
	// Grade is the most severe grade of any change ("" when there is none).
	Grade warrant.Severity `json:"grade"`
	// Servers lists the servers that differ, sorted by name.
	Servers []ServerDiffV2 `json:"servers"`
	// PackageWarnings is advice about the servers' packages that is not drift: floating
	// specs, with the pinned command (absent when there is none).
	PackageWarnings []PackageWarning `json:"packageWarnings,omitempty"`
}

// ServerDiffV2 is how one server differs.
type ServerDiffV2 struct {
	Server string `json:"server"`
	// Change is Added (configured, not locked), Removed (locked, no longer configured) or
	// Changed.
	Change Change `json:"change"`
	// Grade is the most severe grade among the profiles.
	Grade warrant.Severity `json:"grade"`
	// Profiles lists the profiles that differ, sorted by name.
	Profiles []ProfileDiff `json:"profiles"`
	// Package is how the server's package differs from the locked one (absent when it does
	// not, or when the lockfile pins none).
	Package *PackageDiff `json:"package,omitempty"`
}

// ProfileDiff is how what one server shows one client differs.
type ProfileDiff struct {
	Profile           string           `json:"profile"`
	Change            Change           `json:"change"`
	LockedSurfaceHash string           `json:"lockedSurfaceHash"`
	LiveSurfaceHash   string           `json:"liveSurfaceHash"`
	Grade             warrant.Severity `json:"grade"`
	// Items lists what differs: instructions first, then tools, prompts, resources and
	// resource templates, each sorted by name (uri, uriTemplate).
	Items []ItemDiff `json:"items"`
}

// ItemDiff is one tool, prompt, resource, resource template or the instructions, changed.
type ItemDiff struct {
	// Kind is tool, prompt, resource, resourceTemplate or instructions.
	Kind warrant.Kind `json:"kind"`
	// Name is the tool's or prompt's name, the resource's uri or the template's uriTemplate
	// ("" for instructions).
	Name   string `json:"name"`
	Change Change `json:"change"`
	// Grade is the most severe of Changes.
	Grade warrant.Severity `json:"grade"`
	// Graded is false when the locked definition is not in the snapshot, so that the change
	// could not be graded rule by rule (it is then RuleUngraded, CRITICAL).
	Graded bool `json:"graded"`
	// Changes are the graded changes, most severe first (docs/drift-grading.md).
	Changes []warrant.Change `json:"changes"`
	// LockedDigest and LiveDigest are the digests on each side ("" on the absent side; the
	// instructionsHash for instructions).
	LockedDigest string `json:"lockedDigest"`
	LiveDigest   string `json:"liveDigest"`
	// Description is the word diff of a changed description (or instructions), when both
	// texts are known.
	Description *TextDiff `json:"description,omitempty"`
}

// CompareV2Options supplies the definitions behind the hashes.
type CompareV2Options struct {
	// Locked holds the definitions the lockfile was generated from (a snapshot); an entry
	// is used only if its digest matches the lockfile.
	Locked SnapshotV2
	// Live holds the definitions just listed (canonical, as LockProfile returns them).
	Live SnapshotV2
	// Packages holds, by server, how each server's package differs ([ComparePackage]); a
	// server with a package diff is reported as changed even when its surface is not.
	Packages map[string]*PackageDiff
}

// CompareV2 grades how live differs from locked, with the drift rules toolwarrant uses.
func CompareV2(locked, live *LockfileV2, opts CompareV2Options) *ReportV2 {
	r := &ReportV2{LockfileVersion: Version2, Servers: []ServerDiffV2{}}
	names := map[string]bool{}
	for _, n := range unionNames(locked.Servers, live.Servers) {
		names[n] = true
	}
	for n, d := range opts.Packages {
		if d != nil {
			names[n] = true
		}
	}
	for _, name := range sortedNames(names) {
		ls, inLocked := locked.Servers[name]
		vs, inLive := live.Servers[name]
		sd := ServerDiffV2{Server: name, Change: Changed}
		switch {
		case inLocked && !inLive:
			sd.Change = Removed
		case !inLocked && inLive:
			sd.Change = Added
		}
		for _, pn := range unionNames(ls.Profiles, vs.Profiles) {
			lp, inL := ls.Profiles[pn]
			vp, inV := vs.Profiles[pn]
			if inL && inV && lp.Equal(vp) {
				continue
			}
			ld, _ := opts.Locked.Find(name, pn)
			vd, _ := opts.Live.Find(name, pn)
			pd := ProfileDiff{Profile: pn, Change: Changed, LockedSurfaceHash: lp.SurfaceHash, LiveSurfaceHash: vp.SurfaceHash}
			switch {
			case inL && !inV:
				pd.Change = Removed
			case !inL && inV:
				pd.Change = Added
			}
			pd.Items = compareProfile(lp, vp, ld, vd, inL, inV)
			for _, it := range pd.Items {
				pd.Grade = max(pd.Grade, it.Grade)
			}
			sd.Profiles = append(sd.Profiles, pd)
			sd.Grade = max(sd.Grade, pd.Grade)
		}
		if pd := opts.Packages[name]; pd != nil {
			sd.Package = pd
			sd.Grade = max(sd.Grade, pd.Grade)
			if sd.Profiles == nil {
				sd.Profiles = []ProfileDiff{}
			}
		}
		if len(sd.Profiles) > 0 || sd.Package != nil {
			r.Servers = append(r.Servers, sd)
			r.Grade = max(r.Grade, sd.Grade)
		}
	}
	r.Drift = len(r.Servers) > 0
	return r
}

// side is one list of one kind on one side: entries by key, and definitions by key when
// their digest matches the entry.
type side struct {
	digests map[string]string
	descs   map[string]string // descriptionHash by key
	defs    map[string]json.RawMessage
}

func newSide(kind warrant.Kind, entries []ItemV2, tools []ToolV2, defs []json.RawMessage) side {
	s := side{digests: map[string]string{}, descs: map[string]string{}, defs: map[string]json.RawMessage{}}
	for _, t := range tools {
		s.digests[t.Name], s.descs[t.Name] = t.Digest, t.DescriptionHash
	}
	for _, it := range entries {
		s.digests[it.Key], s.descs[it.Key] = it.Digest, it.DescriptionHash
	}
	for _, d := range defs {
		var key string
		var digest string
		if kind == KindTool {
			dg, _, err := warrant.DigestTool(d)
			if err != nil {
				continue
			}
			def, err := ParseTool(d)
			if err != nil {
				continue
			}
			key, digest = def.Name, string(dg)
		} else {
			it, _, err := LockItem(kind, d)
			if err != nil {
				continue
			}
			key, digest = it.Key, it.Digest
		}
		if s.digests[key] == digest {
			s.defs[key] = d
		}
	}
	return s
}

func compareProfile(lp, vp ProfileV2, ld, vd Definitions, inLocked, inLive bool) []ItemDiff {
	var out []ItemDiff
	if inLocked && inLive && lp.InstructionsHash != vp.InstructionsHash {
		it := ItemDiff{Kind: KindInstructions, Change: Changed, Graded: true, LockedDigest: lp.InstructionsHash, LiveDigest: vp.InstructionsHash}
		var old *string
		if ld.Instructions != nil && hashString(*ld.Instructions) == lp.InstructionsHash {
			old = ld.Instructions
		} else if lp.InstructionsHash == hashString("") {
			old = nil
		} else {
			unknown := "" // the locked text is not known; graded against an empty one
			old = &unknown
			it.Graded = false
		}
		var live *string
		if vd.Instructions != nil && hashString(*vd.Instructions) == vp.InstructionsHash {
			live = vd.Instructions
		}
		d := warrant.GradeInstructions(old, live)
		if !it.Graded {
			d = ungraded("the locked instructions are not in the snapshot", d)
		}
		it.Changes, it.Grade = d.Changes, d.Grade
		if live != nil {
			it.Description = textDiff(textOf(old, it.Graded), *live)
		}
		out = append(out, it)
	}
	var lockedNames, liveNames []string
	for _, t := range lp.Tools {
		lockedNames = append(lockedNames, t.Name)
	}
	for _, t := range vp.Tools {
		liveNames = append(liveNames, t.Name)
	}
	names := warrant.NewNames(append(lockedNames, liveNames...))
	kinds := []struct {
		kind     warrant.Kind
		lockedIt []ItemV2
		liveIt   []ItemV2
		lockedT  []ToolV2
		liveT    []ToolV2
		ldefs    []json.RawMessage
		vdefs    []json.RawMessage
	}{
		{kind: KindTool, lockedT: lp.Tools, liveT: vp.Tools, ldefs: ld.Tools, vdefs: vd.Tools},
		{kind: KindPrompt, lockedIt: lp.Prompts, liveIt: vp.Prompts, ldefs: ld.Prompts, vdefs: vd.Prompts},
		{kind: KindResource, lockedIt: lp.Resources, liveIt: vp.Resources, ldefs: ld.Resources, vdefs: vd.Resources},
		{kind: KindResourceTemplate, lockedIt: lp.ResourceTemplates, liveIt: vp.ResourceTemplates, ldefs: ld.ResourceTemplates, vdefs: vd.ResourceTemplates},
	}
	for _, k := range kinds {
		l := newSide(k.kind, k.lockedIt, k.lockedT, k.ldefs)
		v := newSide(k.kind, k.liveIt, k.liveT, k.vdefs)
		keys := map[string]bool{}
		for key := range l.digests {
			keys[key] = true
		}
		for key := range v.digests {
			keys[key] = true
		}
		sorted := sortedNames(keys)
		for _, key := range sorted {
			ldg, inL := l.digests[key]
			vdg, inV := v.digests[key]
			if inL && inV && ldg == vdg {
				continue
			}
			it := ItemDiff{Kind: k.kind, Name: key, LockedDigest: ldg, LiveDigest: vdg, Graded: true}
			switch {
			case !inV:
				it.Change = Removed
				d := warrant.GradeRemoved(k.kind)
				it.Changes, it.Grade = d.Changes, d.Grade
			case !inL:
				it.Change = Added
				it.grade(k.kind, nil, v.defs[key], names)
			default:
				it.Change = Changed
				old, ok := l.defs[key]
				if !ok {
					it.Graded = false
					var fields []string
					if l.descs[key] != v.descs[key] {
						fields = append(fields, "description")
					}
					it.Changes = ungraded("the locked definition is not in the snapshot (changed: "+joinOr(fields, "members other than the description")+")", warrant.Drift{}).Changes
					it.Grade = warrant.Critical
				} else {
					it.grade(k.kind, old, v.defs[key], names)
				}
				if l.descs[key] != v.descs[key] {
					if nd, ok := descriptionOf(v.defs[key]); ok {
						var od *string
						if s, ok := descriptionOf(old); ok && old != nil {
							od = &s
						}
						it.Description = textDiff(od, nd)
					}
				}
			}
			out = append(out, it)
		}
	}
	return out
}

// grade fills it from warrant's grading of old → live; a live definition that is missing
// (the caller gave no live definitions) is graded as unknown.
func (it *ItemDiff) grade(kind warrant.Kind, old, live json.RawMessage, names *warrant.Names) {
	if live == nil {
		it.Graded = false
		d := ungraded("the live definition was not supplied", warrant.Drift{})
		it.Changes, it.Grade = d.Changes, d.Grade
		return
	}
	var oldArg []byte
	if old != nil {
		oldArg = old
	}
	d, err := warrant.GradeItem(kind, oldArg, live, warrant.GradeOptions{Names: names})
	if err != nil {
		it.Graded = false
		d = ungraded(fmt.Sprintf("it cannot be graded: %v", err), warrant.Drift{})
	}
	it.Changes, it.Grade = d.Changes, d.Grade
}

// ungraded adds the fail-closed RuleUngraded change to d.
func ungraded(why string, d warrant.Drift) warrant.Drift {
	c := warrant.Change{Rule: RuleUngraded, Severity: warrant.Critical, Kind: warrant.Changed,
		Reason: why + "; graded CRITICAL because it cannot be graded rule by rule (commit agentgate.snapshot.json with the lockfile)"}
	d.Changes = append([]warrant.Change{c}, d.Changes...)
	d.Grade = warrant.Critical
	return d
}

func joinOr(fields []string, none string) string {
	if len(fields) == 0 {
		return none
	}
	out := fields[0]
	for _, f := range fields[1:] {
		out += ", " + f
	}
	return out
}

func descriptionOf(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "", false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "", false
	}
	var s string
	if d, ok := obj["description"]; ok && string(d) != "null" {
		if json.Unmarshal(d, &s) != nil {
			return "", false
		}
	}
	return s, true
}

func textOf(s *string, known bool) *string {
	if !known {
		return nil
	}
	if s == nil {
		empty := ""
		return &empty
	}
	return s
}

func textDiff(old *string, live string) *TextDiff {
	td := &TextDiff{New: live}
	if old != nil {
		o := *old
		td.Old = &o
		td.Ops = WordDiff(o, live)
	}
	return td
}

// Items counts the changed items of r, a changed package as one.
func (r *ReportV2) Items() int {
	n := 0
	for _, s := range r.Servers {
		if s.Package != nil {
			n++
		}
		for _, p := range s.Profiles {
			n += len(p.Items)
		}
	}
	return n
}

// AtLeast counts the changed items (a changed package as one) graded at least sev.
func (r *ReportV2) AtLeast(sev warrant.Severity) int {
	n := 0
	for _, s := range r.Servers {
		if s.Package != nil && s.Package.Grade >= sev {
			n++
		}
		for _, p := range s.Profiles {
			for _, it := range p.Items {
				if it.Grade >= sev {
					n++
				}
			}
		}
	}
	return n
}
