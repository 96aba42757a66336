package lockerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/jsontok"
	"github.com/agentgate-dev/agentgate/internal/locker"
)

// Field is one manifest member as the daemon served it.
type Field struct {
	Key   string
	Value json.RawMessage
}

// manifestKeys are the members of the contract's manifest, in its order. Other members a
// daemon adds are dropped: nothing vouches for them.
var manifestKeys = []string{"pad_id", "state", "block_count", "total_bytes", "sealed_at", "head_hash", "created_at", "expires_at"}

// Manifest is a daemon's GET /manifest answer. Every value is the daemon's assertion;
// BlockCount and HeadHash only steer a read (how many blocks, which head to land on).
type Manifest struct {
	// Fields are the contract's members present in the response, in the daemon's order,
	// with their values verbatim (each a valid JSON value).
	Fields []Field
	// PadID is pad_id when it is a string.
	PadID string
	// State is state when it is a string.
	State string
	// BlockCount is block_count; BlockCountOK is false when it is not a non-negative integer.
	BlockCount   int
	BlockCountOK bool
	// TotalBytes is total_bytes, -1 when it is not a non-negative integer.
	TotalBytes int64
	// SealedAt is sealed_at when it is an integer, else nil.
	SealedAt *int64
	// HeadHash is head_hash when it is a string.
	HeadHash string
}

// Value returns the raw value of the named member, nil when absent.
func (m *Manifest) Value(key string) json.RawMessage {
	for _, f := range m.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// Manifest fetches a pad's manifest (free: no ticket, no lease).
func (c *Client) Manifest(ctx context.Context, padID string) (*Manifest, error) {
	r := &request{method: http.MethodGet, route: "/v1/pads/{pad_id}/manifest", path: padPath(padID, "manifest")}
	status, body, err := c.getJSONObject(ctx, r)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(body)
	if err != nil {
		return nil, &DaemonError{Status: status, Detail: "the manifest from " + c.redacted(r) + " is not usable: " + err.Error()}
	}
	return m, nil
}

func parseManifest(body []byte) (*Manifest, error) {
	m := &Manifest{TotalBytes: -1}
	s := newScanner(body)
	err := members(&s, body, func(k []byte) error {
		known := ""
		for _, mk := range manifestKeys {
			if string(k) == mk {
				known = mk
			}
		}
		t, err := s.Skip()
		if err != nil || known == "" {
			return err
		}
		raw := body[t.Start:t.End]
		if m.Value(known) != nil {
			return fmt.Errorf("duplicate member %q", known)
		}
		m.Fields = append(m.Fields, Field{Key: known, Value: json.RawMessage(raw)})
		vs := newScanner(raw)
		switch known {
		case "pad_id", "state", "head_hash":
			v, ok, _ := stringValue(&vs, raw)
			if ok {
				switch known {
				case "pad_id":
					m.PadID = v
				case "state":
					m.State = v
				default:
					m.HeadHash = v
				}
			}
		case "block_count":
			if iv, _ := integer(&vs, raw); iv.isInt && iv.n >= 0 && iv.n <= 1<<31 {
				m.BlockCount, m.BlockCountOK = int(iv.n), true
			}
		case "total_bytes":
			if iv, _ := integer(&vs, raw); iv.isInt && iv.n >= 0 {
				m.TotalBytes = iv.n
			}
		case "sealed_at":
			if iv, _ := integer(&vs, raw); iv.isInt {
				m.SealedAt = ptr(iv.n)
			}
		}
		return nil
	})
	if err == nil {
		err = s.End()
	}
	return m, err
}

// Hash is a 64-character lowercase hex digest, as bytes.
type Hash [64]byte

// String returns the hex text.
func (h Hash) String() string { return string(h[:]) }

// MarshalText encodes the hex text.
func (h Hash) MarshalText() ([]byte, error) { return h[:], nil }

// Block is one verified block.
type Block struct {
	// Seq is the block's 0-based position.
	Seq int
	// PrevHash and CurrHash are the chain links, recomputed by this client.
	PrevHash, CurrHash Hash
	// Payload is the verified bytes. It shares memory with the other blocks of its Chain.
	Payload []byte
	// UTF8 reports whether Payload is valid UTF-8 (then Text is its strict decode).
	UTF8 bool
	// CreatedAt is the daemon's created_at (an unverified assertion); HasCreatedAt is false
	// when the daemon sent none (or null).
	CreatedAt    int64
	HasCreatedAt bool
}

// Text returns the payload's strict UTF-8 decode, derived locally from the verified bytes;
// ok is false when the bytes are not valid UTF-8.
func (b *Block) Text() (text string, ok bool) {
	if !b.UTF8 {
		return "", false
	}
	return string(b.Payload), true
}

// Chain is a fully verified read: every block from genesis, recomputed onto Head.
type Chain struct {
	// PadID is the pad read.
	PadID string
	// Manifest is the daemon's manifest the walk was steered by.
	Manifest *Manifest
	// Blocks are all blocks, seq 0..n-1.
	Blocks []Block
	// Head is the head recomputed from Blocks (genesis for an empty pad).
	Head string
	// Bytes is the sum of the payload lengths.
	Bytes int
	// Integrity is the result's integrity block (verdict trusted_head_match or
	// internal_consistency_only).
	Integrity Integrity

	c     *Client // for Release
	arena []byte  // the payloads' memory
}

// ReadOptions tune a read.
type ReadOptions struct {
	// ExpectedHead is the caller's reference head (nil: none supplied). It must come from
	// outside the daemon, e.g. the head a writer computed at deposit time.
	ExpectedHead *string
}

// Read walks the pad's whole chain and verifies it. ticket may be empty (the demo pad needs
// none). It returns a *DaemonError when the daemon refused or failed, a *VerificationError
// when what it served does not verify; neither carries payload.
//
// A daemon that offers the binary form answers one request with the manifest and every
// block, verified as they arrive; any other answer (a daemon without it, a refusal) is
// followed by the contract's walk: GET /manifest, then /blocks pages.
func (c *Client) Read(ctx context.Context, padID, ticket string, opt ReadOptions) (*Chain, error) {
	exp := opt.ExpectedHead
	if exp != nil && IsMalformedHead(*exp) {
		return nil, MalformedExpectedHead(*exp)
	}
	if c.wireEnabled() {
		if ch, done, err := c.readWire(ctx, padID, ticket, exp); done {
			return ch, err
		}
	}
	m, err := c.Manifest(ctx, padID)
	if err != nil {
		return nil, err
	}
	w, err := c.startWalk(m, padID, exp)
	if err != nil {
		return nil, err
	}
	buf := c.getBuf()
	defer c.bufs.Put(buf)
	n := m.BlockCount
	chunk := firstChunk(n, m.TotalBytes)
	for start := 0; start < n; {
		end := min(start+chunk, n) - 1
		body, err := c.page(ctx, padID, ticket, start, end, buf)
		var de *DaemonError
		if errors.As(err, &de) && de.Status == http.StatusRequestEntityTooLarge && chunk > 1 {
			chunk = max(1, chunk/2) // the slice is over the daemon's 64 KiB cap: narrow it
			continue
		}
		if err != nil {
			return nil, c.abandon(w, err)
		}
		if ve := w.page(body, start, end); ve != nil {
			return nil, c.abandon(w, withExpected(ve, exp))
		}
		start = end + 1
	}
	return c.finish(w, m, exp)
}

// startWalk checks what the manifest steers a read by and starts the walk of its chain.
func (c *Client) startWalk(m *Manifest, padID string, exp *string) (*walk, error) {
	if !m.BlockCountOK {
		return nil, failure(CauseIncompleteRetrieval, fmt.Sprintf("the manifest reported an unusable block_count (%s); refusing to verify against it", quoteRaw(m.Value("block_count"))), exp)
	}
	if m.PadID != padID {
		return nil, failure(CauseInconsistentBlocks, fmt.Sprintf("the manifest answered for pad %s while %s was requested", quoteRaw(m.Value("pad_id")), strconv.Quote(capText(padID))), exp)
	}
	n := m.BlockCount
	if n > c.maxBlocks {
		return nil, failure(CauseIncompleteRetrieval, fmt.Sprintf("the manifest reports %d blocks, more than this client reads (%d); refusing a partial verification", n, c.maxBlocks), exp)
	}
	w := &walk{padID: padID, want: n, maxBytes: c.maxBytes, chainValid: true, blocks: make([]Block, 0, n)}
	copy(w.prev[:], locker.GenesisHash)
	// The arena is sized from the (unverified) total_bytes, capped so a lying manifest cannot
	// make the client allocate much before any block arrives; it grows as blocks decode.
	hint := n
	if m.TotalBytes > 0 {
		hint = int(min(m.TotalBytes, int64(c.maxBytes), 1<<20))
	}
	w.arena = c.getArena(hint)
	return w, nil
}

// finish checks a walk that read every block against its manifest and the caller's
// expected head, and returns the chain.
func (c *Client) finish(w *walk, m *Manifest, exp *string) (*Chain, error) {
	n := m.BlockCount
	if w.hasTotal && w.total != n {
		return nil, c.abandon(w, failure(CauseInconsistentBlocks, fmt.Sprintf("the manifest reported block_count=%d but the daemon's block list reports total_blocks=%d", n, w.total), exp))
	}
	if w.blockErr != nil {
		return nil, c.abandon(w, withExpected(w.blockErr, exp))
	}
	if w.chainValid && (!locker.IsHash(m.HeadHash) || !bytes.Equal(w.prev[:], []byte(m.HeadHash))) {
		w.chainValid = false // the walk did not land on the head the daemon asserted
	}
	if !w.chainValid {
		eh, cause, reason := expectedHeadState(exp, nil, true)
		if cause == "" {
			cause, reason = CauseChainInconsistent, reasonBroken
		}
		in := newIntegrity(ptr(false), w.verified, eh)
		return nil, c.abandon(w, &VerificationError{Cause: cause, Reason: reason, Integrity: in})
	}
	head := string(w.prev[:])
	eh, cause, reason := expectedHeadState(exp, &head, false)
	in := newIntegrity(ptr(true), w.verified, eh)
	if cause != "" {
		in.Verdict = VerdictFailed
		return nil, c.abandon(w, &VerificationError{Cause: cause, Reason: reason, Integrity: in})
	}
	return &Chain{PadID: w.padID, Manifest: m, Blocks: w.blocks, Head: head, Bytes: len(w.arena), Integrity: in, c: c, arena: w.arena}, nil
}

// maxPooledArena is the largest arena kept for reuse (four times the contract's quota).
const maxPooledArena = 1 << 20

// getArena returns an empty arena with room for at least hint bytes, reused when a
// released chain left one.
func (c *Client) getArena(hint int) []byte {
	if a, ok := c.arenas.Get().(*[]byte); ok && cap(*a) >= hint {
		return (*a)[:0]
	}
	return make([]byte, 0, hint)
}

// putArena keeps a for the next read.
func (c *Client) putArena(a []byte) {
	if a != nil && cap(a) <= maxPooledArena {
		a = a[:0]
		c.arenas.Put(&a)
	}
}

// abandon returns a failed walk's arena (no block of it reaches the caller) and err.
func (c *Client) abandon(w *walk, err error) error {
	c.putArena(w.arena)
	w.arena, w.blocks = nil, nil
	return err
}

// Release hands the chain's memory back to its client for the next read. After Release
// the chain and every Payload of it must not be used. Calling it is optional (without
// it the memory is collected as usual) and a second call does nothing.
func (ch *Chain) Release() {
	if ch == nil || ch.c == nil {
		return
	}
	ch.c.putArena(ch.arena)
	ch.c, ch.arena, ch.Blocks = nil, nil, nil
}

// withExpected fills the expected-head part of a walk failure built without it.
func withExpected(ve *VerificationError, exp *string) *VerificationError {
	return failure(ve.Cause, ve.Reason, exp)
}

// firstChunk picks the first page size: 256 blocks, or fewer when the manifest's (unverified)
// total_bytes says 256 average blocks would not fit the daemon's 64 KiB slice cap. A lie only
// costs extra requests or 413s; every page must still return exactly what was asked for.
func firstChunk(n int, totalBytes int64) int {
	chunk := locker.MaxSliceBlocks
	if n > 0 && totalBytes > 0 {
		fit := int64(locker.MaxSliceBytes) * int64(n) / totalBytes
		chunk = int(max(1, min(fit, int64(chunk))))
	}
	return chunk
}

func (c *Client) getBuf() *[]byte {
	if b, ok := c.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 96<<10)
	return &b
}

// page fetches blocks from..to.
func (c *Client) page(ctx context.Context, padID, ticket string, from, to int, buf *[]byte) ([]byte, error) {
	q := url.Values{"from": {strconv.Itoa(from)}, "to": {strconv.Itoa(to)}}
	r := &request{method: http.MethodGet, route: "/v1/pads/{pad_id}/blocks", path: padPath(padID, "blocks"),
		query: q, secrets: []string{ticket}, maxBody: c.maxPage, buf: buf}
	if ticket != "" {
		if c.transport == config.TicketQuery {
			q.Set("ticket", ticket)
		} else {
			r.bearer = ticket
		}
	}
	_, body, err := c.do(ctx, r)
	return body, err
}

// walk is the state of one read across pages.
type walk struct {
	padID      string
	want       int
	maxBytes   int
	blocks     []Block
	arena      []byte
	hasher     locker.Walker
	sink       pieceSink // a binary answer's payload pieces: hashed and checked for UTF-8
	prev       [64]byte  // head so far: the last verified curr_hash
	chainValid bool
	verified   int
	hasTotal   bool
	total      int
	blockErr   *VerificationError // first block-level failure; reported after every page
}

// quoteRaw renders a served JSON value for an error text, capped.
func quoteRaw(raw []byte) string {
	if raw == nil {
		return "nothing"
	}
	return capText(string(raw))
}

// page decodes and checks one /blocks response for blocks from..to.
func (w *walk) page(body []byte, from, to int) *VerificationError {
	want := to - from + 1
	s := newScanner(body)
	var seen uint8
	var padID string
	var hasPadID bool
	var total, echoFrom, echoTo, count intValue
	got := 0
	dup := func(bit uint8) error {
		if seen&bit != 0 {
			return syntaxError(&s, "duplicate member")
		}
		seen |= bit
		return nil
	}
	ints := [...]struct {
		key string
		bit uint8
		v   *intValue
	}{{"total_blocks", 2, &total}, {"from", 4, &echoFrom}, {"to", 8, &echoTo}, {"count", 16, &count}}
	err := members(&s, body, func(k []byte) error {
		var err error
		switch string(k) {
		case "pad_id":
			if err = dup(1); err != nil {
				return err
			}
			padID, hasPadID, err = stringValue(&s, body)
			return err
		case "total_blocks", "from", "to", "count":
			for _, m := range ints {
				if string(k) == m.key {
					if err = dup(m.bit); err == nil {
						*m.v, err = integer(&s, body)
					}
				}
			}
		case "blocks":
			if err = dup(32); err != nil {
				return err
			}
			if s.Peek() != jsontok.Array {
				return syntaxError(&s, "blocks is not an array")
			}
			return s.Array(func() error {
				err := w.block(&s, body, from+got, got < want)
				got++
				return err
			})
		default:
			_, err := s.Skip()
			return err
		}
		return err
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon's page for blocks %d..%d is not a well-formed block list (%v)", from, to, err)}
	}
	if !hasPadID || padID != w.padID {
		served := "no pad_id"
		if hasPadID {
			served = "pad " + strconv.Quote(capText(padID))
		}
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon answered with %s while %s was requested", served, strconv.Quote(capText(w.padID)))}
	}
	if !total.isInt {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon's page for blocks %d..%d has no integer total_blocks", from, to)}
	}
	if !w.hasTotal {
		w.hasTotal, w.total = true, int(total.n)
	} else if int(total.n) != w.total {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon reported total_blocks changing between pages (%d then %d)", w.total, total.n)}
	}
	if got != want {
		return &VerificationError{Cause: CauseIncompleteRetrieval, Reason: fmt.Sprintf("incomplete retrieval: asked for blocks %d..%d (%d) and received %d; refusing to verify a partial chain", from, to, want, got)}
	}
	if (seen&4 != 0 && (!echoFrom.isInt || echoFrom.n != int64(from))) || (seen&8 != 0 && (!echoTo.isInt || echoTo.n != int64(to))) ||
		(seen&16 != 0 && (!count.isInt || count.n != int64(got))) {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon's page for blocks %d..%d echoes a different range or count", from, to)}
	}
	return nil
}

// Kinds of a block member's value.
const (
	absent = iota
	isNull
	isString
	isOther
)

// span is a string member of a block.
type span struct {
	kind int
	raw  []byte
}

// spanValue consumes a value: a string is taken as a raw span, checked by its consumer.
func spanValue(s *jsontok.Scanner) (span, error) {
	switch s.Peek() {
	case jsontok.String:
		raw, err := s.RawString()
		return span{kind: isString, raw: raw}, err
	case jsontok.Null:
		_, err := s.ReadLiteral()
		return span{kind: isNull}, err
	}
	_, err := s.Skip()
	return span{kind: isOther}, err
}

// block decodes one block object at position index. process is false for blocks past the
// page's requested count: they are parsed (to report the count) but not kept.
func (w *walk) block(s *jsontok.Scanner, body []byte, index int, process bool) error {
	var seq intValue
	var seqRaw []byte
	var prev, curr, b64s, text span
	var created intValue
	var seen uint8
	err := members(s, body, func(k []byte) error {
		bit := uint8(0)
		var err error
		switch string(k) {
		case "seq":
			bit = 1
			seq, err = integer(s, body)
			seqRaw = seq.raw
		case "prev_hash":
			bit = 2
			prev, err = spanValue(s)
		case "curr_hash":
			bit = 4
			curr, err = spanValue(s)
		case "payload_b64":
			bit = 8
			b64s, err = spanValue(s)
		case "payload_utf8":
			bit = 16
			text, err = spanValue(s)
		case "created_at":
			bit = 32
			created, err = integer(s, body)
		default:
			_, err := s.Skip() // content_type and anything else: not returned
			return err
		}
		if seen&bit != 0 {
			return syntaxError(s, "duplicate member in a block")
		}
		seen |= bit
		return err
	})
	if err != nil || !process || w.blockErr != nil {
		return err
	}
	fail := func(cause Cause, format string, a ...any) error {
		w.blockErr = &VerificationError{Cause: cause, Reason: fmt.Sprintf(format, a...)}
		return nil
	}
	if seen&1 == 0 || !seq.isInt || seq.n != int64(index) {
		shown := "nothing"
		if seen&1 != 0 {
			shown = capText(string(seqRaw))
		}
		return fail(CauseInconsistentBlocks, "the block at position %d reports seq=%s; the chain is not a contiguous 0-based sequence", index, shown)
	}
	if created.kind != 0 && created.kind != '0' && created.kind != 'n' || created.kind == '0' && !created.isInt {
		return fail(CauseInconsistentBlocks, "block %d: created_at is not an integer", index)
	}
	// payload_b64: the hashed representation, decoded strictly straight into the arena.
	if b64s.kind != isString {
		return fail(CauseInconsistentBlocks, "block %d: the payload is not a base64 string", index)
	}
	// Fast path: decode the raw span. The decoder refuses every byte outside the alphabet,
	// so escapes (legal JSON, e.g. "\/") and newlines fail it; only then is the span
	// unescaped and decoded again.
	src := b64s.raw
	var at, dl int
	for attempt := 0; ; attempt++ {
		ok := len(src)%4 == 0
		if ok {
			dl = len(src) / 4 * 3 // exact: only canonical padding decodes
			if dl > 0 && src[len(src)-1] == '=' {
				dl--
				if src[len(src)-2] == '=' {
					dl--
				}
			}
			if at, ok = w.reserve(dl); !ok {
				return fail(CauseIncompleteRetrieval, tooMuchPayload, w.maxBytes)
			}
			tail := src[max(0, len(src)-4):]
			ok = bytes.IndexByte(tail, '\n') < 0 && bytes.IndexByte(tail, '\r') < 0 && decodeB64(w.arena[at:at+dl], src) == nil
		}
		if ok {
			break
		}
		if attempt > 0 || bytes.IndexByte(src, '\\') < 0 {
			return fail(CauseInconsistentBlocks, "block %d: the payload is not valid base64", index)
		}
		var err error
		if src, err = jsontok.AppendUnquote(nil, src, jsontok.AllowLoneSurrogates); err != nil {
			return fail(CauseInconsistentBlocks, "block %d: the payload is not valid base64", index)
		}
	}
	payload := w.arena[at : at+dl : at+dl]
	w.arena = w.arena[:at+dl]
	// payload_utf8, when present, must be exactly the strict decode of those bytes.
	valid := utf8.Valid(payload)
	switch text.kind {
	case isNull:
		if valid {
			return fail(CauseRepresentationMismatch, "block %d: the daemon presented no text for a payload that is valid UTF-8; refusing a representation that disagrees with the verified bytes", index)
		}
	case isString:
		if !valid || !jsontok.Equal(text.raw, payload) {
			return fail(CauseRepresentationMismatch, "block %d: the text the daemon presented does not match the payload bytes it served; refusing a representation that disagrees with the verified bytes", index)
		}
	case isOther:
		return fail(CauseRepresentationMismatch, "block %d: payload_utf8 is neither text nor null", index)
	}
	b := Block{Seq: index, Payload: payload, UTF8: valid}
	b.CreatedAt, b.HasCreatedAt = created.n, created.isInt
	var next []byte
	linked := false
	if w.chainValid {
		next = w.hasher.Next(payload)
		linked = hashIs(prev, w.prev[:]) && hashIs(curr, next)
	}
	w.add(b, next, linked)
	return nil
}

// tooMuchPayload is the reason a walk stops at the client's payload bound (maxBytes).
const tooMuchPayload = "the pad holds more payload than this client reads (%d bytes); refusing a partial verification"

// reserve makes room in the arena for a payload of dl bytes and returns where it starts;
// false when the pad would then hold more than maxBytes.
func (w *walk) reserve(dl int) (int, bool) {
	if len(w.arena)+dl > w.maxBytes {
		return 0, false
	}
	if cap(w.arena)-len(w.arena) < dl {
		grown := make([]byte, len(w.arena), max(2*cap(w.arena), len(w.arena)+dl))
		copy(grown, w.arena)
		w.arena = grown // earlier blocks keep their slices of the old array
	}
	return len(w.arena), true
}

// add appends block b to the walk. While the chain verifies, next is the hash of b's
// payload and linked says whether b's stated hashes are the head and next: then next is
// the new head and b counts as verified; else the chain is invalid from b on, and every
// later block carries the last verified head.
func (w *walk) add(b Block, next []byte, linked bool) {
	copy(b.PrevHash[:], w.prev[:])
	if w.chainValid {
		if linked {
			copy(w.prev[:], next)
			w.verified++
		} else {
			w.chainValid = false
		}
	}
	copy(b.CurrHash[:], w.prev[:])
	w.blocks = append(w.blocks, b)
}

// hashIs reports whether a served hash member equals want (64 lowercase hex bytes).
func hashIs(s span, want []byte) bool {
	return s.kind == isString && (bytes.Equal(s.raw, want) || jsontok.Equal(s.raw, want))
}
