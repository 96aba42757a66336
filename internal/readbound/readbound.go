// Package readbound bounds what a remote peer may make us read: one message, one listing
// (every page of one list method) and everything one server sends in one session. The
// bounds are enforced while reading, by readers that fail the read that crosses one, so
// that a hostile server costs at most the bound in memory, never the size of what it sends.
//
// agentgate lock/ci, the toolwarrant crawler and the proxy take their defaults from here
// and name the same flags in their errors (--max-message-bytes, --max-listing-bytes,
// --max-server-bytes). Standard library only.
package readbound

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
)

// Defaults: one message is what the MCP SDKs buffer for one stdio line or SSE event; a
// listing and a server get a few such messages, far more than the largest real server
// (server-everything's whole surface is under 64 KiB).
const (
	DefaultMessageBytes int64 = 16 << 20
	DefaultListingBytes int64 = 64 << 20
	DefaultServerBytes  int64 = 128 << 20
)

// Limits are the three bounds. A field zero or negative takes its default.
type Limits struct {
	// Message bounds one JSON-RPC message: an HTTP JSON body, one server-sent event, one
	// stdio line.
	Message int64
	// Listing bounds the results of every page of one list method together.
	Listing int64
	// Server bounds everything read from one server in one session: every body, every
	// stream, every line.
	Server int64
	// Knob names the setting that raises a bound, for errors. Nil: the flag (Kind.Flag).
	Knob func(Kind) string
}

// WithDefaults returns l with every unset bound at its default.
func (l Limits) WithDefaults() Limits {
	if l.Message <= 0 {
		l.Message = DefaultMessageBytes
	}
	if l.Listing <= 0 {
		l.Listing = DefaultListingBytes
	}
	if l.Server <= 0 {
		l.Server = DefaultServerBytes
	}
	return l
}

// Kind names a bound.
type Kind string

// The bounds.
const (
	KindMessage Kind = "message"
	KindListing Kind = "listing"
	KindServer  Kind = "server"
)

// Flag is the command-line flag that raises the bound.
func (k Kind) Flag() string { return "--max-" + string(k) + "-bytes" }

// ErrExceeded is matched (errors.Is) by every *Error.
var ErrExceeded = errors.New("over a read bound")

// Error says which bound was crossed and what crossed it.
type Error struct {
	Kind  Kind
	Limit int64
	// What is what was being read: "an HTTP body", "a server-sent event", "the pages of
	// tools/list", "a line on stdout". Empty says "a message" (and so on) by kind.
	What string
	// Knob is the setting that raises the bound. Empty: the flag (Kind.Flag).
	Knob string
}

func (e *Error) Error() string {
	what := e.What
	if what == "" {
		switch e.Kind {
		case KindMessage:
			what = "a message"
		case KindListing:
			what = "one listing"
		default:
			what = "everything the server sent"
		}
	}
	knob := e.Knob
	if knob == "" {
		knob = e.Kind.Flag()
	}
	return fmt.Sprintf("%s exceeded the %s bound of %s (raise it with %s if the server is trusted)", what, e.Kind, FormatSize(e.Limit), knob)
}

// Is makes every *Error match ErrExceeded.
func (e *Error) Is(target error) bool { return target == ErrExceeded }

// Budget is the byte budget of one server's session, shared by every reader of it. It
// remembers the first bound crossed by any of them, so that a caller who gets a vaguer
// error from a library in between can still say which bound it was.
type Budget struct {
	limits Limits
	used   atomic.Int64
	first  atomic.Pointer[Error]
}

// NewBudget returns a budget for one session under l (defaults applied).
func NewBudget(l Limits) *Budget { return &Budget{limits: l.WithDefaults()} }

// Limits returns the budget's bounds.
func (b *Budget) Limits() Limits { return b.limits }

// Used is the number of bytes charged so far.
func (b *Budget) Used() int64 { return b.used.Load() }

// Exceeded returns the first bound crossed, or nil.
func (b *Budget) Exceeded() *Error { return b.first.Load() }

// Fail records e as crossed (the first one is kept) and returns the one kept. Once a bound
// is crossed every body of the budget fails: the session is over.
func (b *Budget) Fail(e *Error) *Error {
	if e.Knob == "" && b.limits.Knob != nil {
		e.Knob = b.limits.Knob(e.Kind)
	}
	b.first.CompareAndSwap(nil, e)
	return b.first.Load()
}

// Charge adds n bytes to the session; it fails once the server bound is crossed.
func (b *Budget) Charge(n int) error {
	if b.used.Add(int64(n)) > b.limits.Server {
		return b.Fail(&Error{Kind: KindServer, Limit: b.limits.Server})
	}
	return nil
}

// Listing is the running total of one list method's pages.
type Listing struct {
	b      *Budget
	method string
	total  int64
}

// Listing starts the count of one list method's pages.
func (b *Budget) Listing(method string) *Listing { return &Listing{b: b, method: method} }

// Add counts one page of n bytes; it fails once the listing bound is crossed. The result is
// the concrete type so that a nil result compares equal to nil.
func (l *Listing) Add(n int) *Error {
	l.total += int64(n)
	if l.total > l.b.limits.Listing {
		return l.b.Fail(&Error{Kind: KindListing, Limit: l.b.limits.Listing, What: "the pages of " + l.method})
	}
	return nil
}

// Framing is how a body delimits messages.
type Framing int

// The framings of bodies an MCP client reads.
const (
	// Whole: the body is one message (application/json).
	Whole Framing = iota
	// Events: the body is a stream of server-sent events; each event is one message.
	Events
)

// Body wraps an HTTP response body: every byte is charged to the budget, and one message
// (the whole body, or one event of an event stream) may not exceed the message bound. A
// read that crosses a bound returns its *Error, and so does every read after it, of this
// body or any other of the budget.
func (b *Budget) Body(r io.ReadCloser, f Framing) io.ReadCloser {
	return &body{r: r, b: b, framing: f}
}

type body struct {
	r       io.ReadCloser
	b       *Budget
	framing Framing
	err     error

	msg int64 // bytes of the current message
	// Event framing (text/event-stream: lines end in \r\n, \n or \r; a blank line ends an
	// event): at the start of a line, and just after a \r (whose \n is the same line end).
	midLine, afterCR bool
}

func (x *body) Read(p []byte) (int, error) {
	if x.err != nil {
		return 0, x.err
	}
	if e := x.b.Exceeded(); e != nil {
		x.err = e
		return 0, e
	}
	n, err := x.r.Read(p)
	if n > 0 {
		if cerr := x.b.Charge(n); cerr != nil {
			x.err = cerr
			return 0, cerr
		}
		if merr := x.account(p[:n]); merr != nil {
			x.err = merr
			return 0, merr
		}
	}
	return n, err
}

// account adds chunk to the current message, ending messages at blank lines for events.
func (x *body) account(chunk []byte) error {
	limit := x.b.limits.Message
	if x.framing == Whole {
		x.msg += int64(len(chunk))
		if x.msg > limit {
			return x.b.Fail(&Error{Kind: KindMessage, Limit: limit, What: "an HTTP body"})
		}
		return nil
	}
	for _, c := range chunk {
		x.msg++
		if c == '\n' && x.afterCR {
			x.afterCR = false
			continue
		}
		x.afterCR = c == '\r'
		if c != '\n' && c != '\r' {
			x.midLine = true
			continue
		}
		if x.midLine {
			x.midLine = false
			continue
		}
		// a blank line: the event ends here
		if x.msg > limit {
			break
		}
		x.msg = 0
	}
	if x.msg > limit {
		return x.b.Fail(&Error{Kind: KindMessage, Limit: limit, What: "a server-sent event"})
	}
	return nil
}

func (x *body) Close() error { return x.r.Close() }

// ParseSize reads a byte count: a whole number, optionally followed by B, KiB, MiB or GiB
// (or K, M, G; KB, MB, GB are read as the binary units too, as most tools do).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size such as 16MiB", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size such as 16MiB", s)
	}
	mult := int64(1)
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("%q is not a size such as 16MiB (units: B, KiB, MiB, GiB)", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// FormatSize shows n in the largest binary unit that divides it ("16 MiB", "1536 KiB",
// "100 bytes").
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// Size is a byte count as a command-line flag value (pflag.Value): it reads ParseSize's
// forms and prints FormatSize's.
type Size int64

// String implements pflag.Value.
func (s *Size) String() string {
	if *s == 0 {
		return "0"
	}
	return strings.ReplaceAll(FormatSize(int64(*s)), " ", "")
}

// Set implements pflag.Value; a size must be positive.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	if n <= 0 {
		return fmt.Errorf("%q must be more than 0 bytes", v)
	}
	*s = Size(n)
	return nil
}

// Type implements pflag.Value.
func (s *Size) Type() string { return "SIZE" }
