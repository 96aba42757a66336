package lockfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Version is the only lockfileVersion this package reads and writes.
const Version = 1

// TimeFormat is how generatedAt is written: UTC, millisecond precision, as JavaScript's
// Date.prototype.toISOString does. Parse accepts any RFC 3339 timestamp.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// ErrInvalid means a tool object, a lockfile or a snapshot is not acceptable. Errors
// returned by this package wrap it.
var ErrInvalid = errors.New("invalid")

// Lockfile is an agentgate.lock document.
type Lockfile struct {
	// LockfileVersion is the format version; always Version.
	LockfileVersion int
	// GeneratedBy names the tool and version that wrote the file, e.g. "[email protected]".
	GeneratedBy string
	// GeneratedAt is when the file was written. It is informational: Compare ignores it.
	GeneratedAt time.Time
	// Servers is the locked surface per server, keyed by the server's name in the client
	// configuration.
	Servers map[string]Server
}

// Server is the locked surface of one server.
type Server struct {
	// SurfaceHash is SHA-256 over the canonical JSON array of the tools' [nameHash,
	// descriptionHash, inputSchemaHash] triples, in Tools order.
	SurfaceHash string
	// Tools are sorted by name.
	Tools []Tool
}

// Tool is one locked tool. Hashes are lowercase hex SHA-256.
type Tool struct {
	// Name is the tool name, kept in plaintext for readable diffs.
	Name string `json:"name"`
	// NameHash is SHA-256 of the UTF-8 name.
	NameHash string `json:"nameHash"`
	// DescriptionHash is SHA-256 of the UTF-8 description ("" when absent).
	DescriptionHash string `json:"descriptionHash"`
	// InputSchemaHash is SHA-256 of the RFC 8785 canonical input schema ({} when absent).
	InputSchemaHash string `json:"inputSchemaHash"`
}

// Definition is the part of a tool object that the lockfile pins.
type Definition struct {
	// Name is the tool's name.
	Name string
	// Description is the tool's description, "" when absent or null.
	Description string
	// InputSchema is the RFC 8785 canonical form of the input schema, {} when absent or null.
	InputSchema json.RawMessage
}

// ParseTool extracts the pinned fields of one tool object as a server sent it.
//
// The whole object must be I-JSON that RFC 8785 can canonicalize — no duplicate member
// names, invalid UTF-8, lone surrogates or out-of-range numbers anywhere in it — because a
// tool whose bytes different clients would read differently cannot be pinned honestly.
// "name" must be a non-empty string; "description" a string, null or absent; "inputSchema"
// any JSON value, null or absent. Member names are matched exactly.
func ParseTool(raw []byte) (Definition, error) {
	c, err := canon.Transform(raw)
	if err != nil {
		return Definition{}, fmt.Errorf("%w tool object: %v", ErrInvalid, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c, &obj); err != nil || obj == nil {
		return Definition{}, fmt.Errorf("%w tool object: not a JSON object", ErrInvalid)
	}
	var d Definition
	nameRaw, ok := obj["name"]
	if !ok || json.Unmarshal(nameRaw, &d.Name) != nil || nameRaw[0] != '"' {
		return Definition{}, fmt.Errorf("%w tool object: \"name\" is missing or not a string", ErrInvalid)
	}
	if d.Name == "" {
		return Definition{}, fmt.Errorf("%w tool object: \"name\" is empty", ErrInvalid)
	}
	if desc, ok := obj["description"]; ok && string(desc) != "null" {
		if desc[0] != '"' || json.Unmarshal(desc, &d.Description) != nil {
			return Definition{}, fmt.Errorf("%w tool %q: \"description\" is not a string", ErrInvalid, d.Name)
		}
	}
	d.InputSchema = json.RawMessage("{}")
	if s, ok := obj["inputSchema"]; ok && string(s) != "null" {
		d.InputSchema = bytes.Clone(s) // a member of canonical JSON is itself canonical
	}
	return d, nil
}

// Lock computes the locked entry of d.
func (d Definition) Lock() Tool {
	return Tool{
		Name:            d.Name,
		NameHash:        hashString(d.Name),
		DescriptionHash: hashString(d.Description),
		InputSchemaHash: hashBytes(d.InputSchema),
	}
}

// LockServer locks the definitions of one server: it sorts them by name and computes the
// surface hash. Two tools with the same name are refused — a client would see only one of
// them, and which one is up to the client.
func LockServer(defs []Definition) (Server, error) {
	tools := make([]Tool, len(defs))
	for i, d := range defs {
		if !utf8.ValidString(d.Name) || !utf8.ValidString(d.Description) {
			return Server{}, fmt.Errorf("%w tool %q: not valid UTF-8", ErrInvalid, d.Name)
		}
		schema := d.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage("{}")
		}
		c, err := canon.Transform(schema)
		if err != nil {
			return Server{}, fmt.Errorf("%w tool %q: inputSchema: %v", ErrInvalid, d.Name, err)
		}
		d.InputSchema = c
		tools[i] = d.Lock()
	}
	SortTools(tools)
	for i := 1; i < len(tools); i++ {
		if tools[i].Name == tools[i-1].Name {
			return Server{}, fmt.Errorf("%w: two tools are named %q; a client would see only one of them", ErrInvalid, tools[i].Name)
		}
	}
	return Server{SurfaceHash: SurfaceHash(tools), Tools: tools}, nil
}

// New locks a whole surface (server name → definitions).
func New(surface Surface, generatedBy string, at time.Time) (*Lockfile, error) {
	lf := &Lockfile{LockfileVersion: Version, GeneratedBy: generatedBy, GeneratedAt: at, Servers: map[string]Server{}}
	for name, defs := range surface {
		s, err := LockServer(defs)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		lf.Servers[name] = s
	}
	return lf, nil
}

// SurfaceHash is SHA-256 of the canonical JSON array of [nameHash, descriptionHash,
// inputSchemaHash] triples of tools, in the order given (sorted by name in a lockfile).
// For hex hashes the canonical form is simply [["n","d","i"],...] with no whitespace; a
// server with no tools hashes "[]".
func SurfaceHash(tools []Tool) string {
	b := []byte{'['}
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendQuote(b, t.NameHash)
		b = append(b, ',')
		b = strconv.AppendQuote(b, t.DescriptionHash)
		b = append(b, ',')
		b = strconv.AppendQuote(b, t.InputSchemaHash)
		b = append(b, ']')
	}
	b = append(b, ']')
	return hashBytes(b)
}

// SortTools sorts tools by name, comparing UTF-16 code units as RFC 8785 does for member
// names.
func SortTools(tools []Tool) {
	sort.SliceStable(tools, func(i, j int) bool { return Less(tools[i].Name, tools[j].Name) })
}

// Less orders names by their UTF-16 code units, the order RFC 8785 gives object member
// names. It differs from byte order only between U+E000–U+FFFF and supplementary
// characters.
func Less(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return utf16Key(ra) < utf16Key(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b != ""
}

// utf16Key maps a code point to a value that orders like its first UTF-16 code unit (and
// then the second), which is all a comparison of differing code points needs.
func utf16Key(r rune) uint32 {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return uint32(hi)<<16 | uint32(lo)
	}
	return uint32(r) << 16
}

// SortedServers returns the server names of lf in lockfile order.
func (lf *Lockfile) SortedServers() []string {
	return sortedNames(lf.Servers)
}

// unionNames returns the keys of a and b, each once, in sortedNames's order.
func unionNames[V any](a, b map[string]V) []string {
	all := make(map[string]bool, len(a)+len(b))
	for n := range a {
		all[n] = true
	}
	for n := range b {
		all[n] = true
	}
	return sortedNames(all)
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return Less(names[i], names[j]) })
	return names
}

// Marshal writes lf in the one deterministic form: fixed field order (lockfileVersion,
// generatedBy, generatedAt, servers; surfaceHash, tools; name, nameHash, descriptionHash,
// inputSchemaHash), servers and tools sorted by name, 2-space indentation, strings escaped
// as RFC 8785 escapes them, and a trailing newline.
func (lf *Lockfile) Marshal() ([]byte, error) {
	var b []byte
	var err error
	str := func(s string) {
		if err == nil {
			b, err = canon.AppendString(b, s)
		}
	}
	b = append(b, "{\n  \"lockfileVersion\": "...)
	b = strconv.AppendInt(b, int64(Version), 10)
	b = append(b, ",\n  \"generatedBy\": "...)
	str(lf.GeneratedBy)
	b = append(b, ",\n  \"generatedAt\": "...)
	str(lf.GeneratedAt.UTC().Format(TimeFormat))
	b = append(b, ",\n  \"servers\": {"...)
	for i, name := range lf.SortedServers() {
		s := lf.Servers[name]
		tools := append([]Tool(nil), s.Tools...)
		SortTools(tools)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		str(name)
		b = append(b, ": {\n      \"surfaceHash\": "...)
		str(s.SurfaceHash)
		b = append(b, ",\n      \"tools\": ["...)
		for j, t := range tools {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        {\n          \"name\": "...)
			str(t.Name)
			b = append(b, ",\n          \"nameHash\": "...)
			str(t.NameHash)
			b = append(b, ",\n          \"descriptionHash\": "...)
			str(t.DescriptionHash)
			b = append(b, ",\n          \"inputSchemaHash\": "...)
			str(t.InputSchemaHash)
			b = append(b, "\n        }"...)
		}
		if len(tools) > 0 {
			b = append(b, "\n      "...)
		}
		b = append(b, "]\n    }"...)
	}
	if len(lf.Servers) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "}\n}\n"...)
	if err != nil {
		return nil, fmt.Errorf("%w lockfile: %v", ErrInvalid, err)
	}
	return b, nil
}

// SameSurface reports whether a and b lock the same servers and tools; generatedBy and
// generatedAt are ignored.
func SameSurface(a, b *Lockfile) bool {
	if len(a.Servers) != len(b.Servers) {
		return false
	}
	for name, sa := range a.Servers {
		sb, ok := b.Servers[name]
		if !ok || sa.SurfaceHash != sb.SurfaceHash || len(sa.Tools) != len(sb.Tools) {
			return false
		}
		for i := range sa.Tools {
			if sa.Tools[i] != sb.Tools[i] {
				return false
			}
		}
	}
	return true
}

func hashString(s string) string { return hashBytes([]byte(s)) }

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// IsHash reports whether s is a lowercase hex SHA-256 (64 characters of 0-9a-f).
func IsHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
