package enforce

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/jsontok"
)

// Outcome is what a decision does with the gateway's message.
type Outcome uint8

// Outcomes.
const (
	// OutcomePass lets the message through unchanged.
	OutcomePass Outcome = iota
	// OutcomeMutated replaces it with Decision.Mutated (a filtered tools/list result).
	OutcomeMutated
	// OutcomeDeny rejects it; the gateway answers the client with a JSON-RPC error.
	OutcomeDeny
	numOutcomes
)

func (o Outcome) String() string {
	switch o {
	case OutcomePass:
		return "pass"
	case OutcomeMutated:
		return "mutated"
	default:
		return "deny"
	}
}

// Cause says why a decision denied (or why a listed tool was dropped).
type Cause uint8

// Causes. The first four are about one tool's state; the rest mean the processor could
// not decide, which is a denial too.
const (
	causeNone Cause = iota
	// CauseUnknown: the catalog does not know the tool.
	CauseUnknown
	// CauseUnapproved: the tool has no approved digest.
	CauseUnapproved
	// CauseDrifted: the last crawl or the last listing saw another definition than the
	// approved one (or one that could not be digested).
	CauseDrifted
	// CauseUnlisted: this processor has not seen the tool in a listing since it started.
	CauseUnlisted
	// CauseStale: no snapshot of the server's approvals younger than the staleness bound.
	CauseStale
	// CauseServer: service_names does not name exactly the servers this processor serves.
	CauseServer
	// CauseMalformed: the JSON the gateway sent is not what the method's contract says.
	CauseMalformed
	// CauseMethod: a method this processor does not decide reached it.
	CauseMethod
	// CauseOversized: the message or the reply would exceed the configured size bound.
	CauseOversized
	// CausePanic: a handler panicked; the panic was recovered.
	CausePanic
	// CauseDeadline: the decision did not finish within its deadline.
	CauseDeadline
	numCauses
)

var causeNames = [numCauses]string{"", "unknown", "unapproved", "drifted", "unlisted", "stale", "server", "malformed", "method", "oversized", "panic", "deadline"}

func (c Cause) String() string {
	if c < numCauses {
		return causeNames[c]
	}
	return "invalid"
}

// ToolState reports whether the cause is about a tool's state (as opposed to the
// processor being unable to decide).
func (c Cause) ToolState() bool { return c >= CauseUnknown && c <= CauseUnlisted }

// Decision is the processor's answer to one gateway message.
type Decision struct {
	Outcome Outcome
	// Mutated is the replacement JSON (OutcomeMutated only).
	Mutated []byte
	// Cause and Reason explain a denial. Reason is what the client sees as the JSON-RPC
	// error message: it names only the tool asked about (or no tool at all).
	Cause  Cause
	Reason string
	// Dropped is how many listed tools a tools/list decision removed (with Shadow, would
	// have removed).
	Dropped int
	// Tool is the tool a tools/call named ("" for other decisions, or when the params
	// named none).
	Tool string
	// Shadow reports a decision made in shadow mode ([Config.Shadow]) that would have
	// denied or filtered: Outcome is then OutcomePass, and Would, Cause, Reason and
	// Dropped say what enforcement would have done.
	Shadow bool
	// Would is the outcome the rules reached: Outcome itself, except in shadow mode.
	Would Outcome

	// For the decision records: the server and snapshot a tools/call was decided on, and
	// the live digest it judged (the last listed, or the last crawled).
	srv     *server
	snap    *snapshot
	live    digest
	hasLive bool
	// recorded: the decision is already in the tally (a tools/list decided tool by tool).
	recorded bool
}

func deny(c Cause, format string, a ...any) Decision {
	return Decision{Outcome: OutcomeDeny, Cause: c, Reason: "toolwarrant: " + fmt.Sprintf(format, a...)}
}

// listed is what the last listing seen by this processor showed for one tool.
type listed struct {
	d  digest
	ok bool // false: the definition could not be digested or its name was listed twice
}

// server is the processor's state for one upstream.
type server struct {
	name   string
	prefix string // name + "_": how the gateway prefixes tool names when it multiplexes
	plain  *digestCache
	muxed  *digestCache
	mu     sync.Mutex
	// version counts the changes to listing and reported (made under mu): a memoized
	// listing decision is replayed only while it is unchanged.
	version atomic.Uint64
	listing map[string]listed
	// reported is the last observation recorded per tool (digest or refusal), so that the
	// same drift seen on every listing is recorded once.
	reported map[string]string
}

const maxReported = 100_000

// decideList decides a tools/list result (the response phase): it returns OutcomeMutated
// with the same JSON minus every tool whose live digest is not the approved digest,
// OutcomePass when nothing is dropped, and OutcomeDeny when it cannot decide. services
// are the gateway's service_names; with more than one, tool names carry the gateway's
// "<target>_" prefix, which is removed before digesting. Each listed tool's outcome is
// tallied for the decision records (on a memoized listing, one atomic add).
func (p *Processor) decideList(ctx context.Context, services []string, result []byte) Decision {
	if len(result) > p.cfg.MaxMessageBytes {
		return deny(CauseOversized, "the tools/list result is %d bytes, over the %d-byte bound; denied", len(result), p.cfg.MaxMessageBytes)
	}
	var srvArr [4]*server
	var snapArr [4]*snapshot
	srvs, snaps, d := p.resolve(services, srvArr[:0], snapArr[:0])
	if d.Outcome == OutcomeDeny {
		return d
	}
	var h uint64
	if p.memo != nil {
		h = maphash.Bytes(p.memo.seed, result)
		if e, ok := p.memo.get(h, result, srvs, snaps); ok {
			for i, n := range e.drops {
				if n > 0 {
					p.metrics.toolsDropped[i].Add(float64(n))
				}
			}
			return e.d
		}
	}
	sc := p.scratch.Get().(*listScratch)
	defer sc.release(&p.scratch)
	d, drops, ok := p.listTools(ctx, srvs, snaps, result, sc, true)
	d.recorded = true
	shape := p.tally.shapeOf(srvs, snaps, sc.items, d)
	if ok && p.memo != nil && p.memo.put(h, result, srvs, snaps, slices.Clone(sc.versions), d, drops, shape) {
		return d // the memo entry counted this decision on its shape
	}
	p.tally.addShape(shape)
	return d
}

// listScratch is what one full tools/list decision works in, reused across decisions so
// that deciding allocates nothing per tool.
type listScratch struct {
	items    []listedTool
	kept     []span
	counts   map[dupKey]int32
	buf      []byte
	versions []uint64
}

// dupKey is a tool name within one resolved server.
type dupKey struct {
	srv  int
	tool string
}

func newListScratch() any {
	return &listScratch{counts: map[dupKey]int32{}, buf: make([]byte, 0, 4096)}
}

func (sc *listScratch) release(pool *sync.Pool) {
	// Large listings do not pin their scratch: a pool keeps it only up to 4096 tools.
	if cap(sc.items) > 4096 {
		return
	}
	clear(sc.items) // drop the names the items reference
	sc.items, sc.kept, sc.versions = sc.items[:0], sc.kept[:0], sc.versions[:0]
	clear(sc.counts)
	pool.Put(sc)
}

// listTools is the full decision: one pass over the listing (each tool's bytes are walked
// once by their brackets, then looked up in the digest cache or canonicalized), then the
// evidence. ok reports whether the decision may be memoized; drops counts the dropped
// tools by observation kind; sc.versions holds each server's state version after it.
func (p *Processor) listTools(ctx context.Context, srvs []*server, snaps []*snapshot, result []byte, sc *listScratch, count bool) (d Decision, drops [len(observationKinds)]uint32, ok bool) {
	// The result is edited without decoding it into Go values: a decode/encode round trip
	// would reorder members, reformat numbers and drop fields, and the contract is that
	// everything but the dropped tools stays byte-identical. jsontok's spans say where
	// each tool's exact bytes are.
	//
	// The members other than "tools" pass through untouched, so they are validated
	// strictly here; each tool is validated by canonicalization (or was, when its exact
	// bytes hit the digest cache), and only validated tools are ever kept, so the tools
	// array is walked by its brackets only (RawValue).
	var tools span
	n := 0
	s := jsontok.NewScanner(result, maxDepth, jsontok.AllowLoneSurrogates)
	err := s.Object(func(name jsontok.Token) error {
		if !jsontok.Equal(result[name.Start+1:name.End-1], "tools") {
			_, err := s.Skip()
			return err
		}
		if n++; n > 1 {
			return errToolsTwice
		}
		tools.start = s.Pos()
		err := s.Array(func() error {
			if len(sc.items)%64 == 63 && ctx.Err() != nil {
				return ctx.Err()
			}
			t, err := s.RawValue()
			if err != nil {
				return err
			}
			sc.items = append(sc.items, p.digestTool(srvs, result[t.Start:t.End], span{t.Start, t.End}, &sc.buf))
			return nil
		})
		tools.end = s.Pos()
		return err
	})
	if err == nil {
		err = s.End()
	}
	if err != nil || n != 1 {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return deny(CauseDeadline, "the tools/list decision did not finish in time; denied"), drops, false
		}
		return deny(CauseMalformed, "the tools/list result is not valid JSON with a single \"tools\" array; denied"), drops, false
	}
	items := sc.items

	// A name listed twice is refused: a client could not tell which definition it gets.
	dups := false
	if len(items) > 1 {
		for _, it := range items {
			if it.srv >= 0 {
				k := dupKey{it.srv, it.tool}
				c := sc.counts[k] + 1
				sc.counts[k] = c
				dups = dups || c > 1
			}
		}
	}
	now := p.now()
	for si, s := range srvs {
		snap := snaps[si]
		changed := false
		s.mu.Lock()
		for i := range items {
			it := &items[i]
			if it.srv != si {
				continue
			}
			if dups && sc.counts[dupKey{si, it.tool}] > 1 {
				it.refused = "the name is listed more than once"
			}
			ev, known := snap.tools[it.tool]
			if known {
				l := listed{d: it.d, ok: it.refused == ""}
				if old, had := s.listing[it.tool]; !had || old != l {
					s.listing[it.tool] = l
					changed = true
				}
			}
			if it.refused == "" && known && ev.hasApproved && it.d == ev.approved {
				it.keep = true
				if _, had := s.reported[it.tool]; had {
					delete(s.reported, it.tool)
					changed = true
				}
				continue
			}
			changed = p.observe(s, it, ev, known, now) || changed
		}
		if changed {
			s.version.Add(1)
		}
		sc.versions = append(sc.versions, s.version.Load())
		s.mu.Unlock()
	}
	kept := sc.kept
	for _, it := range items {
		if it.keep {
			kept = append(kept, it.el)
		} else if count {
			p.metrics.dropped(it.kind)
			if i := slices.Index(observationKinds[:], it.kind); i >= 0 {
				drops[i]++
			}
		}
	}
	sc.kept = kept
	dropped := len(items) - len(kept)
	if dropped == 0 {
		return Decision{Outcome: OutcomePass}, drops, true
	}
	size := len(result) - (tools.end - tools.start) + 2 + len(kept)
	for _, k := range kept {
		size += k.end - k.start
	}
	if size > p.cfg.MaxReplyBytes {
		return deny(CauseOversized, "the filtered tools/list result would be %d bytes, over the %d-byte reply bound; denied", size, p.cfg.MaxReplyBytes), drops, false
	}
	out := make([]byte, 0, size)
	out = append(out, result[:tools.start+1]...)
	for i, k := range kept {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, result[k.start:k.end]...)
	}
	out = append(out, result[tools.end-1:]...)
	return Decision{Outcome: OutcomeMutated, Mutated: out, Dropped: dropped}, drops, true
}

// listedTool is one element of a tools/list result, digested.
type listedTool struct {
	el      span
	srv     int // index in the resolved servers; -1 when no server could be attributed
	tool    string
	d       digest
	refused string
	kind    ObservationKind
	keep    bool
}

// digestTool names and digests one listed tool object.
func (p *Processor) digestTool(srvs []*server, raw []byte, el span, buf *[]byte) listedTool {
	it := listedTool{el: el, srv: -1, kind: ObservedRefused}
	var s *server
	muxed := len(srvs) > 1 || p.cfg.Naming == NamingPrefixed
	var nameTok span
	if !muxed {
		s, it.srv = srvs[0], 0
		if c, ok := s.plain.get(raw); ok {
			it.tool, it.d = c.name, c.d
			return it
		}
	}
	name, tok, err := toolName(raw)
	if err != nil {
		it.refused = err.Error()
		it.tool = name
		if muxed {
			it.srv, it.tool = attribute(srvs, name)
		}
		return it
	}
	it.tool, nameTok = name, tok
	in := raw
	cache := (*digestCache)(nil)
	if muxed {
		it.srv, it.tool = attribute(srvs, name)
		if it.srv < 0 {
			it.refused = "the name carries no prefix of a served target"
			return it
		}
		s = srvs[it.srv]
		cache = s.muxed
		if c, ok := cache.get(raw); ok {
			it.tool, it.d = c.name, c.d
			return it
		}
		// Digest the object as the upstream served it: with its own, unprefixed name.
		q, err := canon.AppendString(nil, it.tool)
		if err != nil {
			it.refused = err.Error()
			return it
		}
		in = make([]byte, 0, len(raw)-len(name)+len(q))
		in = append(append(append(in, raw[:nameTok.start]...), q...), raw[nameTok.end:]...)
	} else {
		cache = s.plain
	}
	c, err := canon.Append((*buf)[:0], in)
	if err != nil {
		var ce *canon.Error
		if errors.As(err, &ce) {
			it.refused = ce.Reason
		} else {
			it.refused = err.Error()
		}
		return it
	}
	*buf = c
	it.d = sum(c)
	cache.put(raw, cachedTool{name: it.tool, d: it.d})
	return it
}

// attribute finds the target whose "<target>_" prefix the multiplexed name carries (the
// longest, if several do) and returns its index and the unprefixed name.
func attribute(srvs []*server, name string) (int, string) {
	best := -1
	for i, s := range srvs {
		if strings.HasPrefix(name, s.prefix) && (best < 0 || len(s.prefix) > len(srvs[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return -1, name
	}
	return best, name[len(srvs[best].prefix):]
}

// toolName returns the "name" member of a tool object, decoded strictly, and the span of
// its raw token within raw. The other members' values are walked by their brackets only:
// canonicalization checks them.
func toolName(raw []byte) (string, span, error) {
	var tok span
	n := 0
	s := jsontok.NewScanner(raw, maxDepth, jsontok.AllowLoneSurrogates|jsontok.AllowInvalidUTF8)
	if err := s.Object(func(name jsontok.Token) error {
		t, err := s.RawValue()
		if err == nil && jsontok.Equal(raw[name.Start+1:name.End-1], "name") {
			tok = span{t.Start, t.End}
			n++
		}
		return err
	}); err != nil {
		return "", tok, errors.New("the tool is not a JSON object")
	}
	if n != 1 || raw[tok.start] != '"' {
		return "", tok, errors.New("the tool has no single string name")
	}
	name, err := jsontok.Unquote(raw[tok.start+1:tok.end-1], 0)
	if err != nil {
		return "", tok, fmt.Errorf("the tool name: %s", nameRefusal(err))
	}
	return name, tok, nil
}

// nameRefusal words why a tool name cannot be decoded, as observations record it.
func nameRefusal(err error) string {
	var e *jsontok.Error
	if errors.As(err, &e) {
		switch e.Reason {
		case jsontok.ReasonUTF8:
			return "invalid UTF-8 in string"
		case jsontok.ReasonLoneHigh, jsontok.ReasonLoneLow:
			return "lone surrogate escape in string"
		}
	}
	return "malformed JSON"
}

// callName validates tools/call params strictly, as valid does, and in the same pass
// finds their "name" member: jsonOK says whether params are valid JSON, nameOK whether
// they are an object with exactly one "name", a string that decodes strictly.
func callName(params []byte) (name string, jsonOK, nameOK bool) {
	if params == nil {
		return "", false, false
	}
	s := jsontok.NewScanner(params, maxDepth, jsontok.AllowLoneSurrogates)
	if s.Peek() != jsontok.Object {
		return "", valid(params), false
	}
	var tok jsontok.Token
	n := 0
	err := s.Object(func(member jsontok.Token) error {
		t, err := s.Skip()
		if err == nil && jsontok.Equal(params[member.Start+1:member.End-1], "name") {
			tok = t
			n++
		}
		return err
	})
	if err != nil || s.End() != nil {
		return "", false, false
	}
	if n != 1 || tok.Kind != jsontok.String {
		return "", true, false
	}
	name, err = jsontok.Unquote(params[tok.Start+1:tok.End-1], 0)
	return name, true, err == nil
}

// observe records (once per distinct definition) a listed tool that was not served.
// s.mu is held.
func (p *Processor) observe(s *server, it *listedTool, ev evidence, known bool, now time.Time) (changed bool) {
	if it.tool == "" {
		it.kind = ObservedRefused
		return false // nothing to name in a record; counted in the metrics only
	}
	var kind ObservationKind
	switch {
	case it.refused != "":
		kind = ObservedRefused
	case !known:
		kind = ObservedNew
	case ev.hasApproved:
		kind = ObservedDrift
	default:
		kind = ObservedUnapproved
	}
	it.kind = kind
	// The dedup key, built on the stack: a definition already reported (the usual case
	// for a listing repeated with the same drift) costs no allocation.
	var kb [256]byte
	key := append(append(kb[:0], kind...), ' ')
	if it.refused == "" {
		key = appendDigest(key, it.d)
	}
	key = append(key, it.refused...)
	if s.reported[it.tool] == string(key) {
		return false
	}
	o := Observation{Server: s.name, Tool: it.tool, At: now, Kind: kind, Refused: it.refused}
	if it.refused == "" {
		o.Digest = it.d.String()
	}
	if ev.hasApproved {
		o.Approved = ev.approved.String()
	}
	if len(s.reported) >= maxReported {
		clear(s.reported)
	}
	s.reported[it.tool] = string(key)
	p.rec.offer(o)
	return true
}

// appendDigest appends d as digest.String writes it.
func appendDigest(dst []byte, d digest) []byte {
	dst = append(dst, digestPrefix...)
	return hex.AppendEncode(dst, d[:])
}

// resolve maps service_names to the processor's servers and their fresh snapshots,
// appended to srvs and snaps (the caller's, usually on its stack).
func (p *Processor) resolve(services []string, srvs []*server, snaps []*snapshot) ([]*server, []*snapshot, Decision) {
	if len(services) == 0 {
		return nil, nil, deny(CauseServer, "the gateway named no target (service_names is empty); denied")
	}
	for _, name := range services {
		s, ok := p.servers[name]
		if !ok {
			return nil, nil, deny(CauseServer, "target %q is not served by this processor; denied", clip(name))
		}
		dup := false
		for _, x := range srvs {
			dup = dup || x == s
		}
		if dup {
			continue
		}
		snap, cause := p.cache.get(name)
		if cause != causeNone {
			return nil, nil, p.staleDenial(name)
		}
		srvs = append(srvs, s)
		snaps = append(snaps, snap)
	}
	return srvs, snaps, Decision{}
}

func (p *Processor) staleDenial(server string) Decision {
	if age := p.cache.age(server); age >= 0 {
		return deny(CauseStale, "cannot decide for target %q: its approvals were last read %s ago, over the %s staleness bound; denied", server, age.Round(time.Second), p.cfg.Staleness)
	}
	return deny(CauseStale, "cannot decide for target %q: its approvals have not been read yet; denied", server)
}

// decideCall decides a tools/call request: OutcomePass only if the tool's last listing seen
// by this processor and the server's last crawl both saw exactly the approved digest
// (with Config.Stateless, the last crawl alone).
func (p *Processor) decideCall(ctx context.Context, services []string, params []byte) Decision {
	if len(services) != 1 && p.cfg.Naming != NamingPrefixed {
		return deny(CauseServer, "a tools/call must name exactly one target (service_names has %d); denied", len(services))
	}
	if len(params) > p.cfg.MaxMessageBytes {
		return deny(CauseOversized, "the tools/call params are %d bytes, over the %d-byte bound; denied", len(params), p.cfg.MaxMessageBytes)
	}
	var srvArr [1]*server
	var snapArr [1]*snapshot
	srvs, snaps, d := p.resolve(services, srvArr[:0], snapArr[:0])
	if d.Outcome == OutcomeDeny {
		return d
	}
	name, jsonOK, nameOK := callName(params)
	if !jsonOK {
		return deny(CauseMalformed, "the tools/call params are missing or not valid JSON; denied")
	}
	if !nameOK {
		return deny(CauseMalformed, "the tools/call params have no single valid string name; denied")
	}
	if ctx.Err() != nil {
		return deny(CauseDeadline, "the tools/call decision did not finish in time; denied")
	}
	s, snap := srvs[0], snaps[0]
	if p.cfg.Naming == NamingPrefixed {
		i, tool := attribute(srvs, name)
		if i < 0 {
			d = deny(CauseUnknown, "tool %q carries no prefix of a served target (TARGET%sTOOL); denied", clip(name), p.cfg.Separator)
			d.Tool = name
			return d
		}
		s, snap, name = srvs[i], snaps[i], tool
	}
	d = p.callVerdict(s, snap, name)
	d.Tool, d.srv, d.snap = name, s, snap
	return d
}

// callVerdict is decideCall's rule once the call names a tool of a fresh server.
func (p *Processor) callVerdict(s *server, snap *snapshot, name string) Decision {
	ev, known := snap.tools[name]
	switch {
	case !known:
		return deny(CauseUnknown, "tool %q is unknown (not in the catalog of target %q); denied", clip(name), s.name)
	case !ev.hasApproved:
		return deny(CauseUnapproved, "tool %q is unapproved (no approved definition); denied until a person approves it", clip(name))
	case !ev.hasCrawled || ev.crawled != ev.approved:
		d := deny(CauseDrifted, "tool %q has drifted (the last crawl did not see the approved definition); denied until it is re-approved, rejected or rolled back", clip(name))
		d.live, d.hasLive = ev.crawled, ev.hasCrawled
		return d
	}
	if p.cfg.Stateless {
		return Decision{Outcome: OutcomePass, live: ev.approved, hasLive: true}
	}
	s.mu.Lock()
	l, seen := s.listing[name]
	s.mu.Unlock()
	switch {
	case !seen:
		return deny(CauseUnlisted, "tool %q has not been listed through this %s since it started; list tools, then call again", clip(name), p.cfg.pointNoun())
	case !l.ok || l.d != ev.approved:
		d := deny(CauseDrifted, "tool %q has drifted (the %s last listed another definition than the approved one); denied until it is re-approved, rejected or rolled back", clip(name), p.cfg.pointNoun())
		d.live, d.hasLive = l.d, l.ok
		return d
	}
	return Decision{Outcome: OutcomePass, live: l.d, hasLive: true}
}

// clip bounds a client-supplied name in a reason.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// span is b[start:end] of some input.
type span struct{ start, end int }

// maxDepth bounds nesting in what the processor validates, as canon.MaxDepth bounds it in
// canonicalization.
const maxDepth = canon.MaxDepth

var errToolsTwice = errors.New(`"tools" twice`)

// valid reports whether b is exactly one strictly valid JSON value (with optional
// surrounding whitespace): RFC 8259 and valid UTF-8, as encoding/json.Valid accepts it
// once invalid UTF-8 is refused.
func valid(b []byte) bool {
	return jsontok.Valid(b, maxDepth, jsontok.AllowLoneSurrogates)
}
