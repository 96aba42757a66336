package warrant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Review policies (docs/toolwarrant.md, "Review policies"): a person on the trust list
// signs, once, which kinds of drift on which servers need no one to read them — "a title
// or _meta change on server weather", never a reworded description. The crawl applies the
// active policies to every new version of an approved tool: a change graded within a
// policy's rule is approved on the spot, as an approval by the policy, and its audit
// entry names the policy's digest and what the crawl graded, so `audit verify` checks it
// was within an active policy. Policies are added and revoked with signed statements;
// the catalog keeps the active set (Catalog.Policies), the log keeps every change.

// Audit entry types of policy changes.
const (
	EventPolicyAdded   = "policy_added"
	EventPolicyRevoked = "policy_revoked"
)

// PolicyActorPrefix starts the actor of an approval made by a policy: "policy:NAME".
const PolicyActorPrefix = "policy:"

// Bounds of review policies.
const (
	// MaxPolicies is the most policies active at once.
	MaxPolicies = 16
	// MaxPolicyBytes bounds a policy file and its canonical JSON.
	MaxPolicyBytes = 16 << 10
	// MaxPolicyRules bounds a policy's accept list.
	MaxPolicyRules = 32
	// MaxPolicyNote bounds a policy's note.
	MaxPolicyNote = 1024
)

// ReviewPolicy is what a person signs: the drift it accepts without review.
type ReviewPolicy struct {
	// Name names the policy in lists, in the actor of its approvals and in revoke: 1 to
	// 64 lowercase letters, digits and '-', starting with a letter or digit.
	Name string `json:"name"`
	// Accept lists what the policy accepts; a change is accepted when one of them does.
	Accept []PolicyRule `json:"accept"`
	// Note says why, for the people reading the log.
	Note string `json:"note,omitempty"`
}

// PolicyRule accepts a change to an approved tool of Server ("*": any server) whose drift
// grade is at most MaxGrade (INFO or WARNING; never CRITICAL) and every one of whose
// rules is in Rules.
type PolicyRule struct {
	Server   string   `json:"server"`
	MaxGrade Severity `json:"maxGrade"`
	Rules    []Rule   `json:"rules"`
}

var policyName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// notByPolicy are rules no policy may name although they are not CRITICAL: they grade a
// definition with nothing approved before it, which a person reads on first sight.
var notByPolicy = []Rule{RuleNewTool, RuleNewPrompt, RuleNewResource, RuleRemoved}

// PolicyRules returns the rules a policy may accept, in the order of Rules: every rule
// that is not CRITICAL and grades a change to an existing definition.
func PolicyRules() []Rule {
	var out []Rule
	for _, ri := range Rules {
		if ri.Severity != Critical && !slices.Contains(notByPolicy, ri.Rule) {
			out = append(out, ri.Rule)
		}
	}
	return out
}

// ParsePolicy reads a policy file: one JSON object with only the members of
// ReviewPolicy, within MaxPolicyBytes, valid (Validate). ErrInvalid otherwise, saying
// what is wrong.
func ParsePolicy(b []byte) (ReviewPolicy, error) {
	if len(b) > MaxPolicyBytes {
		return ReviewPolicy{}, fmt.Errorf("%w: the policy is %d bytes, more than the %d a policy may be", ErrInvalid, len(b), MaxPolicyBytes)
	}
	var p ReviewPolicy
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return ReviewPolicy{}, fmt.Errorf("%w: the policy is not a policy object: %v", ErrInvalid, err)
	}
	if d.More() {
		return ReviewPolicy{}, fmt.Errorf("%w: the policy has more than one JSON value", ErrInvalid)
	}
	return p, p.Validate()
}

// Validate checks a policy: its name, 1 to MaxPolicyRules accept rules, each naming a
// server (or "*"), INFO or WARNING as its grade, and 1 or more distinct rules a policy may
// accept (PolicyRules) whose severity is at most that grade; a note of printable text
// within MaxPolicyNote.
func (p ReviewPolicy) Validate() error {
	if !policyName.MatchString(p.Name) {
		return fmt.Errorf("%w: policy name %q: use 1 to 64 lowercase letters, digits or '-', starting with a letter or digit", ErrInvalid, p.Name)
	}
	if len(p.Accept) == 0 || len(p.Accept) > MaxPolicyRules {
		return fmt.Errorf("%w: policy %s: accept lists %d rules; give 1 to %d", ErrInvalid, p.Name, len(p.Accept), MaxPolicyRules)
	}
	allowed := PolicyRules()
	for i, a := range p.Accept {
		at := fmt.Sprintf("policy %s: accept[%d]", p.Name, i)
		if a.Server != "*" {
			if err := ValidateServerName(a.Server); err != nil {
				return fmt.Errorf("%s: %w (or \"*\" for every server)", at, err)
			}
		}
		switch a.MaxGrade {
		case Info, Warning:
		case Critical:
			return fmt.Errorf("%w: %s: maxGrade CRITICAL: a CRITICAL change is always read by a person, never accepted by a policy", ErrInvalid, at)
		default:
			return fmt.Errorf("%w: %s: maxGrade must be INFO or WARNING", ErrInvalid, at)
		}
		if len(a.Rules) == 0 {
			return fmt.Errorf("%w: %s: name the rules it accepts (there is no wildcard, so a new rule is never accepted unread)", ErrInvalid, at)
		}
		for j, r := range a.Rules {
			switch {
			case slices.Contains(a.Rules[:j], r):
				return fmt.Errorf("%w: %s: rule %s is listed twice", ErrInvalid, at, r)
			case !slices.Contains(allowed, r) && SeverityOf(r) == Critical && isRule(r):
				return fmt.Errorf("%w: %s: rule %s is CRITICAL: a person reads it, never a policy", ErrInvalid, at, r)
			case !slices.Contains(allowed, r) && isRule(r):
				return fmt.Errorf("%w: %s: rule %s grades a definition nothing was approved before; a person approves it (toolwarrant approve, or --all-pending)", ErrInvalid, at, r)
			case !slices.Contains(allowed, r):
				return fmt.Errorf("%w: %s: %q is not a drift rule a policy may accept; these are: %s", ErrInvalid, at, r, joinRules(allowed))
			case SeverityOf(r) > a.MaxGrade:
				return fmt.Errorf("%w: %s: rule %s is %s, above the maxGrade %s", ErrInvalid, at, r, SeverityOf(r), a.MaxGrade)
			}
		}
	}
	if len(p.Note) > MaxPolicyNote || strings.ContainsFunc(p.Note, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }) {
		return fmt.Errorf("%w: policy %s: the note must be printable text of at most %d bytes", ErrInvalid, p.Name, MaxPolicyNote)
	}
	return nil
}

func isRule(r Rule) bool {
	return slices.ContainsFunc(Rules, func(ri RuleInfo) bool { return ri.Rule == r })
}

func joinRules(rs []Rule) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Canonical returns the policy's RFC 8785 canonical JSON: the bytes its digest names.
func (p ReviewPolicy) Canonical() ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return canon.Transform(b)
}

// Digest returns the SHA-256 of the policy's canonical JSON.
func (p ReviewPolicy) Digest() (Digest, error) {
	c, err := p.Canonical()
	if err != nil {
		return "", err
	}
	return DigestOf(c), nil
}

// Accepts reports which of the policy's rules accepts a change to an approved tool of
// server graded grade with rules (the first that does, by index). Nothing is accepted
// that is CRITICAL, has no graded change, or has suspicious text.
func (p ReviewPolicy) Accepts(server string, grade Severity, rules []Rule, suspicious bool) (int, bool) {
	if grade == Critical || grade == SeverityNone || len(rules) == 0 || suspicious {
		return -1, false
	}
	for i, a := range p.Accept {
		if a.Server != "*" && a.Server != server || grade > a.MaxGrade {
			continue
		}
		if !slices.ContainsFunc(rules, func(r Rule) bool { return !slices.Contains(a.Rules, r) || SeverityOf(r) > a.MaxGrade }) {
			return i, true
		}
	}
	return -1, false
}

// ActivePolicy is a policy in force, as the catalog keeps it.
type ActivePolicy struct {
	Policy ReviewPolicy `json:"policy"`
	// Digest is Policy.Digest().
	Digest Digest `json:"digest"`
	// Signer is the principal who signed it; AddedAt when; Entry the audit entry that
	// added it.
	Signer  string    `json:"signer"`
	AddedAt time.Time `json:"addedAt"`
	Entry   int64     `json:"entry"`
}

// PolicySet is the catalog's active policies, sorted by name. Seq counts the changes
// (adds and revocations) from 0: the check-and-set counter of Catalog.SetPolicies.
type PolicySet struct {
	Seq      int64          `json:"seq"`
	Policies []ActivePolicy `json:"policies"`
}

// Validate checks a set: at most MaxPolicies, each valid with its digest, names unique
// and sorted.
func (ps PolicySet) Validate() error {
	if ps.Seq < 0 || len(ps.Policies) > MaxPolicies {
		return fmt.Errorf("%w: a policy set of %d policies (at most %d) at change %d", ErrInvalid, len(ps.Policies), MaxPolicies, ps.Seq)
	}
	for i, ap := range ps.Policies {
		if err := ap.Policy.Validate(); err != nil {
			return err
		}
		if d, err := ap.Policy.Digest(); err != nil || d != ap.Digest {
			return fmt.Errorf("%w: policy %s: its digest is not %s", ErrInvalid, ap.Policy.Name, ap.Digest)
		}
		if i > 0 && ps.Policies[i-1].Policy.Name >= ap.Policy.Name {
			return fmt.Errorf("%w: the policy set is not sorted by unique name", ErrInvalid)
		}
	}
	return nil
}

// Find returns the active policy named by name or by digest (all 64 hex digits, or a
// unique prefix of at least 8).
func (ps PolicySet) Find(nameOrDigest string) (ActivePolicy, bool) {
	var hit []ActivePolicy
	for _, ap := range ps.Policies {
		if ap.Policy.Name == nameOrDigest || string(ap.Digest) == nameOrDigest {
			return ap, true
		}
		h := strings.TrimPrefix(nameOrDigest, DigestPrefix)
		if len(h) >= 8 && strings.HasPrefix(ap.Digest.Hex(), h) {
			hit = append(hit, ap)
		}
	}
	if len(hit) == 1 {
		return hit[0], true
	}
	return ActivePolicy{}, false
}

// PolicyApproval is what an approval by a policy records in its audit entry (and what
// `audit verify` checks against the policy): the policy, and the grading of the change it
// accepted against the approved digest it replaced.
type PolicyApproval struct {
	Name   string `json:"name"`
	Digest Digest `json:"digest"`
	// Accept is the index of the policy's rule that accepted the change.
	Accept   int      `json:"accept"`
	Baseline Digest   `json:"baseline"`
	Grade    Severity `json:"grade"`
	Rules    []Rule   `json:"rules"`
}

// PolicyDecision is a new version a crawl approved by a policy.
type PolicyDecision struct {
	Tool   string `json:"tool"`
	Digest Digest `json:"digest"`
	// Policy names the policy, its digest and what was accepted.
	Policy PolicyApproval `json:"policy"`
}
