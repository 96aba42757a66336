package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Warning is something Parse accepted but that the caller should hear about: an unknown
// field (kept nowhere, so it would be lost on rewrite) or a file not in canonical form.
type Warning struct {
	// Path locates the field, e.g. "servers.fs.tools[2].title".
	Path string
	// Message says what is wrong, e.g. "unknown field, ignored".
	Message string
}

func (w Warning) String() string {
	if w.Path == "" {
		return w.Message
	}
	return w.Path + ": " + w.Message
}

// Parse reads an agentgate.lock document.
//
// It refuses (with an error wrapping [ErrInvalid]): text that is not one JSON value that RFC
// 8785 accepts (duplicate member names, invalid UTF-8, ...; the error names the line and
// column), a lockfileVersion other than [Version] (naming the version this build
// understands), missing or mistyped required fields, hashes that are not 64 lowercase hex
// digits, a generatedAt that is not an RFC 3339 timestamp, two tools with one name, and a
// surfaceHash that does not match its tools (a hand-edited or badly merged file: run
// agentgate lock to regenerate it).
//
// Unknown fields are ignored but reported as warnings, as is a file that is valid but not
// byte-identical to what [Lockfile.Marshal] would write (tools out of order, other
// indentation).
func Parse(data []byte) (*Lockfile, []Warning, error) {
	top, err := topLevelLockfile(data)
	if err != nil {
		return nil, nil, err
	}
	// The version gates everything else: a future format may differ in any other field.
	rawVersion, ok := top["lockfileVersion"]
	if !ok {
		return nil, nil, fmt.Errorf("%w lockfile: lockfileVersion is missing; this build understands version %d", ErrInvalid, Version)
	}
	if string(rawVersion) != "1" {
		return nil, nil, fmt.Errorf("%w lockfile: lockfileVersion %s is not supported; this build understands version %d (upgrade agentgate, or regenerate with agentgate lock)", ErrInvalid, rawVersion, Version)
	}

	p := &parser{}
	lf := &Lockfile{LockfileVersion: Version, Servers: map[string]Server{}}
	var servers map[string]json.RawMessage
	lf.GeneratedBy, lf.GeneratedAt, servers = p.header(top)
	for _, name := range sortedNames(servers) {
		path := "servers." + name
		obj := p.object(path, servers[name])
		p.unknown(path, obj, "surfaceHash", "tools")
		var s Server
		s.SurfaceHash = p.hash(path+".surfaceHash", obj["surfaceHash"])
		var tools []json.RawMessage
		if p.err == nil {
			if raw, ok := obj["tools"]; !ok || json.Unmarshal(raw, &tools) != nil || raw[0] != '[' {
				p.fail(path+".tools", "is missing or not an array")
			}
		}
		s.Tools = []Tool{}
		for i, raw := range tools {
			tp := fmt.Sprintf("%s.tools[%d]", path, i)
			tobj := p.object(tp, raw)
			p.unknown(tp, tobj, "name", "nameHash", "descriptionHash", "inputSchemaHash")
			t := Tool{
				Name:            p.str(tp+".name", tobj["name"]),
				NameHash:        p.hash(tp+".nameHash", tobj["nameHash"]),
				DescriptionHash: p.hash(tp+".descriptionHash", tobj["descriptionHash"]),
				InputSchemaHash: p.hash(tp+".inputSchemaHash", tobj["inputSchemaHash"]),
			}
			if p.err == nil && t.NameHash != hashString(t.Name) {
				p.fail(tp+".nameHash", fmt.Sprintf("is not the SHA-256 of the name %q", t.Name))
			}
			s.Tools = append(s.Tools, t)
		}
		if p.err != nil {
			break
		}
		sorted := append([]Tool(nil), s.Tools...)
		SortTools(sorted)
		for i := 1; i < len(sorted); i++ {
			if sorted[i].Name == sorted[i-1].Name {
				p.fail(path+".tools", fmt.Sprintf("has two tools named %q", sorted[i].Name))
			}
		}
		if p.err == nil && SurfaceHash(s.Tools) != s.SurfaceHash && SurfaceHash(sorted) == s.SurfaceHash {
			p.warn(path+".tools", "not sorted by name; agentgate lock rewrites it in order")
		}
		s.Tools = sorted
		if p.err == nil && SurfaceHash(sorted) != s.SurfaceHash {
			p.fail(path+".surfaceHash", "does not match its tools (edited by hand or badly merged?); run agentgate lock to regenerate")
		}
		lf.Servers[name] = s
	}
	if err := p.done(data, lf.Marshal, "indentation, field order or time format"); err != nil {
		return nil, nil, err
	}
	return lf, p.warnings, nil
}

// topLevel reads data, a lockfile or a snapshot (what), as one JSON object that RFC 8785
// accepts, by member name; notObject is the error when it is another JSON value.
func topLevel(data []byte, what, notObject string) (map[string]json.RawMessage, error) {
	c, err := canon.Transform(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrInvalid, what, positioned(err, data))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c, &top); err != nil || top == nil {
		return nil, fmt.Errorf("%w %s: %s", ErrInvalid, what, notObject)
	}
	return top, nil
}

// topLevelLockfile is topLevel for a lockfile.
func topLevelLockfile(data []byte) (map[string]json.RawMessage, error) {
	return topLevel(data, "lockfile", "the top level is not a JSON object")
}

// done ends a parse: it returns the first error, or else sorts the warnings, adding one when
// data is not the bytes marshal writes (what differs names the likely causes).
func (p *parser) done(data []byte, marshal func() ([]byte, error), what string) error {
	if p.err != nil {
		return p.err
	}
	if out, err := marshal(); err == nil && len(p.warnings) == 0 && !bytes.Equal(out, data) {
		p.warn("", "not in canonical form ("+what+"); agentgate lock rewrites it")
	}
	sortWarnings(p.warnings)
	return nil
}

type parser struct {
	err      error
	warnings []Warning
	what     string // "lockfile" when empty
}

func (p *parser) fail(path, msg string) {
	if p.err == nil {
		what := p.what
		if what == "" {
			what = "lockfile"
		}
		p.err = fmt.Errorf("%w %s: %s %s", ErrInvalid, what, path, msg)
	}
}

func (p *parser) warn(path, msg string) {
	p.warnings = append(p.warnings, Warning{Path: path, Message: msg})
}

func (p *parser) unknown(path string, obj map[string]json.RawMessage, known ...string) {
	for k := range obj {
		found := false
		for _, n := range known {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			full := k
			if path != "" {
				full = path + "." + k
			}
			p.warn(full, "unknown field, ignored (this build would drop it on rewrite)")
		}
	}
}

func (p *parser) object(path string, raw json.RawMessage) map[string]json.RawMessage {
	if p.err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if len(raw) == 0 {
		p.fail(path, "is missing")
		return nil
	}
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		p.fail(path, "must be an object")
		return nil
	}
	return m
}

func (p *parser) str(path string, raw json.RawMessage) string {
	if p.err != nil {
		return ""
	}
	var s string
	if len(raw) == 0 {
		p.fail(path, "is missing")
		return ""
	}
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		p.fail(path, "must be a string")
		return ""
	}
	if s == "" {
		p.fail(path, "is empty")
	}
	return s
}

func (p *parser) hash(path string, raw json.RawMessage) string {
	s := p.str(path, raw)
	if p.err == nil && !IsHash(s) {
		p.fail(path, "must be 64 lowercase hex digits (a SHA-256)")
	}
	return s
}

func sortWarnings(ws []Warning) {
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Path < ws[j].Path })
}

func orMissing(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(missing)"
	}
	return string(raw)
}

// positioned rewrites a canon error's byte offset as a line and column of data.
func positioned(err error, data []byte) error {
	var ce *canon.Error
	if !errors.As(err, &ce) || ce.Offset < 0 {
		return err
	}
	off := int(min(ce.Offset, int64(len(data))))
	line := bytes.Count(data[:off], []byte("\n")) + 1
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("line %d, column %d (offset %d): %s", line, col, ce.Offset, ce.Reason)
}

// header reads the members every version shares: generatedBy, generatedAt (RFC 3339) and
// the servers object, refusing any other top-level member.
func (p *parser) header(top map[string]json.RawMessage) (by string, at time.Time, servers map[string]json.RawMessage) {
	p.unknown("", top, "lockfileVersion", "generatedBy", "generatedAt", "servers")
	by = p.str("generatedBy", top["generatedBy"])
	raw := p.str("generatedAt", top["generatedAt"])
	if p.err == nil {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			p.fail("generatedAt", "is not an RFC 3339 timestamp such as 2026-08-03T12:00:00.000Z")
		}
		at = t
	}
	return by, at, p.object("servers", top["servers"])
}
