package warrant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Config configures New.
type Config struct {
	// Catalog is the store. Required.
	Catalog Catalog
	// Auditor turns each write's events into audit records. Nil writes none (tests of the catalog alone).
	Auditor Auditor
	// Sequencer, when set, appends the events that accompany no other write (decision
	// records) in place of chaining them from the head here (a store with a sequencer:
	// dynamostore.Catalog with CatalogConfig.Sequencer). Nil: they are chained and
	// appended like every other write.
	Sequencer EventSequencer
	// Identity is who acts: recorded as a server's AddedBy and a crawl's By. Default
	// "unknown".
	Identity string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MaxAttempts bounds how often a write that lost a race (ErrConflict on the server's
	// last crawl or the audit head) is re-read and retried. Default 5.
	MaxAttempts int
	// FirstSight screens a first-sight tool definition (canonical JSON) with the
	// first-sight findings rules, given the names of its server's tools, and returns the
	// names of the rules that found something (findings.FirstSight). A bulk approval
	// names only tools it finds nothing in; nil: no tool is approved in bulk.
	FirstSight func(canonical []byte, siblings []string) ([]string, error)
	// ApplyPolicies makes Ingest approve the new versions the active review policies
	// accept (docs/toolwarrant.md, "Review policies"). Off where the crawl may not write
	// approvals (the AWS crawl role).
	ApplyPolicies bool
}

// Service is toolwarrant's use cases: adding servers, a crawl run (Crawl, Ingest), the one
// decision flow (DecideAs), and the views behind list, show and diff. It is safe for
// concurrent use.
type Service struct {
	cat      Catalog
	auditor  Auditor
	seq      EventSequencer
	identity string
	now      func() time.Time
	attempts int
	screen   func(canonical []byte, siblings []string) ([]string, error)
	policies bool

	// tools and names cache the catalog's tool records and names (for the look-alike
	// check) as of the audit head namesAt (catalogTools). Only with an Auditor, whose
	// every write moves the head. Read-only to callers.
	namesMu sync.Mutex
	namesAt AuditHead
	tools   []ToolRecord
	names   *Names

	// crawlKept is every tool name of the catalog as of the audit head crawlAt, kept
	// between crawl runs (crawlNames); read-only once stored.
	crawlMu      sync.Mutex
	crawlAt      AuditHead
	crawlKept    *Names
	crawlServers map[string]bool // the servers crawlKept holds tools of
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("warrant: Config.Catalog is required")
	}
	s := &Service{cat: cfg.Catalog, auditor: cfg.Auditor, seq: cfg.Sequencer, identity: cfg.Identity, now: cfg.Now, attempts: cfg.MaxAttempts, screen: cfg.FirstSight, policies: cfg.ApplyPolicies}
	if s.identity == "" {
		s.identity = "unknown"
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.attempts <= 0 {
		s.attempts = 5
	}
	return s, nil
}

// Catalog returns the store the service uses.
func (s *Service) Catalog() Catalog { return s.cat }

func (s *Service) clock() time.Time { return s.now().UTC() }

// audited runs write with the audit records for events chained from the current head,
// retrying (re-reading everything through prepare) when the write loses a race.
func (s *Service) audited(ctx context.Context, op string, prepare func() ([]Event, error), write func(AuditAppend) error) error {
	return s.auditedN(ctx, op, s.attempts, prepare, write)
}

func (s *Service) auditedN(ctx context.Context, op string, attempts int, prepare func() ([]Event, error), write func(AuditAppend) error) error {
	return s.auditedFrom(ctx, op, attempts, nil, prepare, write)
}

// auditedFrom is audited with the records chained from head when it is set (no retry:
// a moved head is the caller's ErrConflict).
func (s *Service) auditedFrom(ctx context.Context, op string, attempts int, from *AuditHead, prepare func() ([]Event, error), write func(AuditAppend) error) error {
	var err error
	for range attempts {
		var events []Event
		if events, err = prepare(); err != nil {
			return err
		}
		var a AuditAppend
		if s.auditor != nil && len(events) > 0 {
			head, err := s.cat.AuditHead(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			if from != nil {
				if head != *from {
					return fmt.Errorf("%s: %w: the audit log moved on since it was read (it was at %d, it is now at %d); read again and decide again",
						op, ErrConflict, from.Seq, head.Seq)
				}
				head = *from
			}
			recs, err := s.auditor.Chain(ctx, head, events)
			if err != nil {
				return fmt.Errorf("%s: audit: %w", op, err)
			}
			a = AuditAppend{Prev: head, Records: recs}
		}
		if err = write(a); !errors.Is(err, ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if attempts == 1 {
		return err
	}
	return fmt.Errorf("%s: gave up after %d attempts: %w", op, attempts, err)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and numbers are marshalled here
	}
	return b
}

// AddServer adds srv (AddedAt and AddedBy are set here). It reports false, and changes
// nothing, when an identical server is already there; ErrConflict when a different one
// has the name.
func (s *Service) AddServer(ctx context.Context, srv Server) (bool, error) {
	return s.addServer(ctx, srv, s.identity)
}

// AddServerAs is AddServer recording by (a caller the transport authenticated, such as
// the approvals API's IAM principal) as the server's AddedBy and its audit entry's actor.
func (s *Service) AddServerAs(ctx context.Context, srv Server, by string) (bool, error) {
	if by == "" {
		return false, fmt.Errorf("%w: adding a server needs the identity adding it", ErrInvalid)
	}
	return s.addServer(ctx, srv, by)
}

func (s *Service) addServer(ctx context.Context, srv Server, by string) (bool, error) {
	srv.Headers = slices.Clone(srv.Headers)
	SortHeaders(srv.Headers)
	if err := srv.Validate(); err != nil {
		return false, err
	}
	srv.AddedAt, srv.AddedBy, srv.LastCrawl = s.clock(), by, 0
	if old, err := s.cat.Server(ctx, srv.Name); err == nil {
		if sameServer(old, srv) {
			return false, nil
		}
		return false, fmt.Errorf("server %q: %w: it is already in the catalog with a different URL or settings (%s)", srv.Name, ErrConflict, old.URL)
	} else if !errors.Is(err, ErrNotFound) {
		return false, err
	}
	err := s.audited(ctx, "add server", func() ([]Event, error) {
		return []Event{{Type: EventServerAdded, Actor: srv.AddedBy, At: srv.AddedAt, Body: mustJSON(map[string]any{
			"server": srv.Name, "url": srv.URL, "allowPrivate": srv.AllowPrivate, "headers": headersOrEmpty(srv.Headers)})}}, nil
	}, func(a AuditAppend) error { return s.cat.AddServer(ctx, srv, a) })
	return err == nil, err
}

func headersOrEmpty(h []HeaderRef) []HeaderRef {
	if h == nil {
		return []HeaderRef{}
	}
	return h
}

func sameServer(a, b Server) bool {
	return a.Name == b.Name && a.URL == b.URL && a.AllowPrivate == b.AllowPrivate && slices.Equal(a.Headers, b.Headers)
}

// RawTool is one tool object of a listing, exactly as served.
type RawTool struct {
	// Name is the tool's name as decoded by the client ("" if none).
	Name string
	// Raw is the tool object's bytes as served.
	Raw []byte
}

// Listing is one complete listing of one server, the input of Ingest.
type Listing struct {
	Server                string
	StartedAt, FinishedAt time.Time
	Tools                 []RawTool
}

// NewVersion is a version a crawl saw first, graded against its baseline.
type NewVersion struct {
	Tool   string `json:"tool"`
	Digest Digest `json:"digest"`
	// Baseline is what it was graded against: the approved digest, else the previous one
	// seen; empty for a new tool.
	Baseline   Digest     `json:"baseline,omitempty"`
	Drift      Drift      `json:"drift"`
	Inspection Inspection `json:"inspection"`
}

// IngestResult is what Ingest recorded.
type IngestResult struct {
	Server string `json:"server"`
	// Crawl is the number of the crawl recorded.
	Crawl int64 `json:"crawl"`
	// Tools is the number of tools listed; Accepted of them got a digest.
	Tools    int `json:"tools"`
	Accepted int `json:"accepted"`
	// New are the versions seen for the first time, sorted by tool.
	New []NewVersion `json:"newVersions"`
	// Refused are the tools whose ingestion was refused, in listing order.
	Refused []*IngestError `json:"-"`
	// Removed are tools the previous crawl (the server's last SourceCrawl record; gateway
	// records are partial and never count) listed and this one did not, sorted.
	Removed []string `json:"removed"`
	// ByPolicy are the new versions an active review policy approved (Config.ApplyPolicies),
	// sorted by tool; PolicyError says why policies could not be applied (the versions
	// stay pending), "" when they were.
	ByPolicy    []PolicyDecision `json:"byPolicy"`
	PolicyError string           `json:"policyError,omitempty"`
}

// Ingest digests every tool of a listing and records the crawl: one observation per tool
// name, a version and a proposal for every digest not seen before. A tool whose definition
// cannot be digested, that has no name, or whose name is served more than once is refused
// (IngestResult.Refused, and an observation saying why) while the rest is recorded.
// ErrNotFound for an unknown server.
func (s *Service) Ingest(ctx context.Context, l Listing) (IngestResult, error) {
	return s.ingest(ctx, l, nil)
}

// crawlRun is what one crawl run (Service.Crawl) reads once for all its servers: the
// names of the catalog's tools, for the look-alike rule, read at the first server with a
// new version and extended with the names each server of the run recorded. Without it,
// every server with a new version read every server's state (Catalog.Tools), so a first
// crawl of N servers read N·(N+8) items; with it, N·8 + N + 2 (docs/aws.md, "Scale").
// A tool another writer adds while the run goes on is not among the names: the crawl's
// grades may then miss a look-alike the next read shows (list, diff, the review page
// and bulk approval grade against the catalog as it is).
type crawlRun struct {
	names *Names
}

// namesFor returns the run's names: a layer of its own over the service's (crawlNames).
func (r *crawlRun) namesFor(ctx context.Context, s *Service) (*Names, error) {
	if r.names == nil {
		base, err := s.crawlNames(ctx)
		if err != nil {
			return nil, err
		}
		r.names = base.Over()
	}
	return r.names, nil
}

// crawlNamesEntries and crawlNamesPerServer bound the audit entries crawlNames follows
// before it reads every server again instead: 1,024, or 16 per server of the catalog when
// that is more. Reading 128 entries is one Query of a few REC# items; reading every server
// is a read per server, so following up to 16 entries per server costs no more than
// reading them all — and a first crawl through many workers, whose invocations each find
// the others' entries (41 per server of 40 new tools), keeps following the log.
const (
	crawlNamesEntries   = 1024
	crawlNamesPerServer = 16
)

// crawlNames returns the names of every tool of the catalog for a crawl run. With an
// Auditor (every write moves the head), they are kept between runs as of an audit head
// and brought up to date from the change feed (ChangedServers): one read of the head when
// nothing changed, else the entries since and the tools of the servers they name, not
// every server's; so a crawl worker that records a few servers an invocation (the AWS
// fan-out) reads a few servers' state per invocation, not the catalog's. The head is read
// before the tools, so the names are never older than the head they are kept under.
// Tools are never taken out of the catalog (a removed tool keeps its record), so names
// only grow.
func (s *Service) crawlNames(ctx context.Context) (*Names, error) {
	if s.auditor == nil {
		tools, err := s.cat.Tools(ctx)
		if err != nil {
			return nil, err
		}
		return namesOf(tools), nil
	}
	s.crawlMu.Lock()
	defer s.crawlMu.Unlock()
	since := AuditHead{Seq: -1} // nothing kept: read every server
	if s.crawlKept != nil {
		since = s.crawlAt
	}
	ch, err := ChangedServers(ctx, s.cat, since, max(crawlNamesEntries, crawlNamesPerServer*len(s.crawlServers)))
	if err != nil {
		return nil, err
	}
	if ch.All {
		tools, err := s.cat.Tools(ctx)
		if err != nil {
			return nil, err
		}
		s.crawlKept, s.crawlAt, s.crawlServers = namesOf(tools), ch.Head, map[string]bool{}
		for _, t := range tools {
			s.crawlServers[t.Server] = true
		}
		return s.crawlKept, nil
	}
	var added []string
	for _, server := range slices.Sorted(maps.Keys(ch.Servers)) {
		tools, err := s.cat.ServerTools(ctx, server)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			added = append(added, t.Tool)
		}
		s.crawlServers[server] = true
	}
	if len(added) > 0 {
		s.crawlKept = s.crawlKept.grow(added)
	}
	s.crawlAt = ch.Head
	return s.crawlKept, nil
}

// ingest is Ingest, within a crawl run when run is not nil.
func (s *Service) ingest(ctx context.Context, l Listing, run *crawlRun) (IngestResult, error) {
	res := IngestResult{Server: l.Server, Tools: len(l.Tools), New: []NewVersion{}, Removed: []string{}, ByPolicy: []PolicyDecision{}}
	if _, err := s.cat.Server(ctx, l.Server); err != nil {
		return res, err
	}
	by := s.identity
	counts := map[string]int{}
	for _, t := range l.Tools {
		counts[t.Name]++
	}
	type accepted struct {
		digest    Digest
		canonical []byte
	}
	good := map[string]accepted{}
	obs := map[string]Observation{}
	for i, t := range l.Tools {
		refuse := func(offset int64, reason string) {
			res.Refused = append(res.Refused, &IngestError{Server: l.Server, Tool: t.Name, Index: i, Offset: offset, Reason: reason})
			if t.Name != "" {
				obs[t.Name] = Observation{Tool: t.Name, Refused: reason}
			}
		}
		switch {
		case t.Name == "":
			refuse(-1, "the tool has no name (or it is not a string)")
			continue
		case counts[t.Name] > 1:
			refuse(-1, fmt.Sprintf("the name is served %d times in one listing, so a client cannot tell which definition it gets", counts[t.Name]))
			continue
		case !ValidToolName(t.Name):
			res.Refused = append(res.Refused, &IngestError{Server: l.Server, Tool: t.Name, Index: i, Offset: -1,
				Reason: fmt.Sprintf("the name is %d bytes long, more than the %d the catalog accepts", len(t.Name), MaxToolNameBytes)})
			continue
		}
		d, c, err := DigestTool(t.Raw)
		if err != nil {
			var ce *canon.Error
			if errors.As(err, &ce) {
				refuse(ce.Offset, ce.Reason)
			} else {
				refuse(-1, err.Error())
			}
			continue
		}
		good[t.Name] = accepted{d, c}
		obs[t.Name] = Observation{Tool: t.Name, Digest: d}
	}
	res.Accepted = len(good)
	observations := make([]Observation, 0, len(obs))
	for _, o := range obs {
		observations = append(observations, o)
	}
	slices.SortFunc(observations, func(a, b Observation) int { return strings.Compare(a.Tool, b.Tool) })

	started, finished := l.StartedAt.UTC(), l.FinishedAt.UTC()
	if started.IsZero() {
		started = s.clock()
	}
	if finished.IsZero() {
		finished = s.clock()
	}
	var rec CrawlRecord
	var prevCrawl int64 // the previous SourceCrawl record, read with the seq the write checks
	err := s.audited(ctx, "record crawl of "+l.Server, func() ([]Event, error) {
		srv, err := s.cat.Server(ctx, l.Server)
		if err != nil {
			return nil, err
		}
		prevCrawl = srv.LastSourceCrawl
		keys, err := s.cat.VersionKeys(ctx, l.Server)
		if err != nil {
			return nil, err
		}
		known := map[VersionKey]bool{}
		for _, k := range keys {
			known[k] = true
		}
		seq := srv.LastCrawl + 1
		rec = CrawlRecord{Crawl: Crawl{Server: l.Server, Seq: seq, Source: SourceCrawl, StartedAt: started, FinishedAt: finished, By: by, Observations: observations}}
		for _, o := range observations {
			if o.Digest == "" || known[VersionKey{l.Server, o.Tool, o.Digest}] {
				continue
			}
			rec.Versions = append(rec.Versions, Version{Server: l.Server, Tool: o.Tool, Digest: o.Digest, Canonical: good[o.Tool].canonical,
				FirstSeenAt: finished, FirstSeenBy: by, FirstCrawl: seq})
			rec.Proposals = append(rec.Proposals, Proposal{Server: l.Server, Tool: o.Tool, Digest: o.Digest, OpenedAt: finished, Crawl: seq})
		}
		events := observedEvents(by, finished, map[string]any{
			"server": l.Server, "crawl": seq, "source": SourceCrawl, "startedAt": started.Format(time.RFC3339Nano),
			"finishedAt": finished.Format(time.RFC3339Nano)}, observations, nil)
		for _, v := range rec.Versions {
			events = append(events, Event{Type: EventVersionRecorded, Actor: by, At: finished, Body: mustJSON(map[string]any{
				"server": v.Server, "tool": v.Tool, "digest": v.Digest, "crawl": seq})})
		}
		return events, nil
	}, func(a AuditAppend) error { return s.cat.RecordCrawl(ctx, rec, a) })
	if err != nil {
		return res, err
	}
	res.Crawl = rec.Crawl.Seq

	// Compared with the previous crawl, not the previous record: a gateway record in
	// between lists only what the gateway did not serve, so a tool missing from it is not
	// gone.
	if prevCrawl > 0 {
		prev, err := s.cat.Crawl(ctx, l.Server, prevCrawl)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return res, err
		}
		for _, o := range prev.Observations {
			if _, ok := obs[o.Tool]; !ok {
				res.Removed = append(res.Removed, o.Tool)
			}
		}
	}
	if len(rec.Versions) == 0 {
		return res, nil
	}
	var tools []ToolRecord
	var names *Names
	if run != nil {
		// This server's records only, and the run's names with this server's added.
		if tools, err = s.cat.ServerTools(ctx, l.Server); err != nil {
			return res, err
		}
		if names, err = run.namesFor(ctx, s); err != nil {
			return res, err
		}
		for _, t := range tools {
			names.Add(t.Tool)
		}
	} else {
		if tools, err = s.cat.Tools(ctx); err != nil {
			return res, err
		}
		names = namesOf(tools)
	}
	byTool := map[string]ToolRecord{}
	for _, t := range tools {
		if t.Server == l.Server {
			byTool[t.Tool] = t
		}
	}
	for _, v := range rec.Versions {
		nv := NewVersion{Tool: v.Tool, Digest: v.Digest}
		tr := byTool[v.Tool]
		base := tr.Approved
		if base == "" || base == v.Digest {
			base = tr.Previous
		}
		nv.Baseline = base
		if nv.Drift, nv.Inspection, err = s.grade(ctx, l.Server, v.Tool, base, v.Canonical, names); err != nil {
			return res, err
		}
		res.New = append(res.New, nv)
	}
	if s.policies {
		approved := make(map[string]Digest, len(byTool))
		for t, tr := range byTool {
			approved[t] = tr.Approved
		}
		done, err := s.applyPolicies(ctx, l.Server, res.New, approved)
		res.ByPolicy = append(res.ByPolicy, done...)
		if err != nil {
			// The crawl is recorded; the versions stay pending for a person, which is safe.
			res.PolicyError = err.Error()
		}
	}
	return res, nil
}

func namesOf(tools []ToolRecord) *Names {
	all := make([]string, 0, len(tools))
	for _, t := range tools {
		all = append(all, t.Tool)
	}
	return NewNames(all)
}

// catalogNames returns the names of every tool of the catalog (catalogTools).
func (s *Service) catalogNames(ctx context.Context) (*Names, error) {
	_, n, err := s.catalogTools(ctx)
	return n, err
}

// catalogTools returns every tool record of the catalog (Catalog.Tools) and their names:
// read once per audit head when the service has an Auditor, else on every call. Every
// write that changes a tool record moves the head, and the head is read before the
// records, so a cached set is never older than the head it is kept under. A page that
// diffs every pending tool so reads the catalog once, not once per tool.
func (s *Service) catalogTools(ctx context.Context) ([]ToolRecord, *Names, error) {
	var head AuditHead
	if s.auditor != nil {
		var err error
		if head, err = s.cat.AuditHead(ctx); err != nil {
			return nil, nil, err
		}
		s.namesMu.Lock()
		tools, n, at := s.tools, s.names, s.namesAt
		s.namesMu.Unlock()
		if n != nil && at == head {
			return tools, n, nil
		}
	}
	tools, err := s.cat.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	n := namesOf(tools)
	if s.auditor != nil {
		s.namesMu.Lock()
		s.tools, s.names, s.namesAt = tools, n, head
		s.namesMu.Unlock()
	}
	return tools, n, nil
}

// grade grades canonical against the version base of the tool ("" for a new tool) and
// inspects it.
func (s *Service) grade(ctx context.Context, server, tool string, base Digest, canonical []byte, names *Names) (Drift, Inspection, error) {
	var old []byte
	if base != "" {
		bv, err := s.cat.Version(ctx, server, tool, base)
		if err != nil {
			return Drift{}, Inspection{}, err
		}
		old = bv.Canonical
	}
	d, err := Grade(old, canonical, GradeOptions{Names: names})
	if err != nil {
		return Drift{}, Inspection{}, fmt.Errorf("grade %s/%s: %w", server, tool, err)
	}
	in, err := Inspect(canonical, tool, names)
	return d, in, err
}

// ToolRow is one row of `toolwarrant list`.
type ToolRow struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	State  State  `json:"state"`
	// Current is the digest last observed ("" if that observation refused the definition
	// or the tool was not listed); Approved is the approved digest ("" if none).
	Current  Digest `json:"current"`
	Approved Digest `json:"approved"`
	// Source says which listing observed Current: "crawl", or "gateway" (the gateway
	// processor saw it served; when no crawl has recorded that definition yet there is no
	// version to grade or inspect, and Grade is empty). "" when the tool is not listed.
	Source Source `json:"source"`
	// Pending is true when Current is undecided.
	Pending bool `json:"pending"`
	// Grade and Rules grade Current against Baseline (the approved digest, else the
	// previous one seen); a tool with one version and no approval is graded as new. Both
	// are empty when Current has no version (observed only by the gateway).
	Grade    Severity `json:"grade"`
	Rules    []Rule   `json:"rules"`
	Baseline Digest   `json:"baseline"`
	// Flags are Inspection.Flags() of the version shown (Current, else the latest).
	Flags   []string `json:"flags"`
	Refused string   `json:"refused,omitempty"`
	// Versions is the number of versions recorded.
	Versions int `json:"versions"`
	// Inspection details Flags.
	Inspection Inspection `json:"inspection"`
	// Package is the server's newest package pin (PinPackage); absent when it has none.
	Package *PackagePin `json:"package,omitempty"`
	// ApprovedBy is who approved Approved: a person, a role, or "policy:NAME" for a review
	// policy ("" when nothing is approved).
	ApprovedBy string `json:"approvedBy,omitempty"`
}

// ByPolicy returns the name of the review policy that approved the row's approved digest
// ("" when a person or role did).
func (r ToolRow) ByPolicy() string {
	name, _ := strings.CutPrefix(r.ApprovedBy, PolicyActorPrefix)
	if name == r.ApprovedBy {
		return ""
	}
	return name
}

// List returns one row per tool, sorted by server then tool; pendingOnly keeps the rows
// whose current digest is undecided.
func (s *Service) List(ctx context.Context, pendingOnly bool) ([]ToolRow, error) {
	tools, err := s.cat.Tools(ctx)
	if err != nil {
		return nil, err
	}
	names := namesOf(tools)
	pins := map[string]*PackagePin{}
	by := map[[2]string]string{}
	if len(tools) > 0 {
		servers, err := s.cat.Servers(ctx)
		if err != nil {
			return nil, err
		}
		for _, srv := range servers {
			pins[srv.Name] = srv.Package
		}
		aps, err := s.cat.Approvals(ctx)
		if err != nil {
			return nil, err
		}
		for _, ap := range aps {
			by[[2]string{ap.Server, ap.Tool}] = ap.By
		}
	}
	rows := make([]ToolRow, 0, len(tools))
	for _, t := range tools {
		if pendingOnly && !t.Pending() {
			continue
		}
		r := ToolRow{Server: t.Server, Tool: t.Tool, State: t.State(), Approved: t.Approved, Pending: t.Pending(),
			Refused: t.Refused, Versions: t.Versions, Rules: []Rule{}, Flags: []string{}, Package: pins[t.Server]}
		if t.Approved != "" {
			r.ApprovedBy = by[[2]string{t.Server, t.Tool}]
		}
		if t.Listed() {
			r.Current = t.Current
			if t.Current != "" || t.Refused != "" {
				r.Source = t.CurrentSource
			}
		}
		// The version shown: Current, else (refused, not listed, or a digest only the
		// gateway has seen, whose definition no crawl has recorded yet) the latest.
		var v Version
		graded := false
		if r.Current != "" {
			v, err = s.cat.Version(ctx, t.Server, t.Tool, r.Current)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			graded = err == nil
		}
		if !graded && t.Versions > 0 {
			vs, err := s.cat.Versions(ctx, t.Server, t.Tool)
			if err != nil {
				return nil, err
			}
			if len(vs) > 0 {
				v = vs[len(vs)-1]
			}
		}
		if v.Digest != "" {
			if r.Inspection, err = Inspect(v.Canonical, t.Tool, names); err != nil {
				return nil, err
			}
			r.Flags = append(r.Flags, r.Inspection.Flags()...)
			if graded && r.Current != t.Approved {
				r.Baseline = t.Baseline()
				if r.Baseline == r.Current {
					r.Baseline = ""
				}
				d, _, err := s.grade(ctx, t.Server, t.Tool, r.Baseline, v.Canonical, names)
				if err != nil {
					return nil, err
				}
				r.Grade, r.Rules = d.Grade, d.Rules()
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// VersionView is one version with what is known about it, for `toolwarrant show`.
type VersionView struct {
	Version    Version
	Inspection Inspection
	// Current says whether it is the digest last observed; Approved whether it is the
	// approved digest.
	Current, Approved bool
	State             State
	Decisions         []Decision
}

// VersionDoc is a VersionView as one JSON document: what `toolwarrant show --json` prints
// and what the approvals API answers for one version. Definition is the canonical JSON
// (a printer may escape suspicious characters in it first).
type VersionDoc struct {
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Digest      Digest          `json:"digest"`
	State       State           `json:"state"`
	Current     bool            `json:"current"`
	Approved    bool            `json:"approved"`
	FirstSeenAt time.Time       `json:"firstSeenAt"`
	FirstSeenBy string          `json:"firstSeenBy"`
	FirstCrawl  int64           `json:"firstCrawl"`
	Inspection  Inspection      `json:"inspection"`
	Decisions   []DecisionDoc   `json:"decisions"`
	Definition  json.RawMessage `json:"definition"`
}

// DecisionDoc is one decision on a version, in a VersionDoc.
type DecisionDoc struct {
	Kind  DecisionKind `json:"kind"`
	Actor string       `json:"actor"`
	At    time.Time    `json:"at"`
}

// Doc returns v as a VersionDoc (empty lists, never null).
func (v VersionView) Doc() VersionDoc {
	d := VersionDoc{Server: v.Version.Server, Tool: v.Version.Tool, Digest: v.Version.Digest, State: v.State, Current: v.Current,
		Approved: v.Approved, FirstSeenAt: v.Version.FirstSeenAt, FirstSeenBy: v.Version.FirstSeenBy, FirstCrawl: v.Version.FirstCrawl,
		Inspection: v.Inspection, Decisions: []DecisionDoc{}, Definition: json.RawMessage(v.Version.Canonical)}
	if d.Inspection.Findings == nil {
		d.Inspection.Findings = []TextFinding{}
	}
	for _, x := range v.Decisions {
		d.Decisions = append(d.Decisions, DecisionDoc{x.Kind, x.Actor, x.At})
	}
	return d
}

// View returns the VersionView d describes (its decisions hold kind, actor and time).
func (d VersionDoc) View() VersionView {
	v := VersionView{Version: Version{Server: d.Server, Tool: d.Tool, Digest: d.Digest, Canonical: d.Definition,
		FirstSeenAt: d.FirstSeenAt, FirstSeenBy: d.FirstSeenBy, FirstCrawl: d.FirstCrawl},
		Inspection: d.Inspection, Current: d.Current, Approved: d.Approved, State: d.State}
	for _, x := range d.Decisions {
		v.Decisions = append(v.Decisions, Decision{Server: d.Server, Tool: d.Tool, Digest: d.Digest, Kind: x.Kind, Actor: x.Actor, At: x.At})
	}
	return v
}

// tool loads a tool's record and versions; ErrNotFound naming what is missing.
func (s *Service) tool(ctx context.Context, server, tool string) (ToolRecord, []Version, error) {
	if _, err := s.cat.Server(ctx, server); err != nil {
		if errors.Is(err, ErrNotFound) {
			// The store's error names the server already.
			return ToolRecord{}, nil, notFound("server %q is not in the catalog ('toolwarrant server list' shows those that are)", server)
		}
		return ToolRecord{}, nil, fmt.Errorf("server %q: %w", server, err)
	}
	vs, err := s.cat.Versions(ctx, server, tool)
	if err != nil {
		return ToolRecord{}, nil, err
	}
	tools, _, err := s.catalogTools(ctx)
	if err != nil {
		return ToolRecord{}, nil, err
	}
	tr := ToolRecord{Server: server, Tool: tool}
	for _, t := range tools {
		if t.Server == server && t.Tool == tool {
			tr = t
		}
	}
	if len(vs) == 0 {
		if tr.Current != "" {
			return ToolRecord{}, nil, fmt.Errorf("server %q tool %q: the gateway listed %s, but no crawl has recorded a definition of the tool yet (run 'toolwarrant crawl %s'): %w",
				server, tool, tr.Current.Short(), server, ErrNotFound)
		}
		return ToolRecord{}, nil, notFound("server %q has no tool %q ('toolwarrant list' shows the tools of every server)", server, tool)
	}
	return tr, vs, nil
}

// currentVersion returns the digest last observed when it is listed and a recorded
// version (a digest only the gateway has seen has none yet), else "".
func currentVersion(tr ToolRecord, ds []Digest) Digest {
	if tr.Current != "" && tr.Listed() && slices.Contains(ds, tr.Current) {
		return tr.Current
	}
	return ""
}

func digests(vs []Version) []Digest {
	out := make([]Digest, len(vs))
	for i, v := range vs {
		out[i] = v.Digest
	}
	return out
}

// Show returns one version of a tool: digest (a full digest or a unique prefix of at least
// 8 hex digits), or "" for the current one (the last observed, if it is a recorded
// version, else the newest).
func (s *Service) Show(ctx context.Context, server, tool, digest string) (VersionView, error) {
	tr, vs, err := s.tool(ctx, server, tool)
	if err != nil {
		return VersionView{}, err
	}
	return s.show(ctx, tr, vs, digest)
}

// show is Show over the tool's record and versions, already read.
func (s *Service) show(ctx context.Context, tr ToolRecord, vs []Version, digest string) (VersionView, error) {
	server, tool := tr.Server, tr.Tool
	var d Digest
	var err error
	switch {
	case digest != "":
		if d, err = MatchDigest(digests(vs), digest); err != nil {
			return VersionView{}, fmt.Errorf("server %q tool %q: %w", server, tool, err)
		}
	case currentVersion(tr, digests(vs)) != "":
		d = tr.Current
	default:
		d = vs[len(vs)-1].Digest
	}
	v, err := s.cat.Version(ctx, server, tool, d)
	if err != nil {
		return VersionView{}, err
	}
	names, err := s.catalogNames(ctx)
	if err != nil {
		return VersionView{}, err
	}
	in, err := Inspect(v.Canonical, tool, names)
	if err != nil {
		return VersionView{}, err
	}
	decs, err := s.cat.Decisions(ctx, server, tool)
	if err != nil {
		return VersionView{}, err
	}
	var mine []Decision
	for _, dc := range decs {
		if dc.Digest == d {
			mine = append(mine, dc)
		}
	}
	return VersionView{Version: v, Inspection: in, Current: tr.Current == d && tr.Listed(),
		Approved: tr.Approved == d, State: tr.State(), Decisions: mine}, nil
}

// DiffView is the graded difference between two versions of one tool.
type DiffView struct {
	Server, Tool string
	// From is "" when To is graded as a new tool.
	From, To Digest
	Drift    Drift
	// FromInspection and ToInspection are the inspections of both versions.
	FromInspection, ToInspection Inspection
	// FromVersion and ToVersion are the versions compared (FromVersion is zero for a new tool).
	FromVersion, ToVersion Version
}

// Diff grades version to of a tool against version from. Empty to means the current
// version (the last observed, if it is a recorded version, else the newest); empty from
// means the baseline — the approved digest, else the previous one seen, else nothing (the
// tool is graded as new).
func (s *Service) Diff(ctx context.Context, server, tool, from, to string) (DiffView, error) {
	tr, vs, err := s.tool(ctx, server, tool)
	if err != nil {
		return DiffView{}, err
	}
	dv := DiffView{Server: server, Tool: tool}
	ds := digests(vs)
	if to != "" {
		if dv.To, err = MatchDigest(ds, to); err != nil {
			return DiffView{}, fmt.Errorf("server %q tool %q: --to: %w", server, tool, err)
		}
	} else if cur := currentVersion(tr, ds); cur != "" {
		dv.To = cur
	} else {
		dv.To = ds[len(ds)-1]
	}
	if from != "" {
		if dv.From, err = MatchDigest(ds, from); err != nil {
			return DiffView{}, fmt.Errorf("server %q tool %q: --from: %w", server, tool, err)
		}
	} else if tr.Approved != "" {
		dv.From = tr.Approved
	} else if dv.To == tr.Current {
		dv.From = tr.Previous
	} else if i := slices.Index(ds, dv.To); i > 0 {
		dv.From = ds[i-1]
	}
	names, err := s.catalogNames(ctx)
	if err != nil {
		return DiffView{}, err
	}
	if dv.ToVersion, err = s.cat.Version(ctx, server, tool, dv.To); err != nil {
		return DiffView{}, err
	}
	var old []byte
	if dv.From != "" {
		if dv.FromVersion, err = s.cat.Version(ctx, server, tool, dv.From); err != nil {
			return DiffView{}, err
		}
		old = dv.FromVersion.Canonical
		if dv.FromInspection, err = Inspect(old, tool, names); err != nil {
			return DiffView{}, err
		}
	}
	if dv.Drift, err = Grade(old, dv.ToVersion.Canonical, GradeOptions{Names: names}); err != nil {
		return DiffView{}, err
	}
	if dv.ToInspection, err = Inspect(dv.ToVersion.Canonical, tool, names); err != nil {
		return DiffView{}, err
	}
	return dv, nil
}

// RecordEvent appends one event that accompanies no other write (a trust list change),
// chained from head, which must still be the audit head (ErrConflict otherwise). It needs
// an Auditor.
func (s *Service) RecordEvent(ctx context.Context, e Event, head AuditHead) error {
	if s.auditor == nil {
		return errors.New("record event: no audit log key configured")
	}
	if e.At.IsZero() {
		e.At = s.clock()
	}
	if e.Actor == "" {
		e.Actor = s.identity
	}
	return s.auditedFrom(ctx, "record "+e.Type, 1, &head, func() ([]Event, error) { return []Event{e}, nil },
		func(a AuditAppend) error { return s.cat.AppendAudit(ctx, a) })
}

// ObservedBy returns, sorted, every identity that recorded a crawl of server in which
// tool had digest d: who may not approve d (separation of duties).
func (s *Service) ObservedBy(ctx context.Context, server, tool string, d Digest) ([]string, error) {
	srv, err := s.cat.Server(ctx, server)
	if err != nil {
		return nil, err
	}
	var out []string
	for seq := int64(1); seq <= srv.LastCrawl; seq++ {
		c, err := s.cat.Crawl(ctx, server, seq)
		if err != nil {
			return nil, err
		}
		i, found := slices.BinarySearchFunc(c.Observations, tool, func(o Observation, t string) int { return strings.Compare(o.Tool, t) })
		if found && c.Observations[i].Digest == d && !slices.Contains(out, c.By) {
			out = append(out, c.By)
		}
	}
	slices.Sort(out)
	return out, nil
}
