package trust

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestStepPolicies: audit verify's check of review policies. A policy added by a trusted
// key's statement over the entry before it, then an approval by it of a change within
// its rule, pass. Each of these is reported: a statement by an untrusted key or over
// another head, a recorded policy other than the one signed, an approval by a policy never
// added or since revoked, an approval outside the policy's server or rules or above its
// grade, one that names a rule index other than the one that accepts, one that is not a
// change to the approved digest, one with another actor, a rejection by a policy, and a
// policy of a name already active.
func TestStepPolicies(t *testing.T) {
	alice, mallory := newSigner(t), newSigner(t)
	list := List{Keys: []Key{key(t, "alice", alice)}}
	dig := func(i int) warrant.Digest { return warrant.Digest(fmt.Sprintf("sha256:%064x", i)) }
	pol := warrant.ReviewPolicy{Name: "titles", Accept: []warrant.PolicyRule{
		{Server: "s", MaxGrade: warrant.Warning, Rules: []warrant.Rule{warrant.RuleTitleChanged}},
		{Server: "*", MaxGrade: warrant.Info, Rules: []warrant.Rule{warrant.RuleIconsChanged}}}}
	pd, err := pol.Digest()
	if err != nil {
		t.Fatal(err)
	}
	head := warrant.AuditHead{Seq: 10, Hash: strings.Repeat("0", 64)}

	type entry struct {
		typ, actor string
		body       any
	}
	// change is a policy change entry signed by signer over head h.
	change := func(typ, action string, p warrant.ReviewPolicy, recorded warrant.ReviewPolicy, signer string, k Key, h warrant.AuditHead) entry {
		t.Helper()
		s := alice
		if k.Principal == "mallory" {
			s = mallory
		}
		d, _ := p.Digest()
		rd, _ := recorded.Digest()
		stmt, sig, err := Sign(NewPolicyChange(action, p, d, signer, h, time.Now()), s)
		if err != nil {
			t.Fatal(err)
		}
		return entry{typ, signer, PolicyChange{Name: recorded.Name, Digest: rd, Policy: recorded, Statement: stmt, Signature: string(sig)}}
	}
	at := func(seq int64) warrant.AuditHead {
		return warrant.AuditHead{Seq: seq, Hash: fmt.Sprintf("%064x", 100+seq-head.Seq-1)}
	}
	add := func(h warrant.AuditHead) entry {
		return change(warrant.EventPolicyAdded, warrant.PolicyAdd, pol, pol, "alice", list.Keys[0], h)
	}
	approval := func(actor, server string, grade warrant.Severity, rules []warrant.Rule, accept int, expect, baseline warrant.Digest, d warrant.Digest) entry {
		return entry{"approved", actor, map[string]any{"server": server, "tool": "a", "digest": d, "expect": expect, "acceptedSuspicious": false, "note": "",
			"policy": warrant.PolicyApproval{Name: "titles", Digest: pd, Accept: accept, Baseline: baseline, Grade: grade, Rules: rules}}}
	}
	good := approval("policy:titles", "s", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged}, 0, dig(1), dig(1), dig(2))
	run := func(es ...entry) [][]string {
		st := State{List: &list}
		prev := head
		var out [][]string
		for i, e := range es {
			b, _ := json.Marshal(e.body)
			r := warrant.AuditRecord{Seq: head.Seq + int64(i) + 1, Type: e.typ, Actor: e.actor, PrevHash: prev.Hash, Hash: fmt.Sprintf("%064x", 100+i)}
			out = append(out, st.Step(r, b))
			prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
		}
		return out
	}
	ok := func(what string, ps [][]string) {
		t.Helper()
		for i, p := range ps {
			if len(p) > 0 {
				t.Errorf("%s: entry %d: %q", what, i, p)
			}
		}
	}
	bad := func(what string, ps [][]string, idx int, want string) {
		t.Helper()
		if !slices.ContainsFunc(ps[idx], func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("%s: entry %d: %q, want a problem %q", what, idx, ps[idx], want)
		}
	}
	ok("a policy, then an approval within it", run(add(head), good))
	ok("an INFO icons change on any server, by the second rule",
		run(add(head), approval("policy:titles", "other", warrant.Info, []warrant.Rule{warrant.RuleIconsChanged}, 1, dig(1), dig(1), dig(2))))

	mk := key(t, "mallory", mallory)
	bad("signed by a key not on the list", run(change(warrant.EventPolicyAdded, warrant.PolicyAdd, pol, pol, "mallory", mk, head)), 0, "not on the trust list")
	bad("signed over another head", run(change(warrant.EventPolicyAdded, warrant.PolicyAdd, pol, pol, "alice", list.Keys[0], at(5))), 0, "signed over audit head")
	wider := pol
	wider.Accept = []warrant.PolicyRule{{Server: "*", MaxGrade: warrant.Warning, Rules: []warrant.Rule{warrant.RuleTitleChanged, warrant.RuleSchemaChanged}}}
	bad("a recorded policy other than the one signed", run(change(warrant.EventPolicyAdded, warrant.PolicyAdd, pol, wider, "alice", list.Keys[0], head)), 0, "not the policy recorded")
	bad("an approval by a policy never added", run(good), 0, "not active")
	revoke := change(warrant.EventPolicyRevoked, warrant.PolicyRevoke, pol, pol, "alice", list.Keys[0], at(11))
	ps := run(add(head), revoke, good)
	ok("the revocation", ps[:2])
	bad("an approval after the revocation", ps, 2, "not active")
	bad("another server", run(add(head), approval("policy:titles", "other", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged}, 0, dig(1), dig(1), dig(2))), 1, "does not accept")
	bad("a rule not in the policy", run(add(head), approval("policy:titles", "s", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged, warrant.RuleSchemaChanged}, 0, dig(1), dig(1), dig(2))), 1, "does not accept")
	bad("a CRITICAL change", run(add(head), approval("policy:titles", "s", warrant.Critical, []warrant.Rule{warrant.RuleDescriptionChanged}, 0, dig(1), dig(1), dig(2))), 1, "does not accept")
	bad("another rule index", run(add(head), approval("policy:titles", "s", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged}, 1, dig(1), dig(1), dig(2))), 1, "does not accept")
	bad("not a change to the approved digest", run(add(head), approval("policy:titles", "s", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged}, 0, "", dig(1), dig(2))), 1, "not a change to the tool's approved digest")
	bad("another actor", run(add(head), approval("alice", "s", warrant.Warning, []warrant.Rule{warrant.RuleTitleChanged}, 0, dig(1), dig(1), dig(2))), 1, "is not the policy titles")
	rej := good
	rej.typ = "rejected"
	bad("a rejection by a policy", run(add(head), rej), 1, "may only approve")
	bad("a second policy of an active name", run(add(head), change(warrant.EventPolicyAdded, warrant.PolicyAdd, pol, pol, "alice", list.Keys[0], at(11))), 1, "a policy of that name is active")
}
