package warrant

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Index is the derived state of one server's tools: what its crawl records — crawls and
// gateway records, with the versions and proposals they carry — made of each tool. A
// driver keeps it beside the history it is derived from, updates it with Apply in the
// same write as the record it applies, and reads it back; it never derives it itself.
// Together with the server's LastSourceCrawl and each tool's ApprovalState (what its
// decisions made of it) it is everything a ToolRecord says (Records) and everything
// Proposals lists (Pending).
//
// Per tool it holds the version digests in first-seen order, the proposals opened, what
// the last crawl listing the tool saw and the digests crawls observed (least recently
// observed first), whether the server's last crawl still lists it, and what the last
// gateway record observing it saw. It changes only when a record changes one of these,
// so an unchanged listing leaves it as it is (Apply reports whether it changed).
//
// Its JSON form (MarshalJSON) is what drivers store. It is part of their stored format:
// DynamoDB's INDEX item has held exactly this encoding since catalog/1, so a change to it
// needs a new format version in every driver.
//
// An Index is not safe for concurrent use; drivers read one per write or read.
type Index struct {
	tools map[string]*indexTool
}

// indexTool is one tool's entry; the field tags are the stored encoding (see Index).
type indexTool struct {
	// Versions are the digests in first-seen order; Proposals the proposals opened.
	Versions  []Digest        `json:"v,omitempty"`
	Proposals []indexProposal `json:"p,omitempty"`
	// Cur/Ref are what the last SourceCrawl listing the tool saw; Order the digests
	// observed by SourceCrawl records, least recently observed first (Previous is the
	// last one ≠ the current digest).
	Cur   Digest   `json:"c,omitempty"`
	Ref   string   `json:"r,omitempty"`
	Order []Digest `json:"o,omitempty"`
	// Seen says whether any SourceCrawl observed the tool; Gone, when > 0, is the last
	// SourceCrawl that listed it (the server's last SourceCrawl did not).
	Seen bool  `json:"s,omitempty"`
	Gone int64 `json:"g,omitempty"`
	// GCur/GRef are what the last SourceGateway record observing the tool saw, GLast that
	// record's number (0: none); GSeen says whether any gateway record observed a digest
	// of it. The later of the two sources' last observations is the tool's current one.
	GCur  Digest `json:"gc,omitempty"`
	GRef  string `json:"gr,omitempty"`
	GLast int64  `json:"gl,omitempty"`
	GSeen bool   `json:"gd,omitempty"`
}

type indexProposal struct {
	Digest Digest    `json:"d"`
	At     time.Time `json:"a"`
	Crawl  int64     `json:"n"`
}

type indexJSON struct {
	Tools map[string]*indexTool `json:"t"`
}

// NewIndex returns the index of a server without records.
func NewIndex() *Index { return &Index{tools: map[string]*indexTool{}} }

// MarshalJSON encodes the index in its stored form (deterministic: equal indexes encode
// to equal bytes).
func (ix *Index) MarshalJSON() ([]byte, error) {
	tools := ix.tools
	if tools == nil {
		tools = map[string]*indexTool{}
	}
	return json.Marshal(indexJSON{Tools: tools})
}

// UnmarshalJSON decodes an index stored by MarshalJSON.
func (ix *Index) UnmarshalJSON(b []byte) error {
	var j indexJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode index: %w", err)
	}
	ix.tools = j.Tools
	if ix.tools == nil {
		ix.tools = map[string]*indexTool{}
	}
	for name, t := range ix.tools {
		if t == nil {
			return fmt.Errorf("decode index: tool %q has no entry", name)
		}
	}
	return nil
}

func (ix *Index) tool(name string) *indexTool {
	if ix.tools == nil {
		ix.tools = map[string]*indexTool{}
	}
	t := ix.tools[name]
	if t == nil {
		t = &indexTool{}
		ix.tools[name] = t
	}
	return t
}

// HasVersion reports whether d is a version of tool the index lists.
func (ix *Index) HasVersion(tool string, d Digest) bool {
	t := ix.tools[tool]
	return t != nil && slices.Contains(t.Versions, d)
}

// VersionKeys returns the key of every version the index lists, sorted by tool then
// digest (Catalog.VersionKeys).
func (ix *Index) VersionKeys(server string) []VersionKey {
	out := []VersionKey{}
	for tool, t := range ix.tools {
		for _, d := range t.Versions {
			out = append(out, VersionKey{Server: server, Tool: tool, Digest: d})
		}
	}
	slices.SortFunc(out, func(a, b VersionKey) int {
		return cmp.Or(strings.Compare(a.Tool, b.Tool), strings.Compare(string(a.Digest), string(b.Digest)))
	})
	return out
}

// Apply folds one crawl record into the index of its server. lastSourceCrawl is the
// server's LastSourceCrawl before r (Server.LastSourceCrawl as read by the write that
// records r). It reports whether the index changed: an unchanged listing changes nothing,
// and the driver need not write it.
//
// r must pass ValidateCrawl, and each of its proposals must name a version the index
// lists or r records (ErrInvalid otherwise; the index is then unchanged). A version the
// index already lists is not added twice: whether the stored one holds the same bytes is
// the driver's check. Apply does not check r.Crawl.Seq against the server's last crawl:
// that is the write's check-and-set.
func (ix *Index) Apply(r CrawlRecord, lastSourceCrawl int64) (changed bool, err error) {
	if err := ValidateCrawl(r); err != nil {
		return false, err
	}
	for _, p := range r.Proposals {
		if !ix.HasVersion(p.Tool, p.Digest) && !slices.ContainsFunc(r.Versions, func(v Version) bool { return v.Tool == p.Tool && v.Digest == p.Digest }) {
			return false, fmt.Errorf("crawl %s #%d: proposal %s %s names no version of the tool: %w", r.Crawl.Server, r.Crawl.Seq, p.Tool, p.Digest, ErrInvalid)
		}
	}
	before, _ := ix.MarshalJSON()
	ix.apply(r, lastSourceCrawl)
	after, _ := ix.MarshalJSON()
	return !bytes.Equal(before, after), nil
}

// apply is Apply without the checks (RebuildIndex replays history that passed them).
func (ix *Index) apply(r CrawlRecord, lastSourceCrawl int64) {
	cr := r.Crawl
	for _, v := range r.Versions {
		if t := ix.tool(v.Tool); !slices.Contains(t.Versions, v.Digest) {
			t.Versions = append(t.Versions, v.Digest)
		}
	}
	for _, p := range r.Proposals {
		t := ix.tool(p.Tool)
		if !slices.ContainsFunc(t.Proposals, func(x indexProposal) bool { return x.Digest == p.Digest }) {
			t.Proposals = append(t.Proposals, indexProposal{Digest: p.Digest, At: p.OpenedAt.UTC(), Crawl: p.Crawl})
		}
	}
	if cr.Source != SourceCrawl {
		// A gateway record is partial: it updates what it observed and removes nothing.
		for _, o := range cr.Observations {
			t := ix.tool(o.Tool)
			t.GCur, t.GRef, t.GLast = o.Digest, o.Refused, cr.Seq
			t.GSeen = t.GSeen || o.Digest != ""
		}
		return
	}
	listed := make(map[string]bool, len(cr.Observations))
	for _, o := range cr.Observations {
		listed[o.Tool] = true
		t := ix.tool(o.Tool)
		t.Seen, t.Gone, t.Cur, t.Ref = true, 0, o.Digest, o.Refused
		if o.Digest != "" && (len(t.Order) == 0 || t.Order[len(t.Order)-1] != o.Digest) {
			t.Order = append(slices.DeleteFunc(t.Order, func(d Digest) bool { return d == o.Digest }), o.Digest)
		}
	}
	for name, t := range ix.tools {
		// Listed by the previous crawl (Gone is 0) and not by this one: it was last listed
		// by the previous crawl.
		if !listed[name] && t.Seen && t.Gone == 0 {
			t.Gone = lastSourceCrawl
		}
	}
}

// Records derives the records of the server's tools (sorted by tool) from the index, the
// server's LastSourceCrawl and its tools' approval states (by tool name; a tool without
// one has no decision): what Catalog.Tools and ServerTools return. A tool is listed once
// it has a version or a gateway record observed a digest of it. Its current observation
// is that of the later record, crawl or gateway, that observed it (ToolRecord).
func (ix *Index) Records(server string, lastSourceCrawl int64, approvals map[string]ApprovalState) []ToolRecord {
	names := make([]string, 0, len(ix.tools))
	for n, t := range ix.tools {
		if len(t.Versions) > 0 || t.GSeen {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]ToolRecord, 0, len(names))
	for _, n := range names {
		out = append(out, ix.tools[n].record(server, n, lastSourceCrawl, approvals[n]))
	}
	return out
}

func (t *indexTool) record(server, tool string, lsc int64, a ApprovalState) ToolRecord {
	r := ToolRecord{Server: server, Tool: tool, ServerLastCrawl: lsc, Versions: len(t.Versions)}
	if t.Seen {
		r.Current, r.Refused, r.CurrentSource = t.Cur, t.Ref, SourceCrawl
		r.LastCrawl = lsc
		if t.Gone > 0 {
			r.LastCrawl = t.Gone
		}
	}
	if t.GLast > r.LastCrawl {
		r.LastCrawl, r.Current, r.Refused, r.CurrentSource = t.GLast, t.GCur, t.GRef, SourceGateway
	}
	for i := len(t.Order) - 1; i >= 0; i-- {
		if t.Order[i] != r.Current {
			r.Previous = t.Order[i]
			break
		}
	}
	r.Approved = a.Approved
	if r.Current != "" {
		r.CurrentDecision = a.Latest[r.Current]
	}
	return r
}

// Pending returns the server's pending proposals — those no decision names the digest of
// — sorted by tool, then in the order they were opened: what Catalog.Proposals returns
// for the server.
func (ix *Index) Pending(server string, approvals map[string]ApprovalState) []Proposal {
	out := []Proposal{}
	for _, n := range slices.Sorted(maps.Keys(ix.tools)) {
		for _, p := range ix.tools[n].Proposals {
			if _, decided := approvals[n].Latest[p.Digest]; !decided {
				out = append(out, Proposal{Server: server, Tool: n, Digest: p.Digest, OpenedAt: p.At, Crawl: p.Crawl})
			}
		}
	}
	return out
}

// RebuildIndex derives a server's index from its history once: the records of a catalog
// written before the driver kept an index (a format upgrade). crawls are the server's
// crawl records with their observations (any order; they are replayed by number);
// versions and proposals are the server's, each replayed with the crawl that recorded it
// (Version.FirstCrawl, Proposal.Crawl). Versions need no Canonical bytes. The result is
// the index that applying each record in turn would have built.
func RebuildIndex(crawls []Crawl, versions []Version, proposals []Proposal) *Index {
	crawls = slices.Clone(crawls)
	slices.SortFunc(crawls, func(a, b Crawl) int { return cmp.Compare(a.Seq, b.Seq) })
	var last int64
	if n := len(crawls); n > 0 {
		last = crawls[n-1].Seq
	}
	// The crawl each version and proposal is replayed with: the one that recorded it,
	// clamped to the records there are (the history of a catalog written by the service
	// never needs the clamp).
	at := func(seq int64) int64 { return min(max(seq, 1), max(last, 1)) }
	vs := map[int64][]Version{}
	versions = slices.Clone(versions)
	slices.SortStableFunc(versions, func(a, b Version) int {
		return cmp.Or(cmp.Compare(a.FirstCrawl, b.FirstCrawl), a.FirstSeenAt.Compare(b.FirstSeenAt), strings.Compare(string(a.Digest), string(b.Digest)))
	})
	for _, v := range versions {
		vs[at(v.FirstCrawl)] = append(vs[at(v.FirstCrawl)], v)
	}
	ps := map[int64][]Proposal{}
	proposals = slices.Clone(proposals)
	slices.SortStableFunc(proposals, func(a, b Proposal) int {
		return cmp.Or(cmp.Compare(a.Crawl, b.Crawl), strings.Compare(string(a.Digest), string(b.Digest)))
	})
	for _, p := range proposals {
		ps[at(p.Crawl)] = append(ps[at(p.Crawl)], p)
	}
	ix := NewIndex()
	if len(crawls) == 0 {
		ix.apply(CrawlRecord{Crawl: Crawl{Source: SourceGateway}, Versions: vs[1], Proposals: ps[1]}, 0)
		return ix
	}
	var lsc int64
	for _, c := range crawls {
		ix.apply(CrawlRecord{Crawl: c, Versions: vs[c.Seq], Proposals: ps[c.Seq]}, lsc)
		if c.Source == SourceCrawl {
			lsc = c.Seq
		}
	}
	return ix
}

// ApprovalState is what one tool's decisions made of it: its approved digest and who
// made it so, and the latest decision on each digest decided. A driver keeps it beside
// the decisions, updates it with Decide in the same write as the decision, and reads it
// back (Index.Records, Index.Pending).
type ApprovalState struct {
	// Approved is the approved digest, "" for none; By and At are the actor and time of
	// the decision that made it the approved one (approved or rolled_back).
	Approved Digest
	By       string
	At       time.Time
	// Decisions is how many decisions the tool has had.
	Decisions int64
	// Latest is the kind of the latest decision on each digest decided (nil: none).
	Latest map[Digest]DecisionKind
}

// ValidateDecision checks a decision before any driver stores it (Catalog.Decide): a
// known kind, a valid server and tool name, a valid digest and Expect ("" or valid).
// ErrInvalid otherwise.
func ValidateDecision(d Decision) error {
	switch d.Kind {
	case DecisionApproved, DecisionRejected, DecisionRolledBack:
	default:
		return fmt.Errorf("decision %q: %w", d.Kind, ErrInvalid)
	}
	if !d.Digest.Valid() || (d.Expect != "" && !d.Expect.Valid()) || ValidateServerName(d.Server) != nil || !ValidToolName(d.Tool) {
		return fmt.Errorf("decision on %s/%s: malformed server, tool or digest: %w", d.Server, d.Tool, ErrInvalid)
	}
	return nil
}

// Decide returns the state after decision d: approved and rolled_back make d.Digest the
// approved digest; rejected clears the approval if it was d.Digest and leaves it (and who
// made it) as it is otherwise. ErrInvalid when d does not pass ValidateDecision;
// ErrConflict when the approved digest is not d.Expect (the decider read another). a is
// not changed.
func (a ApprovalState) Decide(d Decision) (ApprovalState, error) {
	if err := ValidateDecision(d); err != nil {
		return a, err
	}
	if a.Approved != d.Expect {
		return a, fmt.Errorf("the approved digest of %s/%s is %q, not %q as read: %w", d.Server, d.Tool, a.Approved, d.Expect, ErrConflict)
	}
	return a.next(d), nil
}

func (a ApprovalState) next(d Decision) ApprovalState {
	n := a
	n.Latest = maps.Clone(a.Latest)
	if n.Latest == nil {
		n.Latest = map[Digest]DecisionKind{}
	}
	n.Latest[d.Digest] = d.Kind
	n.Decisions++
	switch {
	case d.Kind == DecisionApproved || d.Kind == DecisionRolledBack:
		n.Approved, n.By, n.At = d.Digest, d.Actor, d.At.UTC()
	case a.Approved == d.Digest: // rejected: the approved digest
		n.Approved, n.By, n.At = "", "", time.Time{}
	}
	return n
}

// RebuildApproval derives a tool's approval state from its decisions, oldest first,
// once: for a catalog written before the driver kept the state (a format upgrade).
func RebuildApproval(decisions []Decision) ApprovalState {
	var a ApprovalState
	for _, d := range decisions {
		a = a.next(d)
	}
	return a
}

// Approvals returns the approvals of the tools of states (server → tool → state) that
// have an approved digest, sorted by server then tool: what Catalog.Approvals returns.
func Approvals(states map[string]map[string]ApprovalState) []Approval {
	out := []Approval{}
	for _, server := range slices.Sorted(maps.Keys(states)) {
		for _, tool := range slices.Sorted(maps.Keys(states[server])) {
			if ap, ok := states[server][tool].Approval(server, tool); ok {
				out = append(out, ap)
			}
		}
	}
	return out
}

// Approval returns the state as the tool's Approval, ok false when it has none.
func (a ApprovalState) Approval(server, tool string) (ap Approval, ok bool) {
	if a.Approved == "" {
		return Approval{}, false
	}
	return Approval{Server: server, Tool: tool, Digest: a.Approved, By: a.By, At: a.At}, true
}
