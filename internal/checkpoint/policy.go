package checkpoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// A verifier's trust policy, in the c2sp.org/tlog-policy format: which logs' checkpoints
// it accepts, which witnesses it knows, and the quorum of them that must have cosigned a
// checkpoint for it to count. One item per line; "#" starts a comment line:
//
//	log <vkey> [<url>]
//	witness <name> <vkey> [<url>]
//	group <name> all|any|<k> <name>...
//	quorum <name>|none
//
// A witness's vkey is a cosignature/v1 key (type 0x04; a plain Ed25519 note key, type
// 0x01, is accepted too). Names are the policy's own, shared by witnesses and groups; a
// group or the quorum names only what earlier lines defined; "none" is predefined and
// means no cosignature is required. Exactly one quorum line. A policy that says anything
// else — an unknown keyword, a malformed key, a duplicate key or name, a control
// character — is refused with the line it is on.

// ErrPolicy is wrapped for a policy file that does not parse.
var ErrPolicy = errors.New("not a valid tlog-policy file")

// Policy bounds: the file's size, and the logs, witnesses and groups it may define
// (tlog-policy asks implementations to support at least 32 of each).
const (
	MaxPolicyBytes = 64 << 10
	MaxPolicyItems = 64
)

// PolicyLog is a log a policy accepts.
type PolicyLog struct {
	// VKey is the log's checkpoint verifier key; Origin its key name, the log's origin.
	VKey, Origin string
	// URL is the optional URL of the line ("" when none).
	URL string
}

// PolicyWitness is a witness a policy knows.
type PolicyWitness struct {
	// Name is the policy's name for it; VKey its verifier key; URL optional.
	Name, VKey, URL string
	// Verifier checks its cosignatures.
	Verifier note.Verifier
}

// PolicyGroup is a group of witnesses or groups: it has witnessed a checkpoint when at
// least K of its Members have.
type PolicyGroup struct {
	Name    string
	K       int
	Members []string
}

// Policy is a parsed c2sp.org/tlog-policy file.
type Policy struct {
	Logs      []PolicyLog
	Witnesses []PolicyWitness
	Groups    []PolicyGroup
	// Quorum names the witness or group that must have witnessed a checkpoint, or is
	// "none".
	Quorum string
}

// QuorumNone is the predefined name of the empty quorum.
const QuorumNone = "none"

// ParsePolicy parses a tlog-policy file. Errors wrap ErrPolicy and name the line.
func ParsePolicy(b []byte) (*Policy, error) {
	if len(b) > MaxPolicyBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrPolicy, MaxPolicyBytes)
	}
	p := &Policy{}
	defined := map[string]string{QuorumNone: "predefined"} // name → "witness" or "group"
	logKeys := map[string]int{}                            // raw public key → line
	witnessKeys := map[string]int{}
	quorumLine := 0
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, raw := range lines {
		n := i + 1
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s", ErrPolicy, n, fmt.Sprintf(format, a...))
		}
		for _, c := range raw {
			if c != '\t' && (c < 0x20 || c == 0x7f) {
				return nil, bad("control character 0x%02x (only tab and newline are allowed)", c)
			}
		}
		f := strings.FieldsFunc(string(raw), func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return nil, bad("want log <vkey> [<url>]")
			}
			v, err := note.NewVerifier(f[1])
			if err != nil {
				return nil, bad("log key %q: %v (want a checkpoint verifier key, name+hash+base64, as 'toolwarrant audit key --checkpoint' prints)", f[1], err)
			}
			k := keyMaterial(f[1])
			if prev, ok := logKeys[k]; ok {
				return nil, bad("the same log key as line %d", prev)
			}
			logKeys[k] = n
			if len(p.Logs) == MaxPolicyItems {
				return nil, bad("more than %d logs", MaxPolicyItems)
			}
			p.Logs = append(p.Logs, PolicyLog{VKey: f[1], Origin: v.Name(), URL: at(f, 2)})
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return nil, bad("want witness <name> <vkey> [<url>]")
			}
			if d, ok := defined[f[1]]; ok {
				return nil, bad("the name %q is already defined (%s)", f[1], d)
			}
			if parts := strings.SplitN(f[2], "+", 3); len(parts) == 3 {
				if raw, err := base64.StdEncoding.DecodeString(parts[2]); err == nil && len(raw) > 0 && raw[0] == 0x06 {
					return nil, bad("witness %s: ML-DSA-44 cosignatures (key type 0x06) are not supported; give its cosignature/v1 Ed25519 key", f[1])
				}
			}
			v, err := WitnessVerifier(f[2])
			if err != nil {
				return nil, bad("witness %s: %v", f[1], err)
			}
			k := keyMaterial(f[2])
			if prev, ok := witnessKeys[k]; ok {
				return nil, bad("witness %s has the same key as line %d", f[1], prev)
			}
			witnessKeys[k] = n
			if len(p.Witnesses) == MaxPolicyItems {
				return nil, bad("more than %d witnesses", MaxPolicyItems)
			}
			defined[f[1]] = "witness"
			p.Witnesses = append(p.Witnesses, PolicyWitness{Name: f[1], VKey: f[2], URL: at(f, 3), Verifier: v})
		case "group":
			if len(f) < 4 {
				return nil, bad("want group <name> all|any|<k> <name>...")
			}
			if d, ok := defined[f[1]]; ok {
				return nil, bad("the name %q is already defined (%s)", f[1], d)
			}
			members := f[3:]
			seen := map[string]bool{}
			for _, m := range members {
				if m == QuorumNone {
					return nil, bad("group %s: %q cannot be a member", f[1], m)
				}
				if _, ok := defined[m]; !ok {
					return nil, bad("group %s: %q is not a witness or group defined above", f[1], m)
				}
				if seen[m] {
					return nil, bad("group %s lists %q twice", f[1], m)
				}
				seen[m] = true
			}
			var k int
			switch f[2] {
			case "all":
				k = len(members)
			case "any":
				k = 1
			default:
				var err error
				k, err = strconv.Atoi(f[2])
				if err != nil || f[2][0] < '0' || f[2][0] > '9' || k < 1 || k > len(members) {
					return nil, bad("group %s: threshold %q must be all, any or a number from 1 to %d (its members)", f[1], f[2], len(members))
				}
			}
			if len(p.Groups) == MaxPolicyItems {
				return nil, bad("more than %d groups", MaxPolicyItems)
			}
			defined[f[1]] = "group"
			p.Groups = append(p.Groups, PolicyGroup{Name: f[1], K: k, Members: members})
		case "quorum":
			if len(f) != 2 {
				return nil, bad("want quorum <name>")
			}
			if quorumLine != 0 {
				return nil, bad("a second quorum line (the first is line %d)", quorumLine)
			}
			if _, ok := defined[f[1]]; !ok {
				return nil, bad("quorum %q is not a witness or group defined above (or none)", f[1])
			}
			quorumLine = n
			p.Quorum = f[1]
		default:
			return nil, bad("unknown line %q (want log, witness, group or quorum)", printableWord(f[0]))
		}
	}
	if quorumLine == 0 {
		return nil, fmt.Errorf("%w: no quorum line (quorum <name>, or quorum none)", ErrPolicy)
	}
	return p, nil
}

func at(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// keyMaterial is the public key a vkey wraps, whatever its name and type: two vkeys of
// the same key are duplicates (tlog-policy).
func keyMaterial(vkey string) string {
	parts := strings.SplitN(vkey, "+", 3)
	raw, err := base64.StdEncoding.DecodeString(parts[len(parts)-1])
	if err != nil || len(raw) < 2 {
		return vkey
	}
	return string(raw[1:])
}

func printableWord(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// Log returns the log of the policy named origin.
func (p *Policy) Log(origin string) (PolicyLog, bool) {
	for _, l := range p.Logs {
		if l.Origin == origin {
			return l, true
		}
	}
	return PolicyLog{}, false
}

// WitnessVerifiers returns the verifiers of every witness, to open notes with
// (OpenNote, LoadNotes).
func (p *Policy) WitnessVerifiers() []note.Verifier {
	vs := make([]note.Verifier, len(p.Witnesses))
	for i, w := range p.Witnesses {
		vs[i] = w.Verifier
	}
	return vs
}

// Cosigned returns the policy's names of the witnesses whose cosignatures verified on n
// (opened with WitnessVerifiers).
func (p *Policy) Cosigned(n *Note) []string {
	var out []string
	for _, w := range p.Witnesses {
		for _, c := range n.Cosigners {
			if c.Name() == w.Verifier.Name() && c.KeyHash() == w.Verifier.KeyHash() {
				out = append(out, w.Name)
				break
			}
		}
	}
	return out
}

// Satisfied reports whether witnesses (the policy's names of those that cosigned) meet
// the quorum.
func (p *Policy) Satisfied(witnesses []string) bool {
	ok := map[string]bool{QuorumNone: true}
	for _, w := range witnesses {
		ok[w] = true
	}
	for _, g := range p.Groups { // each names only earlier definitions
		got := 0
		for _, m := range g.Members {
			if ok[m] {
				got++
			}
		}
		ok[g.Name] = got >= g.K
	}
	return ok[p.Quorum]
}

// Check returns nil when n's cosignatures meet the quorum, else an error saying which
// witnesses cosigned and what the quorum asks for.
func (p *Policy) Check(n *Note) error {
	got := p.Cosigned(n)
	if p.Satisfied(got) {
		return nil
	}
	who := "none of them"
	if len(got) > 0 {
		who = strings.Join(got, ", ")
	}
	return fmt.Errorf("cosigned by %d of the policy's %d witnesses (%s), short of its quorum %s", len(got), len(p.Witnesses), who, p.Describe(p.Quorum))
}

// Describe says what name requires: a witness's cosignature, or k of a group's members.
func (p *Policy) Describe(name string) string {
	for _, g := range p.Groups {
		if g.Name == name {
			parts := make([]string, len(g.Members))
			for i, m := range g.Members {
				parts[i] = m
				for _, sub := range p.Groups {
					if sub.Name == m {
						parts[i] = p.Describe(m)
					}
				}
			}
			return fmt.Sprintf("%s (%d of %s)", name, g.K, strings.Join(parts, ", "))
		}
	}
	if name == QuorumNone {
		return "none"
	}
	return "witness " + name
}
