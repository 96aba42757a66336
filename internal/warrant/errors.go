package warrant

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agentgate-dev/agentgate/internal/textguard"
)

// Sentinel errors of the [Catalog] port and the service. Drivers wrap them with %w and
// context; callers test them with errors.Is.
var (
	// ErrNotFound: the server, tool, version or record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a condition failed — the item exists already with different content,
	// the server's last crawl or a tool's approval moved on since it was read, or the audit
	// head is no longer the one the records were chained from. Nothing was written; the
	// caller re-reads and decides again.
	ErrConflict = errors.New("condition failed")
	// ErrInvalid: the input breaks a rule of the domain (a malformed name, digest or URL, a
	// record that does not link). Nothing was written.
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: the catalog is busy or temporarily failing; nothing was written.
	// Retry later.
	ErrUnavailable = errors.New("catalog unavailable")
	// ErrQueued: the events were queued for the audit log's sequencer (durably) but were
	// not yet sequenced when the call returned (it gave up waiting, or could not integrate
	// them itself). They will be: the next integration, or the sweep, writes them. Do not
	// append them again — that would record them twice.
	ErrQueued = errors.New("queued for the audit log, not yet sequenced")
	// ErrSuspicious: a decision other than a rejection on a version with suspicious text,
	// without accepting it. Nothing was written.
	ErrSuspicious = errors.New("suspicious text not accepted")
	// ErrSeparation: the decider crawled the digest it would approve (separation of
	// duties). Nothing was written.
	ErrSeparation = errors.New("separation of duties")
	// ErrForbidden: the identity may not decide at all (no identity, the crawl role). An
	// [Attester] returns it; nothing was written.
	ErrForbidden = errors.New("forbidden")
	// ErrStale: a decision refused at the write because the tool's approval or the audit log
	// moved on since the decider read them. Such an error also matches ErrConflict. Nothing
	// was recorded. The decider reads again and decides again.
	ErrStale = errors.New("read moved on")
)

// staleError marks a write conflict of [Service.DecideAs] as ErrStale and keeps its text.
type staleError struct{ err error }

func (e staleError) Error() string   { return e.err.Error() }
func (e staleError) Unwrap() []error { return []error{ErrStale, e.err} }

// IngestError refuses one tool of a listing: its definition cannot be given an exact
// digest (invalid UTF-8, a lone surrogate, a duplicate member name, ...) or it cannot be
// told apart from another tool (no name, a name served twice). The rest of the listing is
// still ingested.
type IngestError struct {
	// Server is the server that served the tool.
	Server string
	// Tool is the tool's name as decoded from the listing ("" if it has none); invalid
	// UTF-8 in it reads as U+FFFD.
	Tool string
	// Index is the tool's position in the listing, from 0.
	Index int
	// Offset is the byte offset, in the tool object as served, of the first byte that
	// could not be accepted; -1 when the refusal is not about one position.
	Offset int64
	// Reason says what is wrong, for example "invalid UTF-8".
	Reason string
}

// Error names the server, the tool (rendered so invisible characters show), its index and
// the offset.
func (e *IngestError) Error() string {
	tool := "tool " + strconv.Quote(textguard.Visible(e.Tool))
	if e.Tool == "" {
		tool = "unnamed tool"
	}
	where := ""
	if e.Offset >= 0 {
		where = " at byte offset " + strconv.FormatInt(e.Offset, 10) + " of the tool object"
	}
	return fmt.Sprintf("server %q %s (tools[%d]): refused%s: %s", e.Server, tool, e.Index, where, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *IngestError) Unwrap() error { return ErrInvalid }

// notFoundError is an ErrNotFound whose message is complete without the sentinel's text
// ("… is not in the catalog: not found" would say it twice).
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// notFound returns an error that Is ErrNotFound, with the formatted message alone.
func notFound(format string, a ...any) error {
	return &notFoundError{msg: fmt.Sprintf(format, a...)}
}
