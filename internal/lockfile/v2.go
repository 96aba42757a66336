package lockfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Version2 is lockfileVersion 2: everything version 1 pins, plus per tool the digest of the
// whole tool object, the server's prompts, resources, resource templates and instructions,
// all per client profile. docs/agentgate.md specifies it; docs/spec/agentgate.lock.v2.schema.json
// is its JSON Schema.
const Version2 = 2

// LockfileV2 is an agentgate.lock document of version 2.
type LockfileV2 struct {
	// GeneratedBy names the tool and version that wrote the file.
	GeneratedBy string
	// GeneratedAt is when the file was written; informational, ignored by comparisons.
	GeneratedAt time.Time
	// Servers is the locked surface per server, keyed by its name in the client config.
	Servers map[string]ServerV2
}

// ServerV2 is one server's locked surface, per client profile.
type ServerV2 struct {
	// Package is what the server runs from (an npm or PyPI version, an image digest, a
	// URL), pinned by content; nil when it is not pinned (lockfiles written before it, a
	// command agentgate cannot read a package from, lock --no-package).
	Package *Package
	// Profiles maps a profile name (generic, claude-code, vscode, cursor, or the name given
	// to explicit capabilities) to the surface the server showed that client.
	Profiles map[string]ProfileV2
}

// Client is the client a surface was listed as: the MCP revision it offered and the
// capabilities it declared.
type Client struct {
	// ProtocolVersion is the revision offered ("2026-07-28", "2025-11-25", ...).
	ProtocolVersion string
	// Capabilities is the ClientCapabilities object declared, as RFC 8785 canonical JSON.
	Capabilities json.RawMessage
}

// ProfileV2 is the surface one server showed one client.
type ProfileV2 struct {
	// Client is the client the surface was listed as.
	Client Client
	// SurfaceHash is SHA-256 of the RFC 8785 JSON of {"instructionsHash": ..., "prompts":
	// [digests], "resourceTemplates": [digests], "resources": [digests], "tools": [digests]},
	// each list in lockfile order.
	SurfaceHash string
	// InstructionsHash is SHA-256 of the UTF-8 instructions ("" when the server sent none).
	InstructionsHash string
	// Tools, sorted by name.
	Tools []ToolV2
	// Prompts, sorted by name.
	Prompts []ItemV2
	// Resources, sorted by uri.
	Resources []ItemV2
	// ResourceTemplates, sorted by uriTemplate.
	ResourceTemplates []ItemV2
}

// ToolV2 is one locked tool: the version 1 entry plus the digest of the whole tool.
type ToolV2 struct {
	Tool
	// Digest is toolwarrant's digest of the tool: "sha256:" and the SHA-256 of the RFC 8785
	// JSON of the whole tool object as served, _meta included.
	Digest string `json:"digest"`
}

// ItemV2 is one locked prompt, resource or resource template.
type ItemV2 struct {
	// Key identifies the item: a prompt's name, a resource's uri, a template's uriTemplate.
	Key string `json:"-"`
	// Name is a resource's or template's name ("" for a prompt, whose name is its Key).
	Name string `json:"-"`
	// DescriptionHash is SHA-256 of the UTF-8 description ("" when absent).
	DescriptionHash string `json:"-"`
	// ArgumentsHash (prompts only) is SHA-256 of the RFC 8785 JSON of "arguments" ([] when
	// absent).
	ArgumentsHash string `json:"-"`
	// Digest is "sha256:" and the SHA-256 of the RFC 8785 JSON of the pinned object: the
	// whole object as served, except a resource's "size" and "annotations.lastModified",
	// which describe its content rather than the surface.
	Digest string `json:"-"`
}

// Kind of a locked item, as graded (warrant.Kind) and as named in diffs.
const (
	KindTool             = warrant.KindTool
	KindPrompt           = warrant.KindPrompt
	KindResource         = warrant.KindResource
	KindResourceTemplate = warrant.KindResourceTemplate
	// KindInstructions names the server's instructions in a diff.
	KindInstructions warrant.Kind = "instructions"
)

// Definitions is what one server showed one client, object by object: the input of
// [LockProfile], and the content of a version 2 snapshot. Objects are RFC 8785 canonical
// JSON once they have been through LockProfile or ParseSnapshotV2.
type Definitions struct {
	// Instructions are the server's instructions; nil when it sent none.
	Instructions *string
	// Tools, Prompts, Resources and ResourceTemplates are the objects as served.
	Tools, Prompts, Resources, ResourceTemplates []json.RawMessage
}

// keyMember is the member that identifies an object of each kind.
func keyMember(k warrant.Kind) string {
	switch k {
	case KindResource:
		return "uri"
	case KindResourceTemplate:
		return "uriTemplate"
	}
	return "name"
}

// LockProfile locks what one server showed client. Every object must be I-JSON that RFC
// 8785 canonicalizes, with a non-empty string key (name, uri, uriTemplate) unique within its
// list, and tools must also satisfy [ParseTool]. It returns the locked surface and the
// definitions in canonical form, sorted as the lockfile sorts them.
func LockProfile(client Client, d Definitions) (ProfileV2, Definitions, error) {
	caps, err := canon.Transform(client.Capabilities)
	if err != nil || len(caps) == 0 || caps[0] != '{' {
		return ProfileV2{}, Definitions{}, fmt.Errorf("%w client capabilities: not a JSON object", ErrInvalid)
	}
	p := ProfileV2{Client: Client{ProtocolVersion: client.ProtocolVersion, Capabilities: caps}}
	out := Definitions{Instructions: d.Instructions}
	instr := ""
	if d.Instructions != nil {
		if !utf8.ValidString(*d.Instructions) {
			return ProfileV2{}, Definitions{}, fmt.Errorf("%w instructions: not valid UTF-8", ErrInvalid)
		}
		instr = *d.Instructions
	}
	p.InstructionsHash = hashString(instr)

	type canonTool struct {
		t ToolV2
		c json.RawMessage
	}
	var tools []canonTool
	for i, raw := range d.Tools {
		def, err := ParseTool(raw)
		if err != nil {
			return ProfileV2{}, Definitions{}, fmt.Errorf("tool %d: %w", i+1, err)
		}
		digest, c, err := warrant.DigestTool(raw)
		if err != nil {
			return ProfileV2{}, Definitions{}, fmt.Errorf("%w tool %q: %v", ErrInvalid, def.Name, err)
		}
		tools = append(tools, canonTool{ToolV2{Tool: def.Lock(), Digest: string(digest)}, c})
	}
	sort.SliceStable(tools, func(i, j int) bool { return Less(tools[i].t.Name, tools[j].t.Name) })
	for i, t := range tools {
		if i > 0 && t.t.Name == tools[i-1].t.Name {
			return ProfileV2{}, Definitions{}, fmt.Errorf("%w: two tools are named %q; a client would see only one of them", ErrInvalid, t.t.Name)
		}
		p.Tools = append(p.Tools, t.t)
		out.Tools = append(out.Tools, t.c)
	}
	lists := []struct {
		kind warrant.Kind
		in   []json.RawMessage
		dst  *[]ItemV2
		defs *[]json.RawMessage
	}{
		{KindPrompt, d.Prompts, &p.Prompts, &out.Prompts},
		{KindResource, d.Resources, &p.Resources, &out.Resources},
		{KindResourceTemplate, d.ResourceTemplates, &p.ResourceTemplates, &out.ResourceTemplates},
	}
	for _, l := range lists {
		type canonItem struct {
			it ItemV2
			c  json.RawMessage
		}
		var items []canonItem
		for i, raw := range l.in {
			it, c, err := LockItem(l.kind, raw)
			if err != nil {
				return ProfileV2{}, Definitions{}, fmt.Errorf("%s %d: %w", kindNoun(l.kind), i+1, err)
			}
			items = append(items, canonItem{it, c})
		}
		sort.SliceStable(items, func(i, j int) bool { return Less(items[i].it.Key, items[j].it.Key) })
		for i, it := range items {
			if i > 0 && it.it.Key == items[i-1].it.Key {
				return ProfileV2{}, Definitions{}, fmt.Errorf("%w: two %ss have the %s %q", ErrInvalid, kindNoun(l.kind), keyMember(l.kind), it.it.Key)
			}
			*l.dst = append(*l.dst, it.it)
			*l.defs = append(*l.defs, it.c)
		}
	}
	p.SurfaceHash = p.surfaceHash()
	return p, out, nil
}

func kindNoun(k warrant.Kind) string {
	switch k {
	case KindResourceTemplate:
		return "resource template"
	case KindInstructions:
		return "instructions"
	}
	return string(k)
}

// LockItem locks one prompt, resource or resource template and returns its entry and its
// canonical JSON as served.
func LockItem(kind warrant.Kind, raw []byte) (ItemV2, json.RawMessage, error) {
	c, err := canon.Transform(raw)
	if err != nil {
		return ItemV2{}, nil, fmt.Errorf("%w %s object: %v", ErrInvalid, kindNoun(kind), err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c, &obj); err != nil || obj == nil {
		return ItemV2{}, nil, fmt.Errorf("%w %s object: not a JSON object", ErrInvalid, kindNoun(kind))
	}
	var it ItemV2
	km := keyMember(kind)
	if raw, ok := obj[km]; !ok || raw[0] != '"' || json.Unmarshal(raw, &it.Key) != nil || it.Key == "" {
		return ItemV2{}, nil, fmt.Errorf("%w %s object: %q is missing, empty or not a string", ErrInvalid, kindNoun(kind), km)
	}
	desc := ""
	if raw, ok := obj["description"]; ok && string(raw) != "null" {
		if raw[0] != '"' || json.Unmarshal(raw, &desc) != nil {
			return ItemV2{}, nil, fmt.Errorf("%w %s %q: \"description\" is not a string", ErrInvalid, kindNoun(kind), it.Key)
		}
	}
	it.DescriptionHash = hashString(desc)
	if kind == KindPrompt {
		args := json.RawMessage("[]")
		if raw, ok := obj["arguments"]; ok && string(raw) != "null" {
			args = raw
		}
		it.ArgumentsHash = hashBytes(args)
	} else if raw, ok := obj["name"]; ok && string(raw) != "null" {
		if raw[0] != '"' || json.Unmarshal(raw, &it.Name) != nil {
			return ItemV2{}, nil, fmt.Errorf("%w %s %q: \"name\" is not a string", ErrInvalid, kindNoun(kind), it.Key)
		}
	}
	pinned, err := pinnedObject(kind, c)
	if err != nil {
		return ItemV2{}, nil, err
	}
	it.Digest = string(warrant.DigestOf(pinned))
	return it, c, nil
}

// pinnedObject removes from a canonical resource what describes its content rather than the
// surface: "size" and "annotations.lastModified".
func pinnedObject(kind warrant.Kind, c json.RawMessage) (json.RawMessage, error) {
	if kind != KindResource && kind != KindResourceTemplate {
		return c, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c, &obj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	changed := false
	if _, ok := obj["size"]; ok {
		delete(obj, "size")
		changed = true
	}
	if raw, ok := obj["annotations"]; ok && len(raw) > 0 && raw[0] == '{' {
		var ann map[string]json.RawMessage
		if json.Unmarshal(raw, &ann) == nil {
			if _, ok := ann["lastModified"]; ok {
				delete(ann, "lastModified")
				b, _ := json.Marshal(ann)
				obj["annotations"] = b
				changed = true
			}
		}
	}
	if !changed {
		return c, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return canon.Transform(b)
}

func (p ProfileV2) surfaceHash() string {
	b := []byte(`{"instructionsHash":`)
	b = strconv.AppendQuote(b, p.InstructionsHash)
	digests := func(name string, ds []string) {
		b = append(b, `,"`+name+`":[`...)
		for i, d := range ds {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, d)
		}
		b = append(b, ']')
	}
	itemDigests := func(items []ItemV2) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Digest)
		}
		return out
	}
	var tools []string
	for _, t := range p.Tools {
		tools = append(tools, t.Digest)
	}
	digests("prompts", itemDigests(p.Prompts))
	digests("resourceTemplates", itemDigests(p.ResourceTemplates))
	digests("resources", itemDigests(p.Resources))
	digests("tools", tools)
	b = append(b, '}')
	return hashBytes(b)
}

// Equal reports whether a and b lock the same surface for the same client.
func (p ProfileV2) Equal(q ProfileV2) bool {
	if p.SurfaceHash != q.SurfaceHash || p.InstructionsHash != q.InstructionsHash || p.Client.ProtocolVersion != q.Client.ProtocolVersion ||
		!bytes.Equal(p.Client.Capabilities, q.Client.Capabilities) || len(p.Tools) != len(q.Tools) ||
		len(p.Prompts) != len(q.Prompts) || len(p.Resources) != len(q.Resources) || len(p.ResourceTemplates) != len(q.ResourceTemplates) {
		return false
	}
	for i := range p.Tools {
		if p.Tools[i] != q.Tools[i] {
			return false
		}
	}
	for _, pair := range [][2][]ItemV2{{p.Prompts, q.Prompts}, {p.Resources, q.Resources}, {p.ResourceTemplates, q.ResourceTemplates}} {
		for i := range pair[0] {
			if pair[0][i] != pair[1][i] {
				return false
			}
		}
	}
	return true
}

// SameSurfaceV2 reports whether a and b lock the same servers, packages, profiles and
// surfaces; generatedBy and generatedAt are ignored.
func SameSurfaceV2(a, b *LockfileV2) bool {
	if len(a.Servers) != len(b.Servers) {
		return false
	}
	for name, sa := range a.Servers {
		sb, ok := b.Servers[name]
		if !ok || len(sa.Profiles) != len(sb.Profiles) || !equalPackages(sa.Package, sb.Package) {
			return false
		}
		for pn, pa := range sa.Profiles {
			pb, ok := sb.Profiles[pn]
			if !ok || !pa.Equal(pb) {
				return false
			}
		}
	}
	return true
}

// SortedServers returns the server names in lockfile order.
func (lf *LockfileV2) SortedServers() []string { return sortedNames(lf.Servers) }

// SortedProfiles returns the profile names of s in lockfile order.
func (s ServerV2) SortedProfiles() []string { return sortedNames(s.Profiles) }

// Tools counts the tools locked under every profile of every server.
func (lf *LockfileV2) Tools() int {
	n := 0
	for _, s := range lf.Servers {
		for _, p := range s.Profiles {
			n += len(p.Tools)
		}
	}
	return n
}

// Marshal writes lf in its one deterministic form: fixed field order, servers, profiles and
// entries sorted, 2-space indentation, strings escaped as RFC 8785 escapes them,
// capabilities as one line of canonical JSON, and a trailing newline.
func (lf *LockfileV2) Marshal() ([]byte, error) {
	w := &writer{}
	w.raw("{\n  \"lockfileVersion\": 2,\n  \"generatedBy\": ")
	w.str(lf.GeneratedBy)
	w.raw(",\n  \"generatedAt\": ")
	w.str(lf.GeneratedAt.UTC().Format(TimeFormat))
	w.raw(",\n  \"servers\": {")
	for i, name := range lf.SortedServers() {
		s := lf.Servers[name]
		w.sep(i, "\n    ")
		w.str(name)
		w.raw(": {")
		if s.Package != nil {
			w.pkg(*s.Package)
			w.raw(",")
		}
		w.raw("\n      \"profiles\": {")
		for j, pn := range s.SortedProfiles() {
			p := s.Profiles[pn]
			w.sep(j, "\n        ")
			w.str(pn)
			w.raw(": {\n          \"client\": {\n            \"protocolVersion\": ")
			w.str(p.Client.ProtocolVersion)
			w.raw(",\n            \"capabilities\": ")
			w.raw(string(p.Client.Capabilities))
			w.raw("\n          },\n          \"surfaceHash\": ")
			w.str(p.SurfaceHash)
			w.raw(",\n          \"instructionsHash\": ")
			w.str(p.InstructionsHash)
			w.raw(",\n          \"tools\": [")
			for k, t := range p.Tools {
				w.entry(k, [][2]string{{"name", t.Name}, {"nameHash", t.NameHash}, {"descriptionHash", t.DescriptionHash}, {"inputSchemaHash", t.InputSchemaHash}, {"digest", t.Digest}})
			}
			w.closeList(len(p.Tools))
			w.raw(",\n          \"prompts\": [")
			for k, it := range p.Prompts {
				w.entry(k, [][2]string{{"name", it.Key}, {"descriptionHash", it.DescriptionHash}, {"argumentsHash", it.ArgumentsHash}, {"digest", it.Digest}})
			}
			w.closeList(len(p.Prompts))
			w.resources("resources", KindResource, p.Resources)
			w.resources("resourceTemplates", KindResourceTemplate, p.ResourceTemplates)
			w.raw("\n        }")
		}
		if len(s.Profiles) > 0 {
			w.raw("\n      ")
		}
		w.raw("}\n    }")
	}
	if len(lf.Servers) > 0 {
		w.raw("\n  ")
	}
	w.raw("}\n}\n")
	if w.err != nil {
		return nil, fmt.Errorf("%w lockfile: %v", ErrInvalid, w.err)
	}
	return w.b, nil
}

type writer struct {
	b   []byte
	err error
}

func (w *writer) raw(s string) { w.b = append(w.b, s...) }

func (w *writer) str(s string) {
	if w.err == nil {
		w.b, w.err = canon.AppendString(w.b, s)
	}
}

func (w *writer) sep(i int, indent string) {
	if i > 0 {
		w.b = append(w.b, ',')
	}
	w.raw(indent)
}

// entry writes one object of a list at the depth of profile entries.
func (w *writer) entry(i int, fields [][2]string) {
	w.sep(i, "\n            {")
	for j, f := range fields {
		w.sep(j, "\n              ")
		w.str(f[0])
		w.raw(": ")
		w.str(f[1])
	}
	w.raw("\n            }")
}

// resources writes the member of a profile that lists its resources or resource templates
// (kind), each keyed by its keyMember.
func (w *writer) resources(member string, kind warrant.Kind, items []ItemV2) {
	w.raw(",\n          \"" + member + "\": [")
	for k, it := range items {
		w.entry(k, [][2]string{{keyMember(kind), it.Key}, {"name", it.Name}, {"descriptionHash", it.DescriptionHash}, {"digest", it.Digest}})
	}
	w.closeList(len(items))
}

func (w *writer) closeList(n int) {
	if n > 0 {
		w.raw("\n          ")
	}
	w.raw("]")
}
