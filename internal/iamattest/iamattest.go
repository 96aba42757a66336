// Package iamattest is how a human decision is attested on AWS: the approvals API runs
// behind API Gateway with AWS_IAM authorization, so the approver is the IAM principal
// whose SigV4 signature API Gateway verified, and the decision's audit entry — signed by
// the KMS log key, which only the crawl, approvals and checkpoint roles may use — records
// that principal's ARN with a canonical statement naming server, tool, digest, decision
// and the audit head the approver read (trust.Statement, the same shape OpenSSH-signed
// decisions use). The entry's "signature" field holds SignaturePrefix and the API Gateway
// request ID instead of an SSH signature.
//
// [Attester] is that attestation as the decision use case (warrant.Service.DecideAs) takes
// it. [Check] is the audit-verify step for such entries; [Checker] routes them to it and every
// other entry to the SSH trust-list step, so one verifier serves local and AWS chains.
// The package is pure (standard library, trust, warrant).
package iamattest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// SignaturePrefix starts the signature field of an IAM-attested decision.
const SignaturePrefix = "aws-iam:"

// Role returns the account and role name of an IAM role ARN
// (arn:aws:iam::123456789012:role/path/Name) or of a session of it
// (arn:aws:sts::123456789012:assumed-role/Name/session). ok is false for other ARNs.
func Role(arn string) (account, role string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[4] == "" {
		return "", "", false
	}
	res := parts[5]
	switch {
	case parts[2] == "iam" && strings.HasPrefix(res, "role/"):
		segs := strings.Split(res, "/")
		return parts[4], segs[len(segs)-1], segs[len(segs)-1] != ""
	case parts[2] == "sts" && strings.HasPrefix(res, "assumed-role/"):
		segs := strings.Split(res, "/")
		return parts[4], segs[1], len(segs) >= 3 && segs[1] != ""
	}
	return "", "", false
}

// Same reports whether two principal ARNs are the same identity: equal, or the same role
// (a role ARN and any of its sessions).
func Same(a, b string) bool {
	if a == b {
		return a != ""
	}
	aa, ar, ok1 := Role(a)
	ba, br, ok2 := Role(b)
	return ok1 && ok2 && aa == ba && ar == br
}

// Attester is how a decision is attested on AWS: the caller's IAM principal, which API
// Gateway's AWS_IAM authorizer verified, with the request ID as the signature. It
// implements warrant.Attester.
type Attester struct {
	// Principal is the caller's principal ARN ("" is refused).
	Principal string
	// RequestID is API Gateway's request ID, recorded after SignaturePrefix.
	RequestID string
	// CrawlRole is the crawl function's role ARN: it and its sessions can never decide.
	CrawlRole string
}

var _ warrant.BulkAttester = Attester{}

// Decider returns the principal; warrant.ErrForbidden for none and for the crawl role.
func (a Attester) Decider(context.Context, warrant.AuditHead) (string, error) {
	switch {
	case a.Principal == "":
		return "", fmt.Errorf("%w: no IAM principal in the request context: the route must use AWS_IAM authorization", warrant.ErrForbidden)
	case Same(a.Principal, a.CrawlRole):
		return "", fmt.Errorf("%w: %s is the crawl role, which can never decide", warrant.ErrForbidden, a.Principal)
	}
	return a.Principal, nil
}

// Same is the package's Same: a role and its sessions are one identity.
func (Attester) Same(a, b string) bool { return Same(a, b) }

// Attest returns the claim's canonical decision statement (trust.NewDecision) and
// SignaturePrefix followed by the request ID.
func (a Attester) Attest(_ context.Context, c warrant.Claim) ([]byte, []byte, error) {
	stmt, err := trust.NewDecision(c.Kind, c.Server, c.Tool, c.Digest, c.AcceptedSuspicious, c.Decider, c.Head, c.At).Bytes()
	if err != nil {
		return nil, nil, err
	}
	return stmt, []byte(SignaturePrefix + a.RequestID), nil
}

// AttestBulk returns the claim's canonical bulk approval statement (trust.NewBulkApproval:
// the server, the exact list, the decider and the head read) and SignaturePrefix followed
// by the request ID.
func (a Attester) AttestBulk(_ context.Context, c warrant.BulkClaim) ([]byte, []byte, error) {
	stmt, err := trust.NewBulkApproval(c.Server, c.Items, c.Decider, c.Head, c.At).Bytes()
	if err != nil {
		return nil, nil, err
	}
	return stmt, []byte(SignaturePrefix + a.RequestID), nil
}

// Attested reports whether an audit event body is an IAM-attested decision.
func Attested(event json.RawMessage) bool {
	var d struct {
		Signature string `json:"signature"`
	}
	return json.Unmarshal(event, &d) == nil && strings.HasPrefix(d.Signature, SignaturePrefix)
}

// Check verifies one IAM-attested decision entry (its hash and log signature already
// verified): the statement is canonical, describes this decision, names the recorded
// actor as signer and the entry before this one as the audit head read. An entry of a bulk
// approval after its first is checked by [Checker], which knows the entries before it.
func Check(r warrant.AuditRecord, event json.RawMessage) []string {
	return check(r, event, false)
}

// check is Check; continues: the entry is entry i > 0 of a bulk approval whose entries
// trust.BulkRuns follows, so its statement names the head before the run's first entry
// (checked there), not the entry before this one.
func check(r warrant.AuditRecord, event json.RawMessage, continues bool) []string {
	var d trust.DecisionEvent
	if err := json.Unmarshal(event, &d); err != nil {
		return []string{"decision is not readable: " + err.Error()}
	}
	s, err := trust.ParseStatement(d.Statement)
	if err != nil {
		return []string{"IAM-attested decision: " + err.Error()}
	}
	var p []string
	if !s.Describes(r, d) {
		p = append(p, "the attested statement does not describe this decision")
	}
	if s.Signer != r.Actor {
		p = append(p, fmt.Sprintf("recorded actor %q is not the attested principal %q", r.Actor, s.Signer))
	}
	if _, _, ok := Role(s.Signer); !ok && !strings.HasPrefix(s.Signer, "arn:aws") {
		p = append(p, fmt.Sprintf("attested principal %q is not an AWS ARN", s.Signer))
	}
	if prev := (warrant.AuditHead{Seq: r.Seq - 1, Hash: r.PrevHash}); !continues && s.AuditHead != prev {
		p = append(p, fmt.Sprintf("the statement was made over audit head %d, not the entry before it (%d)", s.AuditHead.Seq, prev.Seq))
	}
	return p
}

// Checker returns an audit.Options.Check that sends IAM-attested decisions to Check and
// every other entry to next (trust.State.Step for OpenSSH-signed decisions and trust list
// changes). With crawlRole set, a decision attested by that role (or a session of it) is
// a problem: the crawl identity can never decide.
//
// IAM-attested bulk approvals are followed with trust.BulkRuns, as State follows the
// OpenSSH-signed ones: fed every IAM-attested entry, and every entry while such a run is
// open (so that one cut short is found). The returned func keeps that run between calls:
// use one per verification, fed the entries in order.
func Checker(next func(warrant.AuditRecord, json.RawMessage) []string, crawlRole string) func(warrant.AuditRecord, json.RawMessage) []string {
	var runs trust.BulkRuns
	return func(r warrant.AuditRecord, event json.RawMessage) []string {
		var p []string
		continues := false
		attested := Attested(event)
		if attested || runs.Open() {
			continues, p = runs.Next(r, event)
		}
		switch r.Type {
		case string(warrant.DecisionApproved), string(warrant.DecisionRejected), string(warrant.DecisionRolledBack):
			if attested {
				p = append(p, check(r, event, continues)...)
				if crawlRole != "" && Same(r.Actor, crawlRole) {
					p = append(p, "the decision was made by the crawl role, which may never decide")
				}
				return p
			}
		}
		if next == nil {
			return p
		}
		return append(p, next(r, event)...)
	}
}
