package review

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/findings"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Page is everything one rendering shows.
type Page struct {
	// Static is the exported report: no forms, no script, the stylesheet inline.
	Static bool
	// Head is the audit head the page was rendered from.
	Head warrant.AuditHead
	// At is when it was read.
	At time.Time
	// Where says what was read (the catalog file, the approvals API URL).
	Where string
	// Decider says who decides from this page; "" for a read-only page (no forms).
	Decider string
	// CSRF is the token every form carries.
	CSRF string
	// Banner reports the last decision, or why it was refused.
	Banner *Banner
	// Cards are the pending and drifted tools the filter keeps, most dangerous first:
	// by grade (CRITICAL first), suspicious text first within a grade, then by server
	// and tool.
	Cards []Card
	// Left counts every card before the filter, by grade: what is left to review.
	Left Left
	// Filter is what the page was asked to show; FilterServers the servers with cards,
	// for the filter's choices.
	Filter        Filter
	FilterServers []Text
	// Approved are approved tools that can be rolled back.
	Approved []Card
	// Rows are all tools, for the table at the end.
	Rows []RowView
	// Servers counts the cards per server, in order.
	Servers []ServerCount
	// Bulk are the servers' routine first-sight tools, each server's approvable with one
	// signature (a page that can decide, over a source that approves in bulk).
	Bulk []BulkView
}

// Left counts the cards to review, by grade.
type Left struct {
	Total, Critical, Warning, Info, Ungraded int
}

// Filter narrows the cards a page shows: the lowest grade (SeverityNone: every card) and
// one server ("": every server). It comes from the page's query (?grade=&server=).
type Filter struct {
	Grade  warrant.Severity
	Server string
}

// Active reports whether the filter hides anything.
func (f Filter) Active() bool { return f.Grade != warrant.SeverityNone || f.Server != "" }

// GradeArg is the filter's grade as the query writes it ("" for every grade).
func (f Filter) GradeArg() string { return strings.ToLower(f.Grade.String()) }

// ServerArg is the filter's server, base64url-encoded as the form sends it.
func (f Filter) ServerArg() string {
	if f.Server == "" {
		return ""
	}
	return arg(f.Server)
}

// parseFilter reads ?grade=critical|warning|info and ?server=BASE64URL; anything else is
// an error (the page refuses it rather than showing more than was asked).
func parseFilter(grade, server string) (Filter, error) {
	var f Filter
	switch strings.ToLower(grade) {
	case "", "all":
	case "critical":
		f.Grade = warrant.Critical
	case "warning":
		f.Grade = warrant.Warning
	case "info":
		f.Grade = warrant.Info
	default:
		return f, errors.New("grade must be critical, warning, info or all")
	}
	if server != "" {
		name, err := unarg(server)
		if err != nil || name == "" {
			return f, errors.New("server is not a server name as the page's filter sends it")
		}
		f.Server = name
	}
	return f, nil
}

// apply sorts the cards by risk, counts them, and keeps those f selects.
func (p *Page) apply(f Filter) {
	slices.SortStableFunc(p.Cards, func(a, b Card) int {
		switch {
		case a.Risk != b.Risk:
			return int(b.Risk) - int(a.Risk)
		case a.Severity != b.Severity:
			return int(b.Severity) - int(a.Severity)
		case a.Suspicious != b.Suspicious:
			if a.Suspicious {
				return -1
			}
			return 1
		case a.server != b.server:
			return strings.Compare(a.server, b.server)
		}
		return strings.Compare(a.tool, b.tool)
	})
	p.Left, p.Filter, p.FilterServers = Left{Total: len(p.Cards)}, f, nil
	seen := map[string]bool{}
	kept := p.Cards[:0:0]
	for _, c := range p.Cards {
		switch c.Risk {
		case warrant.Critical:
			p.Left.Critical++
		case warrant.Warning:
			p.Left.Warning++
		case warrant.Info:
			p.Left.Info++
		default:
			p.Left.Ungraded++
		}
		if !seen[c.server] {
			seen[c.server] = true
			p.FilterServers = append(p.FilterServers, c.Server)
		}
		if (f.Server == "" || c.server == f.Server) && (f.Grade == warrant.SeverityNone || c.Risk >= f.Grade) {
			kept = append(kept, c)
		}
	}
	slices.SortStableFunc(p.FilterServers, func(a, b Text) int { return strings.Compare(a.String(), b.String()) })
	p.Cards = kept
	// The contents: one entry per server, the server with the most dangerous card first.
	var servers []ServerCount
	at := map[string]int{}
	for _, c := range p.Cards {
		i, ok := at[c.server]
		if !ok {
			i = len(servers)
			at[c.server] = i
			servers = append(servers, ServerCount{Name: c.Server})
		}
		servers[i].Cards = append(servers[i].Cards, CardLink{ID: c.ID, Tool: c.Tool, State: c.State, Grade: c.Risk.String()})
	}
	p.Servers = servers
}

// ServerCount is one server's number of tools to review.
type ServerCount struct {
	Name  Text
	Cards []CardLink
}

// CardLink is an entry of the table of contents.
type CardLink struct {
	ID    string
	Tool  Text
	State string
	Grade string
}

// RowView is one row of the table of every tool.
type RowView struct {
	Server, Tool      Text
	State, Grade      string
	Current, Approved warrant.Digest
	// ByPolicy names the review policy that approved Approved (empty when a person or role
	// did).
	ByPolicy Text
	Flags    []string
	ID       string
}

// Card is one tool to review.
type Card struct {
	ID           string
	Server, Tool Text
	// ServerArg and ToolArg are the names base64url-encoded, for the forms: upstream text
	// never sits raw in an attribute.
	ServerArg, ToolArg string
	State              string
	Grade              string
	// Severity is Grade as a value, for ordering; server and tool the names as read.
	Severity     warrant.Severity
	server, tool string
	Rules        []string
	Flags        []string
	// Current is the digest to decide on, shown in full; Approved and Baseline as known.
	Current, Approved, Baseline warrant.Digest
	// ByPolicy names the review policy that approved Approved (empty when a person or role
	// did).
	ByPolicy Text
	// New is true when the tool is graded as new (no baseline).
	New bool
	// Note explains a card that cannot be decided on here (a digest only the gateway
	// saw, a refused definition).
	Note string
	// Changes are the graded changes, most severe first.
	Changes []ChangeView
	// Flips are the annotation changes toward danger or safety, called out.
	Flips []Flip
	// Trees are the schema diffs as trees (inputSchema, outputSchema).
	Trees []Node
	// Definition is the exact canonical JSON of Current, badges for hidden characters.
	Definition Text
	Bytes      int
	// Suspicious is true when approving needs an explicit acceptance; Summary says why.
	Suspicious bool
	Summary    Text
	Findings   []FindingView
	// FirstSight are the first-sight findings (docs/findings.md) on Current that the
	// baseline did not have: what its text asks of the model (secrets, sending data away,
	// other tools, hiding from the user). Hidden characters stay in Findings above.
	FirstSight []FirstSightView
	// Risk orders the cards: the worse of Severity and the first-sight findings' grade.
	Risk warrant.Severity
	// Hidden are the texts tag characters spell, per run.
	Hidden    []string
	Lookalike *Lookalike
	// Decidable is true when the card has a decision form for Current.
	Decidable bool
	// Rollback are the earlier approved digests the tool may be rolled back to.
	Rollback []warrant.Digest
	// Package is the server's package pin (toolwarrant server pin); nil when none.
	Package *PackageView
}

// PackageView is a server's package pin as the page shows it.
type PackageView struct {
	// Spec is what was pinned (npm:NAME@VERSION, tls, ...); Content what pins it by content
	// (npm's integrity, the image digest, the TLS key's SPKI; "" for PyPI's file list).
	Spec    Text
	Content string
	Seq     int64
	By      Text
	At      string
}

func packageView(p *warrant.PackagePin) *PackageView {
	if p == nil {
		return nil
	}
	v := &PackageView{Spec: textOf(p.Spec), Seq: p.Seq, By: textOf(p.PinnedBy), At: p.PinnedAt.UTC().Format("2006-01-02 15:04 UTC")}
	var pkg lockfile.Package
	if json.Unmarshal(p.Identity, &pkg) == nil {
		v.Content = cmp.Or(pkg.Integrity, pkg.Digest, pkg.SPKI)
		if v.Content == "" && len(pkg.Files) > 0 {
			v.Content = fmt.Sprintf("%d files by sha256", len(pkg.Files))
		}
	}
	return v
}

// FirstSightView is one first-sight finding.
type FirstSightView struct {
	Severity, Rule string
	Pointer        Text
	Excerpt        Text
	Reason         Text
}

// firstSight returns the findings of dv's new version that its baseline did not have.
func firstSight(dv warrant.DiffView, siblings []string) ([]FirstSightView, warrant.Severity) {
	var before []byte
	if dv.From != "" {
		before = dv.FromVersion.Canonical
	}
	fs, err := findings.Introduced(warrant.KindTool, before, dv.ToVersion.Canonical, siblings)
	if err != nil {
		return nil, warrant.SeverityNone
	}
	var out []FirstSightView
	for _, f := range fs {
		out = append(out, FirstSightView{Severity: f.Severity.String(), Rule: string(f.Rule), Pointer: textOf(f.Pointer), Excerpt: textOf(f.Excerpt), Reason: textOf(f.Reason)})
	}
	return out, findings.Grade(fs)
}

// ChangeView is one graded change.
type ChangeView struct {
	Severity, Rule, Kind string
	Pointer              Text
	Reason               Text
	Old, New             Text
	HasOld, HasNew       bool
}

// Flip is an annotation hint that changed meaning.
type Flip struct {
	Hint     string
	Old, New string
	Danger   bool
	Reason   Text
}

// FindingView is a run of suspicious characters of one class in one string of the
// definition (a tag smuggle is one run of many characters).
type FindingView struct {
	Pointer Text
	InName  bool
	// First and Last are the byte offsets of the run's first and last character in the
	// string; Count is how many characters it has.
	First, Last, Count int
	Class              string
	// FirstVisible and LastVisible render the first and last character (`<U+E0041>`).
	FirstVisible, LastVisible string
}

// Banner is shown at the top of a page.
type Banner struct {
	// Kind is ok, error or stale.
	Kind    string
	Title   string
	Message Text
	// Detail lines (a decision's statement, the command that verifies it).
	Detail []string
	// Moved lists the audit entries recorded since the page the decision came from.
	Moved []MovedEntry
	// MovedMore is the number of entries not listed.
	MovedMore int
	// Changed says what changed on the tools the decision was about.
	Changed []Text
	// CardID links to the tool concerned.
	CardID string
}

// MovedEntry is one audit entry recorded since a page was rendered.
type MovedEntry struct {
	Seq   int64
	Type  string
	Actor Text
	At    string
	What  Text
}

// cardID is a stable anchor for a tool that carries none of its (upstream) name.
func cardID(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return "t-" + hex.EncodeToString(sum[:8])
}

func arg(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func unarg(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return string(b), err
}

// snapshot is what one rendering read: the head, the rows, and the diff and rollback
// targets of every tool shown.
type snapshot struct {
	head     warrant.AuditHead
	rows     []warrant.ToolRow
	diffs    map[string]warrant.DiffView
	rollback map[string][]warrant.Digest
}

// errMoving is a catalog that changed under every attempt to read it consistently.
var errMoving = fmt.Errorf("%w: the catalog kept changing while the page was read; reload the page", warrant.ErrUnavailable)

// readAttempts bounds how often a rendering re-reads a catalog that moved under it.
const readAttempts = 4

// read reads a consistent snapshot: every read answered the same audit head, so the page
// shows the catalog as of exactly that head.
func read(ctx context.Context, src Source) (snapshot, error) {
	for range readAttempts {
		s, ok, err := readOnce(ctx, src)
		if err != nil || ok {
			return s, err
		}
		if err := ctx.Err(); err != nil {
			return s, err
		}
	}
	return snapshot{}, errMoving
}

func readOnce(ctx context.Context, src Source) (snapshot, bool, error) {
	head, rows, err := src.Tools(ctx)
	if err != nil {
		return snapshot{}, false, err
	}
	s := snapshot{head: head, rows: rows, diffs: map[string]warrant.DiffView{}, rollback: map[string][]warrant.Digest{}}
	for _, r := range rows {
		key := cardID(r.Server, r.Tool)
		if reviewable(r) {
			h, dv, err := src.Diff(ctx, r.Server, r.Tool)
			if err != nil {
				return s, false, err
			}
			if h != head || dv.To != r.Current {
				return s, false, nil
			}
			s.diffs[key] = dv
		}
		if r.Approved != "" {
			ds, err := src.RollbackTargets(ctx, r.Server, r.Tool, r.Approved)
			if err != nil {
				return s, false, err
			}
			s.rollback[key] = ds
		}
	}
	return s, true, nil
}

// shown reports whether a row gets a card: its current digest is undecided, or it
// drifted from its approval.
func shown(r warrant.ToolRow) bool {
	return r.Pending || r.State == warrant.StateDrift
}

// reviewable reports whether a shown row's current digest has a recorded definition to
// show and decide on (a digest only the gateway saw has none; neither has a refused
// definition).
func reviewable(r warrant.ToolRow) bool {
	if !shown(r) || r.Current == "" || r.Versions == 0 {
		return false
	}
	return !(r.Source == warrant.SourceGateway && r.Grade == warrant.SeverityNone)
}

// build turns a snapshot into the page.
func build(s snapshot) *Page {
	p := &Page{Head: s.head}
	siblings := map[string][]string{}
	for _, r := range s.rows {
		siblings[r.Server] = append(siblings[r.Server], r.Tool)
	}
	for _, r := range s.rows {
		id := cardID(r.Server, r.Tool)
		look := slices.Contains(r.Flags, "confusable") || slices.Contains(r.Flags, "mixed-script")
		p.Rows = append(p.Rows, RowView{Server: textOf(r.Server), Tool: nameText(r.Tool, look), State: string(r.State), Grade: r.Grade.String(),
			Current: r.Current, Approved: r.Approved, ByPolicy: policyText(r), Flags: r.Flags, ID: id})
		switch {
		case shown(r):
			c := card(r, s.diffs[id], s.rollback[id])
			if c.Decidable {
				c.FirstSight, c.Risk = firstSight(s.diffs[id], siblings[r.Server])
				c.Risk = max(c.Risk, c.Severity)
			}
			p.Cards = append(p.Cards, c)
		case len(s.rollback[id]) > 0:
			p.Approved = append(p.Approved, card(r, warrant.DiffView{}, s.rollback[id]))
		}
	}
	p.apply(Filter{})
	return p
}

func card(r warrant.ToolRow, dv warrant.DiffView, rollback []warrant.Digest) Card {
	look := slices.Contains(r.Flags, "confusable") || slices.Contains(r.Flags, "mixed-script")
	c := Card{ID: cardID(r.Server, r.Tool), Server: textOf(r.Server), Tool: nameText(r.Tool, look), ServerArg: arg(r.Server), ToolArg: arg(r.Tool),
		State: string(r.State), Grade: r.Grade.String(), Severity: r.Grade, Risk: r.Grade, server: r.Server, tool: r.Tool, Flags: r.Flags, Current: r.Current, Approved: r.Approved, Rollback: rollback,
		Package: packageView(r.Package), ByPolicy: policyText(r)}
	for _, ru := range r.Rules {
		c.Rules = append(c.Rules, string(ru))
	}
	switch {
	case !shown(r):
		return c
	case r.Current == "" && r.Refused != "":
		c.Note = "The last observation refused the definition: " + textguardVisible(r.Refused) + ". Nothing to decide on until a crawl records one."
		return c
	case r.Current == "":
		c.Note = "The tool is not listed by its server's last crawl."
		return c
	case !reviewable(r):
		c.Note = "Only the gateway has seen this digest; no crawl has recorded its definition, so there is nothing to read or approve yet. Run 'toolwarrant crawl' for this server."
		return c
	}
	c.Decidable = true
	c.Baseline, c.New = dv.From, dv.From == ""
	in := dv.ToInspection
	c.Suspicious = in.Suspicious()
	c.Summary = textOf(in.Summary())
	c.Findings = charFindings(in.Findings)
	c.Hidden = in.Hidden
	if look {
		l := &Lookalike{Letters: letters(r.Tool), MixedScript: in.MixedScript, Scripts: in.Scripts}
		for _, o := range in.ConfusableWith {
			l.Like = append(l.Like, nameText(o, true))
		}
		c.Lookalike = l
	}
	for _, ch := range dv.Drift.Changes {
		cv := ChangeView{Severity: ch.Severity.String(), Rule: string(ch.Rule), Kind: string(ch.Kind), Pointer: textOf(ch.Pointer), Reason: textOf(ch.Reason),
			Old: textOf(string(ch.Old)), New: textOf(string(ch.New)), HasOld: ch.Old != nil, HasNew: ch.New != nil}
		if cv.Pointer == nil {
			cv.Pointer = Text{{Text: "(whole tool)"}}
		}
		c.Changes = append(c.Changes, cv)
		if ch.Rule == warrant.RuleAnnotationTowardDanger || ch.Rule == warrant.RuleAnnotationTowardSafety {
			c.Flips = append(c.Flips, Flip{Hint: lastToken(ch.Pointer), Old: valueOrAbsent(ch.Old), New: valueOrAbsent(ch.New),
				Danger: ch.Rule == warrant.RuleAnnotationTowardDanger, Reason: textOf(ch.Reason)})
		}
	}
	c.Trees = schemaTrees(dv.FromVersion.Canonical, dv.ToVersion.Canonical, dv.Drift.Changes)
	c.Definition = textOf(string(dv.ToVersion.Canonical))
	c.Bytes = len(dv.ToVersion.Canonical)
	return c
}

// charFindings groups consecutive findings of one class in one string.
func charFindings(fs []warrant.TextFinding) []FindingView {
	var out []FindingView
	var last warrant.TextFinding
	for i, f := range fs {
		if n := len(out); i > 0 && n > 0 && f.Pointer == last.Pointer && f.InName == last.InName && f.Class == last.Class {
			out[n-1].Last, out[n-1].LastVisible = f.Offset, f.Visible
			out[n-1].Count++
		} else {
			out = append(out, FindingView{Pointer: textOf(f.Pointer), InName: f.InName, First: f.Offset, Last: f.Offset, Count: 1, Class: f.Class,
				FirstVisible: f.Visible, LastVisible: f.Visible})
		}
		last = f
	}
	return out
}

// nameOf renders a tool name inside a message: its non-ASCII letters marked, since that
// is where a look-alike hides.
func nameOf(name string) Text {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return nameText(name, true)
		}
	}
	return textOf(name)
}

// join concatenates texts.
func join(ts ...Text) Text {
	var out Text
	for _, t := range ts {
		out = append(out, t...)
	}
	return out
}

func textguardVisible(s string) string { return textOf(s).String() }

func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	return strings.ReplaceAll(strings.ReplaceAll(ptr[i+1:], "~1", "/"), "~0", "~")
}

func valueOrAbsent(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	return string(v)
}

// movedSince describes the audit entries recorded after the page's head.
func movedSince(recs []warrant.AuditRecord) []MovedEntry {
	var out []MovedEntry
	for _, r := range recs {
		var body struct {
			Event struct {
				Server string          `json:"server"`
				Tool   string          `json:"tool"`
				Digest warrant.Digest  `json:"digest"`
				Crawl  int64           `json:"crawl"`
				Source string          `json:"source"`
				Action string          `json:"action"`
				Drift  json.RawMessage `json:"drift"`
			} `json:"event"`
		}
		_ = json.Unmarshal(r.Body, &body)
		e := body.Event
		var what []Text
		if e.Server != "" {
			what = append(what, textOf("server "+e.Server))
		}
		if e.Tool != "" {
			what = append(what, join(textOf("tool "), nameOf(e.Tool)))
		}
		if e.Digest != "" {
			what = append(what, textOf(string(e.Digest)))
		}
		if e.Crawl != 0 {
			src := e.Source
			if src == "" {
				src = "crawl"
			}
			what = append(what, textOf(fmt.Sprintf("%s record %d", src, e.Crawl)))
		}
		if e.Action != "" {
			what = append(what, textOf("trust list: "+e.Action))
		}
		var about Text
		for i, w := range what {
			if i > 0 {
				about = append(about, Seg{Text: ", "})
			}
			about = append(about, w...)
		}
		out = append(out, MovedEntry{Seq: r.Seq, Type: r.Type, Actor: textOf(r.Actor), At: r.At.UTC().Format(time.RFC3339), What: about})
	}
	return out
}

// changedFor says what changed on the tool of shown (the current and approved digests a
// page showed) in rows (read now).
func changedFor(shown warrant.ToolRow, rows []warrant.ToolRow) []Text {
	name := join(textOf(shown.Server+" "), nameOf(shown.Tool))
	say := func(format string, args ...any) Text { return join(name, textOf(fmt.Sprintf(format, args...))) }
	i := slices.IndexFunc(rows, func(r warrant.ToolRow) bool { return r.Server == shown.Server && r.Tool == shown.Tool })
	if i < 0 {
		return []Text{say(": no longer in the catalog")}
	}
	now := rows[i]
	var out []Text
	if now.Current != shown.Current {
		out = append(out, say(": the current version is now %s (the page showed %s)", orNone(now.Current), orNone(shown.Current)))
	}
	if now.Approved != shown.Approved {
		out = append(out, say(": the approved digest is now %s (the page showed %s)", orNone(now.Approved), orNone(shown.Approved)))
	}
	if len(out) == 0 {
		out = append(out, say(": still %s, approved %s; other entries moved the log", orNone(now.Current), orNone(now.Approved)))
	}
	return out
}

func orNone(d warrant.Digest) string {
	if d == "" {
		return "none"
	}
	return string(d)
}

// errorText is what the page says about a refused decision: the sentinel's meaning and
// the service's message (which names server, tool and digest; never a secret).
func errorKind(err error) (status int, title string) {
	switch {
	case errors.Is(err, warrant.ErrStale), errors.Is(err, warrant.ErrConflict):
		return 409, "Refused: the catalog moved on"
	case errors.Is(err, warrant.ErrSuspicious):
		return 422, "Refused: suspicious text was not accepted"
	case errors.Is(err, warrant.ErrSeparation):
		return 403, "Refused: separation of duties"
	case errors.Is(err, warrant.ErrForbidden):
		return 403, "Refused: you may not decide"
	case errors.Is(err, warrant.ErrNotFound):
		return 404, "Refused: not found"
	case errors.Is(err, warrant.ErrInvalid):
		return 400, "Refused: invalid decision"
	case errors.Is(err, warrant.ErrUnavailable):
		return 503, "Not recorded: the catalog is unavailable"
	}
	return 500, "Not recorded: internal error"
}

// policyText is the name of the review policy that approved the row's approved digest,
// as page text (empty when a person or role approved it).
func policyText(r warrant.ToolRow) Text {
	if p := r.ByPolicy(); p != "" {
		return textOf(p)
	}
	return nil
}
