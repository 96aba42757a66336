package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Versions lists the lockfileVersions this package reads.
var Versions = []int{Version, Version2}

// ReadVersion returns the lockfileVersion of a lockfile, refusing (with an error wrapping
// [ErrInvalid]) text that is not an acceptable JSON object, a missing version and a version
// this build does not understand.
func ReadVersion(data []byte) (int, error) {
	top, err := topLevelLockfile(data)
	if err != nil {
		return 0, err
	}
	raw, ok := top["lockfileVersion"]
	if !ok {
		return 0, fmt.Errorf("%w lockfile: lockfileVersion is missing; this build understands versions 1 and 2", ErrInvalid)
	}
	switch string(raw) {
	case "1":
		return Version, nil
	case "2":
		return Version2, nil
	}
	return 0, fmt.Errorf("%w lockfile: lockfileVersion %s is not supported; this build understands versions 1 and 2 (upgrade agentgate, or regenerate with agentgate lock)", ErrInvalid, raw)
}

// ParseV2 reads an agentgate.lock document of version 2, as strictly as [Parse] reads
// version 1: it refuses text RFC 8785 does not accept, another lockfileVersion, missing or
// mistyped fields, hashes that are not 64 lowercase hex digits, digests that are not
// "sha256:" and 64, a nameHash that is not the hash of its name, duplicate or empty keys,
// client capabilities that are not a JSON object, a surfaceHash that does not match its
// entries, and a package that [Package.Validate] refuses. Unknown fields and a layout other than [LockfileV2.Marshal]'s are warnings.
func ParseV2(data []byte) (*LockfileV2, []Warning, error) {
	top, err := topLevelLockfile(data)
	if err != nil {
		return nil, nil, err
	}
	if string(top["lockfileVersion"]) != "2" {
		return nil, nil, fmt.Errorf("%w lockfile: lockfileVersion %s is not 2", ErrInvalid, orMissing(top["lockfileVersion"]))
	}
	p := &parser{}
	lf := &LockfileV2{Servers: map[string]ServerV2{}}
	var servers map[string]json.RawMessage
	lf.GeneratedBy, lf.GeneratedAt, servers = p.header(top)
	for _, name := range sortedNames(servers) {
		path := "servers." + name
		obj := p.object(path, servers[name])
		p.unknown(path, obj, "package", "profiles")
		s := ServerV2{Profiles: map[string]ProfileV2{}}
		if raw, ok := obj["package"]; ok {
			s.Package = p.pkg(path+".package", raw)
		}
		profiles := p.object(path+".profiles", obj["profiles"])
		for _, pn := range sortedNames(profiles) {
			pp := path + ".profiles." + pn
			if p.err == nil && pn == "" {
				p.fail(pp, "has an empty profile name")
			}
			prof := p.profile(pp, profiles[pn])
			if p.err != nil {
				break
			}
			s.Profiles[pn] = prof
		}
		if p.err == nil && len(s.Profiles) == 0 {
			p.fail(path+".profiles", "is empty; a server is locked under at least one profile")
		}
		if p.err != nil {
			break
		}
		lf.Servers[name] = s
	}
	if err := p.done(data, lf.Marshal, "indentation, field order, entry order or time format"); err != nil {
		return nil, nil, err
	}
	return lf, p.warnings, nil
}

func (p *parser) profile(path string, raw json.RawMessage) ProfileV2 {
	obj := p.object(path, raw)
	p.unknown(path, obj, "client", "surfaceHash", "instructionsHash", "tools", "prompts", "resources", "resourceTemplates")
	var prof ProfileV2
	client := p.object(path+".client", obj["client"])
	p.unknown(path+".client", client, "protocolVersion", "capabilities")
	prof.Client.ProtocolVersion = p.str(path+".client.protocolVersion", client["protocolVersion"])
	if p.err == nil {
		caps := client["capabilities"]
		if len(caps) == 0 || caps[0] != '{' {
			p.fail(path+".client.capabilities", "is missing or not a JSON object")
		}
		prof.Client.Capabilities = bytes.Clone(caps) // a member of canonical JSON is canonical
	}
	prof.SurfaceHash = p.hash(path+".surfaceHash", obj["surfaceHash"])
	prof.InstructionsHash = p.hash(path+".instructionsHash", obj["instructionsHash"])

	for i, tobj := range p.list(path+".tools", obj["tools"]) {
		tp := fmt.Sprintf("%s.tools[%d]", path, i)
		p.unknown(tp, tobj, "name", "nameHash", "descriptionHash", "inputSchemaHash", "digest")
		t := ToolV2{Tool: Tool{
			Name:            p.str(tp+".name", tobj["name"]),
			NameHash:        p.hash(tp+".nameHash", tobj["nameHash"]),
			DescriptionHash: p.hash(tp+".descriptionHash", tobj["descriptionHash"]),
			InputSchemaHash: p.hash(tp+".inputSchemaHash", tobj["inputSchemaHash"]),
		}, Digest: p.digest(tp+".digest", tobj["digest"])}
		if p.err == nil && t.NameHash != hashString(t.Name) {
			p.fail(tp+".nameHash", fmt.Sprintf("is not the SHA-256 of the name %q", t.Name))
		}
		prof.Tools = append(prof.Tools, t)
	}
	items := func(list string, key string, fields ...string) []ItemV2 {
		var out []ItemV2
		for i, o := range p.list(path+"."+list, obj[list]) {
			ip := fmt.Sprintf("%s.%s[%d]", path, list, i)
			p.unknown(ip, o, append([]string{key, "descriptionHash", "digest"}, fields...)...)
			it := ItemV2{Key: p.str(ip+"."+key, o[key]), DescriptionHash: p.hash(ip+".descriptionHash", o["descriptionHash"]), Digest: p.digest(ip+".digest", o["digest"])}
			for _, f := range fields {
				switch f {
				case "argumentsHash":
					it.ArgumentsHash = p.hash(ip+".argumentsHash", o["argumentsHash"])
				case "name":
					it.Name = p.anyStr(ip+".name", o["name"])
				}
			}
			out = append(out, it)
		}
		return out
	}
	prof.Prompts = items("prompts", "name", "argumentsHash")
	prof.Resources = items("resources", "uri", "name")
	prof.ResourceTemplates = items("resourceTemplates", "uriTemplate", "name")
	if p.err != nil {
		return prof
	}

	sortedTools := append([]ToolV2(nil), prof.Tools...)
	sort.SliceStable(sortedTools, func(i, j int) bool { return Less(sortedTools[i].Name, sortedTools[j].Name) })
	for i := 1; i < len(sortedTools); i++ {
		if sortedTools[i].Name == sortedTools[i-1].Name {
			p.fail(path+".tools", fmt.Sprintf("has two tools named %q", sortedTools[i].Name))
		}
	}
	reordered := !sameToolOrder(prof.Tools, sortedTools)
	prof.Tools = sortedTools
	for _, l := range []struct {
		name  string
		items *[]ItemV2
	}{{"prompts", &prof.Prompts}, {"resources", &prof.Resources}, {"resourceTemplates", &prof.ResourceTemplates}} {
		sorted := append([]ItemV2(nil), (*l.items)...)
		sort.SliceStable(sorted, func(i, j int) bool { return Less(sorted[i].Key, sorted[j].Key) })
		for i := range sorted {
			if i > 0 && sorted[i].Key == sorted[i-1].Key {
				p.fail(path+"."+l.name, fmt.Sprintf("has two entries for %q", sorted[i].Key))
			}
			if sorted[i] != (*l.items)[i] {
				reordered = true
			}
		}
		*l.items = sorted
	}
	if p.err == nil && prof.surfaceHash() != prof.SurfaceHash {
		p.fail(path+".surfaceHash", "does not match its entries (edited by hand or badly merged?); run agentgate lock to regenerate")
	}
	if p.err == nil && reordered {
		p.warn(path, "entries not sorted; agentgate lock rewrites them in order")
	}
	return prof
}

func sameToolOrder(a, b []ToolV2) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// list reads an array of objects; absent or null is refused.
func (p *parser) list(path string, raw json.RawMessage) []map[string]json.RawMessage {
	if p.err != nil {
		return nil
	}
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		p.fail(path, "is missing or not an array")
		return nil
	}
	out := make([]map[string]json.RawMessage, 0, len(elems))
	for i, e := range elems {
		o := p.object(fmt.Sprintf("%s[%d]", path, i), e)
		if p.err != nil {
			return nil
		}
		out = append(out, o)
	}
	return out
}

// anyStr reads a string that may be empty.
func (p *parser) anyStr(path string, raw json.RawMessage) string {
	if p.err != nil {
		return ""
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		p.fail(path, "is missing or not a string")
	}
	return s
}

func (p *parser) digest(path string, raw json.RawMessage) string {
	s := p.str(path, raw)
	if p.err == nil && (!strings.HasPrefix(s, "sha256:") || !IsHash(strings.TrimPrefix(s, "sha256:"))) {
		p.fail(path, "must be \"sha256:\" and 64 lowercase hex digits")
	}
	return s
}

// pkg reads a server's package object (docs/agentgate.md, "Package identity").
func (p *parser) pkg(path string, raw json.RawMessage) *Package {
	obj := p.object(path, raw)
	if p.err != nil {
		return nil
	}
	var pk Package
	pk.Type = p.str(path+".type", obj["type"])
	if p.err != nil {
		return nil
	}
	opt := func(field string) string {
		if _, ok := obj[field]; !ok {
			return ""
		}
		return p.str(path+"."+field, obj[field])
	}
	switch pk.Type {
	case PackageNPM:
		p.unknown(path, obj, "type", "name", "version", "integrity")
		pk.Name, pk.Version, pk.Integrity = p.str(path+".name", obj["name"]), p.str(path+".version", obj["version"]), p.str(path+".integrity", obj["integrity"])
	case PackagePyPI:
		p.unknown(path, obj, "type", "name", "version", "files")
		pk.Name, pk.Version = p.str(path+".name", obj["name"]), p.str(path+".version", obj["version"])
		for i, f := range p.list(path+".files", obj["files"]) {
			fp := fmt.Sprintf("%s.files[%d]", path, i)
			p.unknown(fp, f, "filename", "sha256")
			pk.Files = append(pk.Files, PackageFile{Filename: p.str(fp+".filename", f["filename"]), SHA256: p.hash(fp+".sha256", f["sha256"])})
		}
	case PackageOCI:
		p.unknown(path, obj, "type", "name", "tag", "digest")
		pk.Name, pk.Tag, pk.Digest = p.str(path+".name", obj["name"]), opt("tag"), p.str(path+".digest", obj["digest"])
	case PackageRemote:
		p.unknown(path, obj, "type", "url", "spki")
		pk.URL, pk.SPKI = p.str(path+".url", obj["url"]), opt("spki")
	}
	if p.err != nil {
		return nil
	}
	orig := append([]PackageFile(nil), pk.Files...)
	if err := pk.Validate(); err != nil {
		var pe *packageError
		if errors.As(err, &pe) && pe.field != "" {
			p.fail(path+"."+pe.field, pe.msg)
		} else if pe != nil {
			p.fail(path, pe.msg)
		}
		return nil
	}
	for i := range orig {
		if orig[i] != pk.Files[i] {
			p.warn(path+".files", "not sorted by filename; agentgate lock rewrites it in order")
			break
		}
	}
	return &pk
}
