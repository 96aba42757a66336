package lockfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// SnapshotVersion is the only snapshotVersion this package reads and writes.
const SnapshotVersion = 1

// Surface is a tool surface: server name → the definitions of its tools.
type Surface map[string][]Definition

// Find returns the definition of tool name on server, if the surface has it.
func (s Surface) Find(server, name string) (Definition, bool) {
	for _, d := range s[server] {
		if d.Name == name {
			return d, true
		}
	}
	return Definition{}, false
}

// MarshalSnapshot writes s as a snapshot file: the plaintext companion of a lockfile that
// keeps each locked tool's name, description and (canonical, then indented) input schema,
// so that a later diff can show what the words were and reviewers can read the change.
// Output is deterministic: servers and tools sorted by name, 2-space indentation, trailing
// newline.
//
//	{
//	  "snapshotVersion": 1,
//	  "servers": {
//	    "NAME": {
//	      "tools": [
//	        {"name": ..., "description": ..., "inputSchema": {...}}
//	      ]
//	    }
//	  }
//	}
func MarshalSnapshot(s Surface) ([]byte, error) {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	var buf bytes.Buffer
	buf.WriteString("{\n  \"snapshotVersion\": 1,\n  \"servers\": {")
	for i, name := range sortedNames(s) {
		defs := append([]Definition(nil), s[name]...)
		sort.SliceStable(defs, func(a, b int) bool { return Less(defs[a].Name, defs[b].Name) })
		tools := make([]tool, len(defs))
		for j, d := range defs {
			schema := d.InputSchema
			if len(schema) == 0 {
				schema = json.RawMessage("{}")
			}
			c, err := canon.Transform(schema)
			if err != nil {
				return nil, fmt.Errorf("%w snapshot: server %q tool %q: %v", ErrInvalid, name, d.Name, err)
			}
			tools[j] = tool{d.Name, d.Description, c}
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		key, err := canon.AppendString(nil, name)
		if err != nil {
			return nil, fmt.Errorf("%w snapshot: server name: %v", ErrInvalid, err)
		}
		buf.Write(key)
		buf.WriteString(": {\n      \"tools\": ")
		var tb bytes.Buffer
		enc := json.NewEncoder(&tb)
		enc.SetEscapeHTML(false)
		enc.SetIndent("      ", "  ")
		if len(tools) == 0 {
			tb.WriteString("[]\n")
		} else if err := enc.Encode(tools); err != nil {
			return nil, fmt.Errorf("%w snapshot: server %q: %v", ErrInvalid, name, err)
		}
		buf.Write(bytes.TrimRight(tb.Bytes(), "\n"))
		buf.WriteString("\n    }")
	}
	if len(s) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("}\n}\n")
	return buf.Bytes(), nil
}

// ParseSnapshot reads a snapshot written by MarshalSnapshot. Unknown fields are reported as
// warnings; an unknown snapshotVersion is refused.
func ParseSnapshot(data []byte) (Surface, []Warning, error) {
	top, err := topLevel(data, "snapshot", "not a JSON object")
	if err != nil {
		return nil, nil, err
	}
	var warns []Warning
	var v float64
	if err := json.Unmarshal(top["snapshotVersion"], &v); err != nil || v != SnapshotVersion {
		return nil, nil, fmt.Errorf("%w snapshot: snapshotVersion %s is not supported; this build understands version %d", ErrInvalid, orMissing(top["snapshotVersion"]), SnapshotVersion)
	}
	for k := range top {
		if k != "snapshotVersion" && k != "servers" {
			warns = append(warns, Warning{Path: k, Message: "unknown field, ignored"})
		}
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(top["servers"], &servers); err != nil || servers == nil {
		return nil, nil, fmt.Errorf("%w snapshot: \"servers\" must be an object", ErrInvalid)
	}
	s := Surface{}
	for name, raw := range servers {
		var srv map[string]json.RawMessage
		if err := json.Unmarshal(raw, &srv); err != nil || srv == nil {
			return nil, nil, fmt.Errorf("%w snapshot: servers.%s must be an object", ErrInvalid, name)
		}
		for k := range srv {
			if k != "tools" {
				warns = append(warns, Warning{Path: "servers." + name + "." + k, Message: "unknown field, ignored"})
			}
		}
		var tools []json.RawMessage
		if err := json.Unmarshal(srv["tools"], &tools); err != nil {
			return nil, nil, fmt.Errorf("%w snapshot: servers.%s.tools must be an array", ErrInvalid, name)
		}
		defs := []Definition{}
		for i, t := range tools {
			d, err := ParseTool(t)
			if err != nil {
				return nil, nil, fmt.Errorf("servers.%s.tools[%d]: %w", name, i, err)
			}
			defs = append(defs, d)
		}
		s[name] = defs
	}
	sortWarnings(warns)
	return s, warns, nil
}
