package trust

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// stepPolicy checks a policy_added or policy_revoked entry: a statement signed by a key
// trusted at that point, naming this change, this policy and its digest, over the entry
// before it; an add names a valid policy whose name is not active, within MaxPolicies; a
// revoke names an active policy.
func (st *State) stepPolicy(r warrant.AuditRecord, event json.RawMessage, prev warrant.AuditHead) []string {
	var c PolicyChange
	if err := json.Unmarshal(event, &c); err != nil {
		return []string{"policy change is not readable: " + err.Error()}
	}
	if st.List == nil {
		return []string{"a policy change before the trust list was initialised"}
	}
	s, _, err := Check(*st.List, c.Statement, []byte(c.Signature))
	if err != nil {
		return []string{"policy change: person's signature: " + err.Error()}
	}
	action := warrant.PolicyAdd
	if r.Type == warrant.EventPolicyRevoked {
		action = warrant.PolicyRevoke
	}
	var p []string
	d, derr := c.Policy.Digest()
	switch {
	case derr != nil || d != c.Digest:
		p = append(p, fmt.Sprintf("policy %s: its recorded digest %s is not the digest of the policy recorded", c.Name, c.Digest))
	case s.Type != TypePolicy || s.Action != action || s.Policy == nil || s.PolicyDigest != c.Digest || c.Policy.Name != c.Name:
		p = append(p, "the signed statement does not describe this policy change")
	}
	if s.Policy != nil {
		if sd, err := s.Policy.Digest(); err != nil || sd != c.Digest {
			p = append(p, "the signed statement's policy is not the policy recorded")
		}
	}
	if s.Signer != r.Actor {
		p = append(p, fmt.Sprintf("recorded actor %q is not the signer %q", r.Actor, s.Signer))
	}
	if s.AuditHead != prev {
		p = append(p, fmt.Sprintf("the statement was signed over audit head %d, not the entry before it (%d)", s.AuditHead.Seq, prev.Seq))
	}
	if len(p) > 0 {
		return p
	}
	if st.Policies == nil {
		st.Policies = map[warrant.Digest]ActivePolicy{}
	}
	if action == warrant.PolicyRevoke {
		if _, ok := st.Policies[c.Digest]; !ok {
			return []string{fmt.Sprintf("policy %s (%s) is revoked, but it is not active", c.Name, c.Digest.Short())}
		}
		delete(st.Policies, c.Digest)
		return nil
	}
	if err := c.Policy.Validate(); err != nil {
		return []string{"the policy added is not valid: " + err.Error()}
	}
	for _, ap := range st.Policies {
		if ap.Policy.Name == c.Name {
			return []string{fmt.Sprintf("policy %s is added while a policy of that name is active", c.Name)}
		}
	}
	if len(st.Policies) >= warrant.MaxPolicies {
		return []string{fmt.Sprintf("policy %s is added while %d policies are active, the most there may be", c.Name, len(st.Policies))}
	}
	st.Policies[c.Digest] = ActivePolicy{Policy: c.Policy, Signer: s.Signer, Entry: r.Seq}
	return nil
}

// stepByPolicy checks an approval made by a review policy: the policy is active, the
// entry names it as its actor, it replaced the approved digest it was graded against, and
// what the crawl graded is within the policy rule it names.
func (st *State) stepByPolicy(r warrant.AuditRecord, d DecisionEvent) []string {
	pa := d.Policy
	ap, ok := st.Policies[pa.Digest]
	if !ok {
		return []string{fmt.Sprintf("an approval by policy %s (%s), which is not active at this point", pa.Name, pa.Digest.Short())}
	}
	var p []string
	if r.Type != string(warrant.DecisionApproved) {
		p = append(p, "a policy may only approve, but this entry is "+r.Type)
	}
	if r.Actor != warrant.PolicyActorPrefix+ap.Policy.Name || pa.Name != ap.Policy.Name {
		p = append(p, fmt.Sprintf("recorded actor %q is not the policy %s", r.Actor, ap.Policy.Name))
	}
	if len(d.Statement) > 0 || d.Item != nil || d.AcceptedSuspicious {
		p = append(p, "an approval by a policy carries a person's statement, a bulk place or accepted suspicious text")
	}
	if pa.Baseline == "" || pa.Baseline != d.Expect || d.Digest == pa.Baseline {
		p = append(p, fmt.Sprintf("an approval by policy %s is not a change to the tool's approved digest (graded against %s, replacing %q)", ap.Policy.Name, pa.Baseline.Short(), d.Expect))
	}
	if i, ok := ap.Policy.Accepts(d.Server, pa.Grade, pa.Rules, false); !ok || i != pa.Accept || pa.Accept < 0 ||
		slices.ContainsFunc(pa.Rules, func(ru warrant.Rule) bool { return ru == "" }) {
		p = append(p, fmt.Sprintf("policy %s does not accept a %s change of server %q with rules %s", ap.Policy.Name, pa.Grade, d.Server, joinRules(pa.Rules)))
	}
	return p
}

func joinRules(rs []warrant.Rule) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
