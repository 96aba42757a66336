package approvalproof

import (
	"fmt"
	"sort"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The rules a locked digest fails, both CRITICAL.
const (
	// RuleApprovalMissing: no decision of the log ever approved the digest for its tool.
	RuleApprovalMissing warrant.Rule = "approval-missing"
	// RuleApprovalRevoked: the digest was approved, but is no longer its tool's approved
	// digest: rejected, or superseded by another approval or a rollback.
	RuleApprovalRevoked warrant.Rule = "approval-revoked"
)

// Rules are the approval rules with their severity and summary, for reports (SARIF).
var Rules = []warrant.RuleInfo{
	{Rule: RuleApprovalMissing, Severity: warrant.Critical, Summary: "a locked tool digest was never approved in toolwarrant's transparency log"},
	{Rule: RuleApprovalRevoked, Severity: warrant.Critical, Summary: "a locked tool digest was approved, but has since been rejected or superseded by another digest"},
}

// Want is one locked digest to check: a tool of a server at one digest, and the client
// profiles of the lockfile it is pinned under.
type Want struct {
	Server, Tool, Digest string
	Profiles             []string
}

// Status is the outcome of one Want.
type Status string

// The outcomes.
const (
	StatusApproved Status = "approved"
	StatusMissing  Status = "missing"
	StatusRevoked  Status = "revoked"
)

// Result is what the log says of one locked digest.
type Result struct {
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	Digest   string   `json:"digest"`
	Profiles []string `json:"profiles"`
	Status   Status   `json:"status"`
	// Rule is RuleApprovalMissing or RuleApprovalRevoked ("" when approved).
	Rule warrant.Rule `json:"rule,omitempty"`
	// Reason says what the log holds, in one line.
	Reason string `json:"reason"`
	// Approval is the entry that made the digest its tool's approved one (approved or
	// rolled_back; the latest such entry): nil when there is none.
	Approval *Entry `json:"approval,omitempty"`
	// Revocation is the entry after which it no longer is (revoked only).
	Revocation *Entry `json:"revocation,omitempty"`
	// Approved is the tool's approved digest as of the checkpoint ("" when none), when it
	// is not Digest.
	Approved string `json:"approvedNow,omitempty"`
	// Review is the toolwarrant command that shows this digest, to review it.
	Review string `json:"review,omitempty"`
	// Approve is the toolwarrant command that would approve it.
	Approve string `json:"approve,omitempty"`

	decision *Decision
}

// Entry names a decision entry in a report.
type Entry struct {
	// Index is its leaf index (its audit seq is Index+1).
	Index int64  `json:"index"`
	Seq   int64  `json:"seq"`
	Type  string `json:"type"`
	// Digest is the digest it decided.
	Digest string `json:"digest"`
	Actor  string `json:"actor"`
	At     string `json:"at"`
}

func entryOf(d *Decision) *Entry {
	if d == nil {
		return nil
	}
	return &Entry{Index: d.Index, Seq: d.Index + 1, Type: d.Type, Digest: d.Digest, Actor: d.Actor, At: d.At}
}

// Failed reports whether r fails (missing or revoked).
func (r Result) Failed() bool { return r.Status != StatusApproved }

// Severity is r's grade: CRITICAL when it failed, none otherwise.
func (r Result) Severity() warrant.Severity {
	if r.Failed() {
		return warrant.Critical
	}
	return warrant.SeverityNone
}

// ReviewCommands returns the toolwarrant commands that show and approve digest.
func ReviewCommands(server, tool, digest string) (show, approve string) {
	return fmt.Sprintf("toolwarrant show %s %s --version %s", shellWord(server), shellWord(tool), digest),
		fmt.Sprintf("toolwarrant approve %s %s --hash %s --sign-key KEY", shellWord(server), shellWord(tool), digest)
}

// shellWord quotes s for a POSIX shell when it holds anything but safe characters.
func shellWord(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == '@' || c == '+' || c == '=') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	out := "'"
	for _, c := range s {
		if c == '\'' {
			out += `'\''`
			continue
		}
		out += string(c)
	}
	return out + "'"
}

type toolKey struct{ server, tool string }

type digestKey struct{ server, tool, digest string }

// state is the log's decisions replayed.
type state struct {
	// approved is each tool's approved digest, and the entry that made it so.
	approved map[toolKey]*Decision
	// lastApproval is the latest approved or rolled_back entry of each digest.
	lastApproval map[digestKey]*Decision
	// lastRejection is the latest rejected entry of each digest.
	lastRejection map[digestKey]*Decision
	// cleared is the entry that last cleared or replaced each digest's approval.
	cleared map[digestKey]*Decision
}

// replay applies the decisions in order as toolwarrant's catalog does: approved and
// rolled_back make the digest the approved one, rejected clears it if it was.
func replay(ds []Decision) *state {
	s := &state{approved: map[toolKey]*Decision{}, lastApproval: map[digestKey]*Decision{}, lastRejection: map[digestKey]*Decision{}, cleared: map[digestKey]*Decision{}}
	for i := range ds {
		d := &ds[i]
		tk, dk := toolKey{d.Server, d.Tool}, digestKey{d.Server, d.Tool, d.Digest}
		cur := s.approved[tk]
		switch d.Type {
		case TypeApproved, TypeRolledBack:
			if cur != nil && cur.Digest != d.Digest {
				s.cleared[digestKey{d.Server, d.Tool, cur.Digest}] = d
			}
			s.approved[tk] = d
			s.lastApproval[dk] = d
		case TypeRejected:
			s.lastRejection[dk] = d
			if cur != nil && cur.Digest == d.Digest {
				delete(s.approved, tk)
				s.cleared[dk] = d
			}
		}
	}
	return s
}

// Check grades every want against the decisions of the log as of its checkpoint, in the
// order server, tool, digest.
func (l *Log) Check(wants []Want) []Result {
	s := replay(l.Decisions)
	out := make([]Result, 0, len(wants))
	for _, w := range sortedWants(wants) {
		r := Result{Server: w.Server, Tool: w.Tool, Digest: w.Digest, Profiles: w.Profiles}
		tk, dk := toolKey{w.Server, w.Tool}, digestKey{w.Server, w.Tool, w.Digest}
		cur := s.approved[tk]
		if cur != nil {
			r.Approved = cur.Digest
		}
		switch {
		case cur != nil && cur.Digest == w.Digest:
			r.Status, r.decision = StatusApproved, cur
			r.Approval = entryOf(cur)
			r.Approved = ""
			r.Reason = fmt.Sprintf("approved by %s at entry %d (%s)", printable(cur.Actor), cur.Index+1, cur.Type)
		case s.lastApproval[dk] != nil:
			r.Status, r.Rule = StatusRevoked, RuleApprovalRevoked
			r.Approval = entryOf(s.lastApproval[dk])
			by := s.cleared[dk]
			r.Revocation = entryOf(by)
			switch {
			case by != nil && by.Type == TypeRejected:
				r.Reason = fmt.Sprintf("approved at entry %d, then rejected by %s at entry %d", r.Approval.Seq, printable(by.Actor), by.Index+1)
			case by != nil:
				r.Reason = fmt.Sprintf("approved at entry %d, then superseded at entry %d: %s is the approved digest now (%s by %s)", r.Approval.Seq, by.Index+1, by.Digest, by.Type, printable(by.Actor))
			default:
				r.Reason = fmt.Sprintf("approved at entry %d, but not the approved digest now", r.Approval.Seq)
			}
			if cur == nil {
				r.Reason += "; the tool has no approved digest now"
			}
		default:
			r.Status, r.Rule = StatusMissing, RuleApprovalMissing
			switch {
			case s.lastRejection[dk] != nil:
				rej := s.lastRejection[dk]
				r.Reason = fmt.Sprintf("never approved; rejected by %s at entry %d", printable(rej.Actor), rej.Index+1)
			case cur != nil:
				r.Reason = fmt.Sprintf("never approved; the tool's approved digest is %s", cur.Digest)
			case !l.knowsServer(w.Server):
				r.Reason = fmt.Sprintf("never approved; the log has no decision on any tool of a server %q (is it named otherwise in toolwarrant's catalog?)", printable(w.Server))
			default:
				r.Reason = "never approved; the log has no decision on this tool"
			}
		}
		if r.Failed() {
			r.Review, r.Approve = ReviewCommands(w.Server, w.Tool, w.Digest)
		}
		out = append(out, r)
	}
	return out
}

func (l *Log) knowsServer(server string) bool {
	for _, d := range l.Decisions {
		if d.Server == server {
			return true
		}
	}
	return false
}

// sortedWants merges wants of the same server, tool and digest (their profiles joined)
// and sorts them by server, tool, digest.
func sortedWants(wants []Want) []Want {
	idx := map[digestKey]int{}
	var out []Want
	for _, w := range wants {
		k := digestKey{w.Server, w.Tool, w.Digest}
		if i, ok := idx[k]; ok {
			for _, p := range w.Profiles {
				if !contains(out[i].Profiles, p) {
					out[i].Profiles = append(out[i].Profiles, p)
				}
			}
			continue
		}
		idx[k] = len(out)
		w.Profiles = append([]string(nil), w.Profiles...)
		out = append(out, w)
	}
	for i := range out {
		sort.Strings(out[i].Profiles)
		if out[i].Profiles == nil {
			out[i].Profiles = []string{}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Server != b.Server {
			return lockfile.Less(a.Server, b.Server)
		}
		if a.Tool != b.Tool {
			return lockfile.Less(a.Tool, b.Tool)
		}
		return a.Digest < b.Digest
	})
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// WantsOf lists every tool digest a version 2 lockfile pins, with the profiles it is
// pinned under.
func WantsOf(lf *lockfile.LockfileV2) []Want {
	var out []Want
	for server, s := range lf.Servers {
		for profile, p := range s.Profiles {
			for _, t := range p.Tools {
				out = append(out, Want{Server: server, Tool: t.Name, Digest: t.Digest, Profiles: []string{profile}})
			}
		}
	}
	return sortedWants(out)
}
