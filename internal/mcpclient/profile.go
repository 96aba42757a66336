package mcpclient

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// A Profile is the client a listing acts as: the protocol version it offers and the
// capabilities it declares. Servers may show different tools to different clients (a server
// registers its sampling or elicitation tools only for clients that declare them), so a
// surface is always listed, and locked, as some client sees it.
type Profile struct {
	// Name identifies the profile in a lockfile: a built-in name, or one the user chose for
	// explicit capabilities.
	Name string
	// ProtocolVersion is the MCP protocol revision offered. A revision of 2026-07-28 or
	// later is offered with a server/discover probe first (falling back to initialize with
	// 2025-11-25 for servers that do not answer it); an older one with initialize, as the
	// editors do.
	ProtocolVersion string
	// Capabilities is the ClientCapabilities object declared, as canonical JSON. It is sent
	// exactly so, in initialize and in the per-request _meta of MCP 2026-07-28.
	Capabilities json.RawMessage
}

// ProfileGeneric is the built-in profile agentgate uses unless told otherwise: the Go SDK
// client's defaults, which is also what lockfile version 1 was always listed with.
const ProfileGeneric = "generic"

// ModernProtocolVersion is the first MCP revision without the initialize handshake
// (SEP-2575); LegacyProtocolVersion is the revision offered in initialize when a server does
// not speak it.
const (
	ModernProtocolVersion = "2026-07-28"
	LegacyProtocolVersion = "2025-11-25"
)

// builtinProfiles are the capability sets of the clients people use, as each declares them
// in initialize (docs/agentgate.md cites where each was observed). They are snapshots: an
// editor release may change them, and a lockfile records the exact set it was listed with.
var builtinProfiles = []Profile{
	{Name: ProfileGeneric, ProtocolVersion: ModernProtocolVersion,
		Capabilities: json.RawMessage(`{"roots":{"listChanged":true}}`)},
	{Name: "claude-code", ProtocolVersion: "2025-11-25",
		Capabilities: json.RawMessage(`{"elicitation":{},"roots":{"listChanged":true}}`)},
	{Name: "vscode", ProtocolVersion: "2025-11-25",
		Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{},"tasks":{"cancel":{},"list":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}}`)},
	{Name: "cursor", ProtocolVersion: "2025-06-18",
		Capabilities: json.RawMessage(`{"elicitation":{},"roots":{}}`)},
}

// BuiltinProfiles returns the built-in profiles, generic first.
func BuiltinProfiles() []Profile {
	out := make([]Profile, len(builtinProfiles))
	copy(out, builtinProfiles)
	return out
}

// BuiltinProfile returns the built-in profile name.
func BuiltinProfile(name string) (Profile, bool) {
	for _, p := range builtinProfiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// BuiltinProfileNames lists the built-in profile names, sorted.
func BuiltinProfileNames() []string {
	var names []string
	for _, p := range builtinProfiles {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// knownProtocolVersions are the MCP revisions a profile may offer.
var knownProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// NewProfile checks an explicit profile: a name of letters, digits, '.', '_' and '-', a known
// protocol revision and a capabilities JSON object. It returns the profile with its
// capabilities in canonical form.
func NewProfile(name, protocolVersion string, capabilities []byte) (Profile, error) {
	if !validProfileName(name) {
		return Profile{}, fmt.Errorf("profile name %q: use 1-64 letters, digits, '.', '_' or '-'", name)
	}
	known := false
	for _, v := range knownProtocolVersions {
		if v == protocolVersion {
			known = true
		}
	}
	if !known {
		return Profile{}, fmt.Errorf("protocol version %q is not one of %s", protocolVersion, strings.Join(knownProtocolVersions, ", "))
	}
	c, err := canon.Transform(capabilities)
	if err != nil {
		return Profile{}, fmt.Errorf("capabilities: %v", err)
	}
	if len(c) == 0 || c[0] != '{' {
		return Profile{}, fmt.Errorf("capabilities must be a JSON object such as {\"roots\":{},\"sampling\":{}}")
	}
	return Profile{Name: name, ProtocolVersion: protocolVersion, Capabilities: c}, nil
}

func validProfileName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// modern reports whether p offers a protocol revision without initialize.
func (p Profile) modern() bool { return p.ProtocolVersion >= ModernProtocolVersion }
