package approvalsapi

import (
	"encoding/json"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The wire: what each route is asked and answers, shared by the handler and the client.

// Audit export pages: at most MaxAuditPage entries and about auditPageBytes of export
// lines per response (API Gateway answers at most 6 MB from a Lambda function), the
// first entry always included.
const (
	MaxAuditPage   = 1000
	auditPageBytes = 4 << 20
	// AuditMoreHeader is "true" on an audit page cut short by the limits: ask again
	// with after = the last entry's seq.
	AuditMoreHeader = "Toolwarrant-Audit-More"
)

// ToolsAnswer is GET /v1/tools (Tools) or /v1/proposals (Proposals).
type ToolsAnswer struct {
	AuditHead warrant.AuditHead `json:"auditHead"`
	Tools     []warrant.ToolRow `json:"tools"`
	Proposals []warrant.ToolRow `json:"proposals"`
}

// DiffAnswer is GET …/diff.
type DiffAnswer struct {
	AuditHead      warrant.AuditHead  `json:"auditHead"`
	Server         string             `json:"server"`
	Tool           string             `json:"tool"`
	From           warrant.Digest     `json:"from"`
	To             warrant.Digest     `json:"to"`
	Drift          warrant.Drift      `json:"drift"`
	ToInspection   warrant.Inspection `json:"toInspection"`
	FromInspection warrant.Inspection `json:"fromInspection"`
	ToDefinition   json.RawMessage    `json:"toDefinition"`
	FromDefinition json.RawMessage    `json:"fromDefinition"`
	// DefinitionsOmitted: the two definitions do not fit one Lambda response; Diff reads
	// each version separately and fills them in.
	DefinitionsOmitted bool `json:"definitionsOmitted,omitempty"`
}

// View is the answer as the service's DiffView (the versions hold only their canonical
// definitions).
func (d DiffAnswer) View() warrant.DiffView {
	return warrant.DiffView{Server: d.Server, Tool: d.Tool, From: d.From, To: d.To, Drift: d.Drift,
		FromInspection: d.FromInspection, ToInspection: d.ToInspection,
		FromVersion: warrant.Version{Digest: d.From, Canonical: d.FromDefinition}, ToVersion: warrant.Version{Digest: d.To, Canonical: d.ToDefinition}}
}

// VersionAnswer is GET …/versions/{v}: one version (its canonical definition, the exact
// bytes its digest covers; a client escapes suspicious characters before printing), what
// textguard found in it, its decisions, and the audit head read before it.
type VersionAnswer struct {
	AuditHead warrant.AuditHead `json:"auditHead"`
	warrant.VersionDoc
}

// DecisionRequest is the body of POST …/decisions.
type DecisionRequest struct {
	// Decision is approved, rejected or rolled_back.
	Decision warrant.DecisionKind `json:"decision"`
	// Digest is the exact digest (sha256: and 64 hex digits).
	Digest warrant.Digest `json:"digest"`
	// AuditHead is the head the caller read (from /v1/proposals or the diff): the
	// decision is recorded only if it is still the head.
	AuditHead *warrant.AuditHead `json:"auditHead"`
	// AcceptSuspicious decides although the version has suspicious text (recorded).
	AcceptSuspicious bool   `json:"acceptSuspicious"`
	Note             string `json:"note"`
}

// DecisionAnswer is POST …/decisions.
type DecisionAnswer struct {
	Server    string               `json:"server"`
	Tool      string               `json:"tool"`
	Digest    warrant.Digest       `json:"digest"`
	Decision  warrant.DecisionKind `json:"decision"`
	By        string               `json:"by"`
	AuditHead *warrant.AuditHead   `json:"auditHead"`
	// Unchanged is true when the digest was already the approved one (nothing recorded).
	Unchanged bool `json:"unchanged"`
}

// BulkAnswer is GET /v1/servers/{server}/bulk: the audit head read first, the routine
// first-sight tools of the server one bulk approval may name (warrant.BulkCandidates),
// and the pending tools held for review one at a time, with the reason.
type BulkAnswer struct {
	AuditHead warrant.AuditHead  `json:"auditHead"`
	Server    string             `json:"server"`
	Items     []warrant.BulkItem `json:"items"`
	Held      []BulkHeld         `json:"held"`
}

// BulkHeld is a pending tool a bulk approval may not name.
type BulkHeld struct {
	Tool   string           `json:"tool"`
	Digest warrant.Digest   `json:"digest"`
	Grade  warrant.Severity `json:"grade"`
	Reason string           `json:"reason"`
}

// Held returns the held tools as the wire shows them (never nil).
func Held(held []warrant.HeldTool) []BulkHeld {
	out := make([]BulkHeld, 0, len(held))
	for _, t := range held {
		out = append(out, BulkHeld{Tool: t.Row.Tool, Digest: t.Row.Current, Grade: t.Row.Grade, Reason: t.Reason})
	}
	return out
}

// BulkRequest is the body of POST /v1/servers/{server}/bulk: one bulk approval of at
// most warrant.MaxBulk tools, recorded as one statement attesting the caller's principal,
// only if AuditHead is still the head.
type BulkRequest struct {
	Items     []warrant.BulkItem `json:"items"`
	AuditHead *warrant.AuditHead `json:"auditHead"`
	Note      string             `json:"note"`
}

// BulkApproval is the answer of POST /v1/servers/{server}/bulk: the tools approved, by
// whom, and the head after the last approval.
type BulkApproval struct {
	Server    string             `json:"server"`
	Approved  []warrant.BulkItem `json:"approved"`
	By        string             `json:"by"`
	AuditHead warrant.AuditHead  `json:"auditHead"`
}
