package lockerclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// wireAccept asks for the binary form (padwire) and accepts the contract's JSON: a daemon
// that does not offer the binary form answers as it always has.
const wireAccept = padwire.MediaType + ", application/json;q=0.5"

// wireTooLarge begins the detail of a daemon's 413 for a binary answer over its cap
// (docs/padlock.md): it has the binary form, only not for this pad.
const wireTooLarge = "binary answer exceeds "

// wireRetry is how long a client that found a daemon without the binary form keeps to
// JSON paging before it asks again (a daemon may be upgraded in place).
const wireRetry = 5 * time.Minute

// wireEnabled reports whether to ask for the binary form.
func (c *Client) wireEnabled() bool {
	return time.Now().UnixNano() >= c.noWireUntil.Load()
}

// readWire asks for the whole pad in one response in the binary form: a header with the
// manifest, then every block, verified as it arrives. done is false when the daemon
// answered otherwise — without the binary form (a JSON page, or a 413 for a range over the
// JSON slice caps: it is then not asked again for wireRetry) or with a refusal — and the
// caller then walks the pad as the contract says, which gives every refusal its usual
// form. A transport failure is returned as it is (done): a retry would double the wait.
func (c *Client) readWire(ctx context.Context, padID, ticket string, exp *string) (ch *Chain, done bool, err error) {
	// Up to the most blocks this client reads: the daemon clamps to to its last block.
	q := url.Values{"from": {"0"}, "to": {strconv.Itoa(c.maxBlocks - 1)}}
	r := &request{method: http.MethodGet, route: "/v1/pads/{pad_id}/blocks", path: padPath(padID, "blocks"),
		query: q, secrets: []string{ticket}, maxBody: c.maxPage, accept: wireAccept}
	if ticket != "" {
		if c.transport == config.TicketQuery {
			q.Set("ticket", ticket)
		} else {
			r.bearer = ticket
		}
	}
	streamed := false
	r.stream = func(resp *http.Response) error {
		streamed = true
		cr := &capReader{r: resp.Body, left: int64(c.maxPage)}
		rd := c.getReader(cr)
		defer c.readers.Put(rd)
		ch, err = c.wholeWire(rd, padID, exp)
		switch {
		case errors.Is(cr.err, errBodyTooLarge):
			return &DaemonError{Status: resp.StatusCode, Detail: fmt.Sprintf("the response from %s exceeds %d bytes", c.redacted(r), c.maxPage)}
		case cr.err != nil:
			return &DaemonError{Detail: c.transportDetail(ctx, r, cr.err, "reading the response from")}
		}
		return err
	}
	_, _, err = c.do(ctx, r)
	var de *DaemonError
	switch {
	case streamed:
		if err != nil {
			ch.Release()
			return nil, true, err
		}
		return ch, true, nil
	case errors.As(err, &de) && de.Status == http.StatusRequestEntityTooLarge && strings.HasPrefix(de.Detail, wireTooLarge):
		return nil, false, nil // this pad is too large for one answer; the next may not be
	case err == nil, errors.As(err, &de) && de.Status == http.StatusRequestEntityTooLarge:
		c.noWireUntil.Store(time.Now().Add(wireRetry).UnixNano())
		return nil, false, nil
	case errors.As(err, &de) && de.Status != 0:
		return nil, false, nil
	}
	return nil, true, err
}

// wholeWire reads a binary answer for the whole pad: the manifest from its header steers
// the walk exactly as GET /manifest steers the contract's walk.
func (c *Client) wholeWire(rd *padwire.Reader, padID string, exp *string) (*Chain, error) {
	h, err := rd.Header()
	if err != nil {
		return nil, failure(CauseInconsistentBlocks, fmt.Sprintf("the daemon's answer for the whole pad is not a well-formed block list (%v)", err), exp)
	}
	if !isJSONObject(h.Manifest) {
		return nil, &DaemonError{Status: http.StatusOK, Detail: "the manifest in the answer from " + c.base + padPath(padID, "blocks") + " is not a JSON object"}
	}
	m, err := parseManifest(h.Manifest)
	if err != nil {
		return nil, &DaemonError{Status: http.StatusOK, Detail: "the manifest in the answer from " + c.base + padPath(padID, "blocks") + " is not usable: " + err.Error()}
	}
	w, err := c.startWalk(m, padID, exp)
	if err != nil {
		return nil, err
	}
	if ve := w.wire(rd, h, 0, m.BlockCount-1); ve != nil {
		return nil, c.abandon(w, withExpected(ve, exp))
	}
	return c.finish(w, m, exp)
}

// isWire reports whether a response's Content-Type is the binary form.
func isWire(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	return err == nil && mt == padwire.MediaType
}

// getReader returns a binary-form reader on r, reused across reads.
func (c *Client) getReader(r io.Reader) *padwire.Reader {
	if rd, ok := c.readers.Get().(*padwire.Reader); ok {
		rd.Reset(r)
		return rd
	}
	return padwire.NewReader(r, bufio.NewReaderSize(nil, 32<<10))
}

// capReader reads at most left bytes and remembers the first error of the underlying
// reader other than io.EOF (a cut connection, a body shorter than its Content-Length) —
// a transport failure, reported as the JSON path reports it — apart from a stream that is
// merely malformed.
type capReader struct {
	r    io.Reader
	left int64
	err  error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.err = errBodyTooLarge
		return n, c.err
	}
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

// wire decodes and checks the frames of a binary answer with header h for blocks from..to
// (to is from-1 for none), with the checks and the
// order of page (the JSON form): every frame is read (to count them), blocks within the
// requested count are verified as their payload arrives.
func (w *walk) wire(rd *padwire.Reader, h padwire.Header, from, to int) *VerificationError {
	want := to - from + 1
	malformed := func(err error) *VerificationError {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon's page for blocks %d..%d is not a well-formed block list (%v)", from, to, err)}
	}
	echoTo := to
	if want == 0 {
		echoTo = from // an empty answer echoes from as to
	}
	got := 0
	for {
		f, ok, err := rd.Next()
		if err != nil {
			return malformed(err)
		}
		if !ok {
			break
		}
		if got < want && w.blockErr == nil {
			err = w.wireBlock(rd, f, from+got)
		} else {
			err = rd.Skip()
		}
		if err != nil {
			return malformed(err)
		}
		got++
	}
	if err := rd.End(); err != nil {
		return malformed(err)
	}
	if h.PadID != w.padID {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon answered with pad %s while %s was requested", strconv.Quote(capText(h.PadID)), strconv.Quote(capText(w.padID)))}
	}
	if !w.hasTotal {
		w.hasTotal, w.total = true, int(h.TotalBlocks)
	} else if int(h.TotalBlocks) != w.total {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon reported total_blocks changing between pages (%d then %d)", w.total, h.TotalBlocks)}
	}
	if got != want {
		return &VerificationError{Cause: CauseIncompleteRetrieval, Reason: fmt.Sprintf("incomplete retrieval: asked for blocks %d..%d (%d) and received %d; refusing to verify a partial chain", from, to, want, got)}
	}
	if int64(h.From) != int64(from) || int64(h.To) != int64(echoTo) || int64(h.Count) != int64(got) {
		return &VerificationError{Cause: CauseInconsistentBlocks, Reason: fmt.Sprintf("the daemon's page for blocks %d..%d echoes a different range or count", from, to)}
	}
	return nil
}

// wireBlock verifies one frame at position index, reading its payload into the arena and
// hashing it as it arrives. A block that does not verify is recorded in w.blockErr (and
// its payload consumed); the error returned is the stream's.
func (w *walk) wireBlock(rd *padwire.Reader, f padwire.Frame, index int) error {
	fail := func(cause Cause, format string, a ...any) error {
		w.blockErr = &VerificationError{Cause: cause, Reason: fmt.Sprintf(format, a...)}
		return rd.Skip()
	}
	if int64(f.Seq) != int64(index) {
		return fail(CauseInconsistentBlocks, "the block at position %d reports seq=%d; the chain is not a contiguous 0-based sequence", index, f.Seq)
	}
	dl := f.PayloadLen
	at, ok := w.reserve(dl)
	if !ok {
		return fail(CauseIncompleteRetrieval, tooMuchPayload, w.maxBytes)
	}
	payload := w.arena[at : at+dl : at+dl]
	// The frame's hashes alias the reader's scratch: compare them before reading on.
	prevOK := w.chainValid && bytes.Equal(f.PrevHash, w.prev[:])
	var curr [64]byte
	currOK := len(f.CurrHash) == len(curr)
	copy(curr[:], f.CurrHash)
	w.sink.valid = true
	if w.chainValid {
		w.hasher.Begin()
		w.sink.h = &w.hasher
	} else {
		w.sink.h = nil
	}
	if err := rd.Payload(payload, &w.sink); err != nil {
		return err
	}
	w.arena = w.arena[:at+dl]
	// Pieces that are each valid UTF-8 make a valid whole; otherwise (a character split
	// between pieces, or invalid bytes) the whole payload is checked.
	b := Block{Seq: index, Payload: payload, UTF8: w.sink.valid || utf8.Valid(payload), CreatedAt: f.CreatedAt, HasCreatedAt: true}
	var next []byte
	if w.chainValid {
		next = w.hasher.End()
	}
	w.add(b, next, prevOK && currOK && bytes.Equal(curr[:], next))
	return nil
}

// pieceSink takes a binary answer's payload piece by piece as it arrives: it hashes each
// into the chain (when h is set) and checks it for UTF-8 while it is still in the cache.
type pieceSink struct {
	h     *locker.Walker
	valid bool // every piece so far is valid UTF-8 on its own
}

func (s *pieceSink) Write(p []byte) (int, error) {
	if s.h != nil {
		_, _ = s.h.Write(p)
	}
	if s.valid {
		s.valid = utf8.Valid(p)
	}
	return len(p), nil
}
