package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/sshsig"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Namespaces and statement types.
const (
	NamespaceApproval = "toolwarrant-approval"
	NamespaceTrust    = "toolwarrant-trust"
	TypeDecision      = "toolwarrant-decision/v1"
	TypeTrust         = "toolwarrant-trust/v1"
	// TypeBulk is a bulk approval: one statement approving an exact list of digests of
	// one server's tools (warrant.Service.ApproveAllAs), signed in NamespaceApproval.
	TypeBulk = "toolwarrant-bulk-approval/v1"
	// TypePolicy adds or revokes a review policy (warrant.Service.AddPolicy,
	// RevokePolicy), signed in NamespaceApproval: Action add or revoke, the policy and
	// its digest.
	TypePolicy = "toolwarrant-review-policy/v1"
	// EventTrustChanged is the audit entry type of trust list changes.
	EventTrustChanged = "trust_changed"
)

// Key is one trusted key.
type Key struct {
	// Principal is the person's identity, as in an allowed_signers file.
	Principal string `json:"principal"`
	// Key is the public key as an authorized_keys line without comment.
	Key string `json:"key"`
	// Fingerprint is its SHA256 fingerprint, as ssh-keygen -l prints it.
	Fingerprint string `json:"fingerprint"`
}

// List is the trust list, sorted by principal then fingerprint.
type List struct {
	Keys []Key `json:"keys"`
}

// ByFingerprint returns the key with fingerprint fp.
func (l List) ByFingerprint(fp string) (Key, bool) {
	for _, k := range l.Keys {
		if k.Fingerprint == fp {
			return k, true
		}
	}
	return Key{}, false
}

// AllowedSigners renders the list as an ssh-keygen allowed_signers file for namespace.
func (l List) AllowedSigners(namespace string) string {
	var b strings.Builder
	for _, k := range l.Keys {
		fmt.Fprintf(&b, "%s namespaces=%q %s\n", k.Principal, namespace, k.Key)
	}
	return b.String()
}

func (l List) sorted() List {
	out := List{Keys: slices.Clone(l.Keys)}
	slices.SortFunc(out.Keys, func(a, b Key) int {
		if c := strings.Compare(a.Principal, b.Principal); c != 0 {
			return c
		}
		return strings.Compare(a.Fingerprint, b.Fingerprint)
	})
	if out.Keys == nil {
		out.Keys = []Key{}
	}
	return out
}

// NewKey parses an authorized_keys line and checks the principal.
func NewKey(principal, authorizedKey string) (Key, error) {
	principal = strings.TrimSpace(principal)
	if principal == "" || strings.ContainsAny(principal, " \t\r\n\",*?!") {
		return Key{}, fmt.Errorf("principal %q: use one word such as alice@example.com (no spaces, quotes or wildcards)", principal)
	}
	pub, _, err := sshsig.ParseAuthorizedKey(authorizedKey)
	if err != nil {
		return Key{}, err
	}
	return Key{Principal: principal, Key: pub.AuthorizedKey(), Fingerprint: pub.Fingerprint()}, nil
}

// Statement is what a person signs.
type Statement struct {
	Type string `json:"type"`
	// Decisions.
	Decision           warrant.DecisionKind `json:"decision,omitempty"`
	Server             string               `json:"server,omitempty"`
	Tool               string               `json:"tool,omitempty"`
	Digest             warrant.Digest       `json:"digest,omitempty"`
	AcceptedSuspicious bool                 `json:"acceptedSuspicious,omitempty"`
	// Approvals is a bulk approval's exact list (TypeBulk, with Decision approved and
	// Server): every tool and digest it approves, and nothing else.
	Approvals []warrant.BulkItem `json:"approvals,omitempty"`
	// Trust changes: Action is add or remove, Subject the key added or removed. Policy
	// changes: Action is add or revoke, Policy the policy and PolicyDigest its digest.
	Action       string                `json:"action,omitempty"`
	Subject      *Key                  `json:"subject,omitempty"`
	Policy       *warrant.ReviewPolicy `json:"policy,omitempty"`
	PolicyDigest warrant.Digest        `json:"policyDigest,omitempty"`
	// Signer is the signer's principal; AuditHead the head they read; At when they signed.
	Signer    string            `json:"signer"`
	AuditHead warrant.AuditHead `json:"auditHead"`
	At        string            `json:"at"`
}

// Bytes returns the statement's canonical JSON, the bytes that are signed.
func (s Statement) Bytes() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return canon.Transform(b)
}

// NewDecision builds the statement for a decision.
func NewDecision(kind warrant.DecisionKind, server, tool string, d warrant.Digest, accepted bool, signer string, head warrant.AuditHead, at time.Time) Statement {
	return Statement{Type: TypeDecision, Decision: kind, Server: server, Tool: tool, Digest: d, AcceptedSuspicious: accepted,
		Signer: signer, AuditHead: head, At: at.UTC().Format(time.RFC3339)}
}

// NewBulkApproval builds the statement for a bulk approval of items, tools of server.
func NewBulkApproval(server string, items []warrant.BulkItem, signer string, head warrant.AuditHead, at time.Time) Statement {
	return Statement{Type: TypeBulk, Decision: warrant.DecisionApproved, Server: server, Approvals: slices.Clone(items),
		Signer: signer, AuditHead: head, At: at.UTC().Format(time.RFC3339)}
}

// NewPolicyChange builds the statement for adding or revoking a review policy.
func NewPolicyChange(action string, p warrant.ReviewPolicy, d warrant.Digest, signer string, head warrant.AuditHead, at time.Time) Statement {
	return Statement{Type: TypePolicy, Action: action, Policy: &p, PolicyDigest: d, Signer: signer, AuditHead: head, At: at.UTC().Format(time.RFC3339)}
}

// ParseStatement reads a statement strictly (canonical JSON, known fields only).
func ParseStatement(b []byte) (Statement, error) {
	c, err := canon.Transform(b)
	if err != nil || string(c) != string(b) {
		return Statement{}, errors.New("statement is not canonical JSON")
	}
	var s Statement
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return Statement{}, fmt.Errorf("statement: %v", err)
	}
	if s.Type != TypeDecision && s.Type != TypeTrust && s.Type != TypeBulk && s.Type != TypePolicy {
		return Statement{}, fmt.Errorf("statement type %q", s.Type)
	}
	return s, nil
}

// Sign signs the statement with key and returns its bytes and the armored signature.
func Sign(s Statement, key sshsig.Signer) (statement, signature []byte, err error) {
	b, err := s.Bytes()
	if err != nil {
		return nil, nil, err
	}
	ns := NamespaceApproval
	if s.Type == TypeTrust {
		ns = NamespaceTrust
	}
	sig, err := sshsig.Sign(key, b, ns)
	return b, sig, err
}

// Check verifies a signed statement against list: the signature verifies in the
// statement's namespace, by a key on the list whose principal is the statement's signer.
func Check(list List, statement, signature []byte) (Statement, Key, error) {
	s, err := ParseStatement(statement)
	if err != nil {
		return s, Key{}, err
	}
	ns := NamespaceApproval
	if s.Type == TypeTrust {
		ns = NamespaceTrust
	}
	pub, err := sshsig.Verify(signature, statement, ns)
	if err != nil {
		return s, Key{}, err
	}
	k, ok := list.ByFingerprint(pub.Fingerprint())
	if !ok {
		return s, Key{}, fmt.Errorf("signed by key %s, which is not on the trust list", pub.Fingerprint())
	}
	if k.Principal != s.Signer {
		return s, Key{}, fmt.Errorf("the statement names signer %q but was signed by %q's key", s.Signer, k.Principal)
	}
	return s, k, nil
}

// Change is the body of a trust_changed audit entry.
type Change struct {
	// Action is init, add or remove.
	Action string `json:"action"`
	// List is the trust list after the change.
	List List `json:"list"`
	// LogKey is the log key's ID (on init).
	LogKey string `json:"logKey,omitempty"`
	// Statement and Signature authorise add and remove: signed by a key on the list
	// before the change. Init has none: it is authorised by holding the catalog, and its
	// entry hash — the trust root — is what the operator keeps outside the database.
	Statement json.RawMessage `json:"statement,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

// Apply checks a change against the list before it and returns the list after it.
// prev is the entry before this one (what an add/remove statement must name).
func Apply(before *List, c Change, prev warrant.AuditHead) (List, error) {
	switch c.Action {
	case "init":
		if before != nil {
			return List{}, errors.New("the trust list is initialised twice")
		}
		if len(c.List.Keys) == 0 {
			return List{}, errors.New("the trust list is initialised empty")
		}
		return c.List.sorted(), nil
	case "add", "remove":
	default:
		return List{}, fmt.Errorf("unknown trust action %q", c.Action)
	}
	if before == nil {
		return List{}, errors.New("a trust change before the trust list was initialised")
	}
	s, _, err := Check(*before, c.Statement, []byte(c.Signature))
	if err != nil {
		return List{}, fmt.Errorf("trust %s: %v", c.Action, err)
	}
	if s.Type != TypeTrust || s.Action != c.Action || s.Subject == nil {
		return List{}, errors.New("the signed statement does not describe this change")
	}
	if s.AuditHead != prev {
		return List{}, fmt.Errorf("the statement was signed over audit head %d, not the entry before it (%d)", s.AuditHead.Seq, prev.Seq)
	}
	next := List{Keys: slices.Clone(before.Keys)}
	i := slices.IndexFunc(next.Keys, func(k Key) bool { return k.Fingerprint == s.Subject.Fingerprint })
	if c.Action == "add" {
		if i >= 0 {
			return List{}, fmt.Errorf("key %s is already on the trust list", s.Subject.Fingerprint)
		}
		if _, err := NewKey(s.Subject.Principal, s.Subject.Key); err != nil {
			return List{}, err
		}
		next.Keys = append(next.Keys, *s.Subject)
	} else {
		if i < 0 {
			return List{}, fmt.Errorf("key %s is not on the trust list", s.Subject.Fingerprint)
		}
		next.Keys = slices.Delete(next.Keys, i, i+1)
		if len(next.Keys) == 0 {
			return List{}, errors.New("removing the last trusted key would leave nobody able to decide")
		}
	}
	next = next.sorted()
	if !slices.Equal(next.Keys, c.List.sorted().Keys) {
		return List{}, errors.New("the recorded list is not the list before it with this change applied")
	}
	return next, nil
}

// State replays the trust list along the audit chain.
type State struct {
	List *List
	// Root is the hash of the entry that initialised the list.
	Root string
	// bulk follows the bulk approvals whose entries are being read.
	bulk BulkRuns
	// Policies are the active review policies, by digest.
	Policies map[warrant.Digest]ActivePolicy
}

// ActivePolicy is a review policy in force, as audit verify replays it.
type ActivePolicy struct {
	Policy warrant.ReviewPolicy
	Signer string
	// Entry is the audit entry that added it.
	Entry int64
}

// PolicyChange is the body of a policy_added or policy_revoked audit entry.
type PolicyChange struct {
	Name      string               `json:"name"`
	Digest    warrant.Digest       `json:"digest"`
	Policy    warrant.ReviewPolicy `json:"policy"`
	Statement json.RawMessage      `json:"statement"`
	Signature string               `json:"signature"`
}

// BulkRuns follows bulk approvals along a chain for audit verify. A bulk approval is one
// statement over its Items entries, written one after another in one transaction: entry
// i > 0 must follow entry i-1 of the same statement, and a run may not stop before its
// last entry. State follows the OpenSSH-signed ones; iamattest's checker the IAM-attested
// ones. The zero value is ready; feed it the entries in order.
type BulkRuns struct {
	open *bulkRun // the run being read: nil between runs
}

type bulkRun struct {
	statement string
	next      int   // the item expected next
	seq       int64 // the last entry read
}

// Open reports whether a bulk approval's entries are being read.
func (b *BulkRuns) Open() bool { return b.open != nil }

// Next checks entry r (its body event) against the run being read. continues is true for
// entry i > 0 of a bulk approval: its statement names the head before the run's first
// entry, which was checked there, not the entry before this one. The problems are a run
// that stops before its last entry and an entry that does not follow its predecessor.
func (b *BulkRuns) Next(r warrant.AuditRecord, event json.RawMessage) (continues bool, problems []string) {
	run := b.open
	b.open = nil
	var d DecisionEvent
	bulk := r.Type == string(warrant.DecisionApproved) && json.Unmarshal(event, &d) == nil && d.Item != nil
	if run != nil && (!bulk || string(d.Statement) != run.statement) {
		problems = append(problems, fmt.Sprintf("a bulk approval's entries stop at entry %d, before all its tools were recorded", run.seq))
		run = nil
	}
	if !bulk {
		return false, problems
	}
	if *d.Item > 0 {
		continues = true
		if run == nil || run.next != *d.Item || run.seq != r.Seq-1 {
			problems = append(problems, fmt.Sprintf("entry %d of a bulk approval does not follow its entry %d", *d.Item, *d.Item-1))
		}
	}
	if *d.Item+1 < d.Items {
		b.open = &bulkRun{statement: string(d.Statement), next: *d.Item + 1, seq: r.Seq}
	}
	return continues, problems
}

// DecisionEvent is the part of a decision entry's body that audit verify checks,
// whoever attested the decision (an SSH key, an IAM principal).
type DecisionEvent struct {
	Server             string          `json:"server"`
	Tool               string          `json:"tool"`
	Digest             warrant.Digest  `json:"digest"`
	AcceptedSuspicious bool            `json:"acceptedSuspicious"`
	Statement          json.RawMessage `json:"statement"`
	Signature          string          `json:"signature"`
	// Item and Items place an entry of a bulk approval: it is entry Item (from 0) of the
	// Items consecutive entries recorded for one TypeBulk statement. Absent otherwise.
	Item  *int `json:"item,omitempty"`
	Items int  `json:"items,omitempty"`
	// Expect is the approved digest the decision replaced ("" for none).
	Expect warrant.Digest `json:"expect"`
	// Policy, on an approval by a review policy, names the policy and what it accepted;
	// such an entry carries no statement of its own.
	Policy *warrant.PolicyApproval `json:"policy,omitempty"`
}

// Describes reports whether s is a decision statement for the decision entry r with body
// d: the same decision, server, tool, digest and acceptance of suspicious text. Whether
// it names r's actor and the head before r is checked apart, so each can be reported.
func (s Statement) Describes(r warrant.AuditRecord, d DecisionEvent) bool {
	if s.Type == TypeBulk {
		return d.Item != nil && *d.Item >= 0 && *d.Item < len(s.Approvals) && d.Items == len(s.Approvals) &&
			r.Type == string(warrant.DecisionApproved) && s.Decision == warrant.DecisionApproved && s.Server == d.Server &&
			s.Approvals[*d.Item] == warrant.BulkItem{Tool: d.Tool, Digest: d.Digest} && !d.AcceptedSuspicious && !s.AcceptedSuspicious
	}
	return d.Item == nil && s.Type == TypeDecision && string(s.Decision) == r.Type && s.Server == d.Server && s.Tool == d.Tool &&
		s.Digest == d.Digest && s.AcceptedSuspicious == d.AcceptedSuspicious
}

// Step checks one audit entry (whose hash and log signature already verified) and
// advances the state: trust changes must be authorised; decisions must carry a statement
// signed by a key trusted at that point, naming this decision and the entry before it.
// It returns the problems found (none for other entry types).
func (st *State) Step(r warrant.AuditRecord, event json.RawMessage) []string {
	prev := warrant.AuditHead{Seq: r.Seq - 1, Hash: r.PrevHash}
	continues, p := st.bulk.Next(r, event)
	return append(p, st.step(r, event, prev, continues)...)
}

// step is Step for one entry; continues: it is entry i > 0 of a bulk approval
// (BulkRuns.Next), whose statement names the head before the run's first entry.
func (st *State) step(r warrant.AuditRecord, event json.RawMessage, prev warrant.AuditHead, continues bool) []string {
	switch r.Type {
	case EventTrustChanged:
		var c Change
		if err := json.Unmarshal(event, &c); err != nil {
			return []string{"trust change is not readable: " + err.Error()}
		}
		next, err := Apply(st.List, c, prev)
		if err != nil {
			return []string{err.Error()}
		}
		if c.Action == "init" {
			st.Root = r.Hash
		}
		st.List = &next
		return nil
	case warrant.EventPolicyAdded, warrant.EventPolicyRevoked:
		return st.stepPolicy(r, event, prev)
	case string(warrant.DecisionApproved), string(warrant.DecisionRejected), string(warrant.DecisionRolledBack):
		var d DecisionEvent
		if err := json.Unmarshal(event, &d); err != nil {
			return []string{"decision is not readable: " + err.Error()}
		}
		if d.Policy != nil {
			return st.stepByPolicy(r, d)
		}
		if len(d.Statement) == 0 {
			return []string{"the decision carries no person's signature"}
		}
		if st.List == nil {
			return []string{"a decision before the trust list was initialised"}
		}
		s, _, err := Check(*st.List, d.Statement, []byte(d.Signature))
		if err != nil {
			return []string{"person's signature: " + err.Error()}
		}
		var p []string
		if !s.Describes(r, d) {
			p = append(p, "the signed statement does not describe this decision")
		}
		if s.Signer != r.Actor {
			p = append(p, fmt.Sprintf("recorded actor %q is not the signer %q", r.Actor, s.Signer))
		}
		if !continues && s.AuditHead != prev {
			p = append(p, fmt.Sprintf("the statement was signed over audit head %d, not the entry before it (%d)", s.AuditHead.Seq, prev.Seq))
		}
		return p
	}
	return nil
}
