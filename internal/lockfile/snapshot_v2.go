package lockfile

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// SnapshotVersion2 is the snapshotVersion that goes with lockfile version 2.
const SnapshotVersion2 = 2

// SnapshotV2 is the plaintext companion of a version 2 lockfile: per server and profile,
// every pinned object as served (canonical) and the instructions, so that a later diff can
// grade a change against what was locked. server → profile → definitions.
type SnapshotV2 map[string]map[string]Definitions

// Find returns the definitions of server under profile.
func (s SnapshotV2) Find(server, profile string) (Definitions, bool) {
	d, ok := s[server][profile]
	return d, ok
}

// MarshalSnapshotV2 writes s deterministically: servers and profiles sorted, objects in
// the order given (LockProfile's), each object's canonical JSON indented by 2 spaces, a
// trailing newline.
//
//	{
//	  "snapshotVersion": 2,
//	  "servers": {
//	    "NAME": {
//	      "profiles": {
//	        "generic": {
//	          "instructions": "..." or null,
//	          "tools": [...], "prompts": [...], "resources": [...], "resourceTemplates": [...]
//	        }
//	      }
//	    }
//	  }
//	}
func MarshalSnapshotV2(s SnapshotV2) ([]byte, error) {
	w := &writer{}
	w.raw("{\n  \"snapshotVersion\": 2,\n  \"servers\": {")
	for i, name := range sortedNames(s) {
		w.sep(i, "\n    ")
		w.str(name)
		w.raw(": {\n      \"profiles\": {")
		for j, pn := range sortedNames(s[name]) {
			d := s[name][pn]
			w.sep(j, "\n        ")
			w.str(pn)
			w.raw(": {\n          \"instructions\": ")
			if d.Instructions == nil {
				w.raw("null")
			} else {
				w.str(*d.Instructions)
			}
			for _, l := range []struct {
				name string
				objs []json.RawMessage
			}{{"tools", d.Tools}, {"prompts", d.Prompts}, {"resources", d.Resources}, {"resourceTemplates", d.ResourceTemplates}} {
				w.raw(",\n          ")
				w.str(l.name)
				w.raw(": [")
				for k, o := range l.objs {
					c, err := canon.Transform(o)
					if err != nil {
						return nil, fmt.Errorf("%w snapshot: server %q profile %q: %v", ErrInvalid, name, pn, err)
					}
					var ind bytes.Buffer
					if err := json.Indent(&ind, c, "            ", "  "); err != nil {
						return nil, fmt.Errorf("%w snapshot: %v", ErrInvalid, err)
					}
					w.sep(k, "\n            ")
					w.raw(ind.String())
				}
				if len(l.objs) > 0 {
					w.raw("\n          ")
				}
				w.raw("]")
			}
			w.raw("\n        }")
		}
		if len(s[name]) > 0 {
			w.raw("\n      ")
		}
		w.raw("}\n    }")
	}
	if len(s) > 0 {
		w.raw("\n  ")
	}
	w.raw("}\n}\n")
	if w.err != nil {
		return nil, fmt.Errorf("%w snapshot: %v", ErrInvalid, w.err)
	}
	return w.b, nil
}

// ParseSnapshotV2 reads a snapshot written by MarshalSnapshotV2. Objects are kept in
// canonical form; unknown fields are warnings; another snapshotVersion is refused.
func ParseSnapshotV2(data []byte) (SnapshotV2, []Warning, error) {
	top, err := topLevel(data, "snapshot", "not a JSON object")
	if err != nil {
		return nil, nil, err
	}
	if string(top["snapshotVersion"]) != "2" {
		return nil, nil, fmt.Errorf("%w snapshot: snapshotVersion %s is not 2", ErrInvalid, orMissing(top["snapshotVersion"]))
	}
	p := &parser{what: "snapshot"}
	p.unknown("", top, "snapshotVersion", "servers")
	out := SnapshotV2{}
	servers := p.object("servers", top["servers"])
	for _, name := range sortedNames(servers) {
		path := "servers." + name
		srv := p.object(path, servers[name])
		p.unknown(path, srv, "profiles")
		profiles := p.object(path+".profiles", srv["profiles"])
		out[name] = map[string]Definitions{}
		for _, pn := range sortedNames(profiles) {
			pp := path + ".profiles." + pn
			obj := p.object(pp, profiles[pn])
			p.unknown(pp, obj, "instructions", "tools", "prompts", "resources", "resourceTemplates")
			var d Definitions
			if raw, ok := obj["instructions"]; ok && string(raw) != "null" {
				var s string
				if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
					p.fail(pp+".instructions", "must be a string or null")
				}
				d.Instructions = &s
			}
			arrays := func(member string) []json.RawMessage {
				var elems []json.RawMessage
				raw, ok := obj[member]
				if p.err != nil || !ok {
					return nil
				}
				if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
					p.fail(pp+"."+member, "must be an array")
				}
				return elems
			}
			d.Tools, d.Prompts, d.Resources, d.ResourceTemplates = arrays("tools"), arrays("prompts"), arrays("resources"), arrays("resourceTemplates")
			if p.err != nil {
				return nil, nil, p.err
			}
			out[name][pn] = d
		}
	}
	if p.err != nil {
		return nil, nil, p.err
	}
	sortWarnings(p.warnings)
	return out, p.warnings, nil
}
