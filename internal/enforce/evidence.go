package enforce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// Errors a [Source] returns. Anything else is treated like ErrUnavailable.
var (
	// ErrUnknownServer: the catalog has no server of that name. The processor denies
	// everything for it (and keeps trying: the server may be added later).
	ErrUnknownServer = errors.New("unknown server")
	// ErrUnavailable: the catalog could not be read now. The processor keeps deciding on
	// the last snapshot until it is older than the staleness bound, then denies.
	ErrUnavailable = errors.New("catalog unavailable")
)

// ToolEvidence is what the catalog knows about one tool of one server, in digest form
// ("sha256:" and 64 lower-case hex digits, the same string as warrant.Digest).
type ToolEvidence struct {
	// Approved is the tool's approved digest; "" when it has none (never approved,
	// rejected, or approvals do not exist yet). No approval means deny.
	Approved string
	// Crawled is the digest the server's last crawl saw for the tool; "" when that crawl
	// did not list it or refused its definition.
	Crawled string
}

// Snapshot is one consistent read of the evidence for one upstream server.
type Snapshot struct {
	// Server is the catalog's (and the gateway target's) name of the upstream.
	Server string
	// Tools maps every tool the catalog knows for the server to its evidence. A tool
	// absent from the map is unknown: it is dropped from listings and its calls denied.
	Tools map[string]ToolEvidence
	// ReadAt is when the source read it; zero means "now". Staleness is measured from the
	// earlier of ReadAt and the moment the processor received the snapshot.
	ReadAt time.Time
}

// Source is the processor's read port: the approvals and crawl results it decides with.
//
// Snapshot returns the evidence for one server, read consistently (a tool's approval and
// last crawl from the same moment). It wraps ErrUnknownServer when the catalog has no
// such server and ErrUnavailable when it cannot be read now; it must honour ctx. It is
// called from the processor's refresh loop only, never on a request's path, and must be
// safe for concurrent use (one call per server may run at a time).
type Source interface {
	Snapshot(ctx context.Context, server string) (Snapshot, error)
}

// ChangeFeed is an optional extension of a [Source]: which servers' evidence may have
// changed since a position it named before. With it, a refresh round reads the feed once
// and then only the servers it names (and any whose last read failed); the others keep
// their evidence, confirmed fresh as of the round. Without it, every round reads every
// server. A feed must never leave out a server whose evidence changed: when in doubt it
// answers All.
type ChangeFeed interface {
	// Changes reports the changes after since ("" asks for a fresh start: All). It is
	// called once per refresh round, before the round's Snapshot calls.
	Changes(ctx context.Context, since string) (Changes, error)
}

// Changes is a [ChangeFeed]'s answer.
type Changes struct {
	// Cursor names the position read: the since of the next call.
	Cursor string
	// All says every server must be read again (a first call, a log that moved in a
	// way the feed cannot follow, too many changes, an entry it cannot attribute).
	All bool
	// Servers are the servers whose evidence may have changed.
	Servers map[string]bool
}

// ObservationKind says why a listed tool was not served.
type ObservationKind string

// Observation kinds.
const (
	// ObservedNew: the catalog does not know the tool; the next crawl should propose it.
	ObservedNew ObservationKind = "new"
	// ObservedDrift: the tool has an approved digest and was listed with another one.
	ObservedDrift ObservationKind = "drift"
	// ObservedUnapproved: the catalog knows the tool but it has no approved digest.
	ObservedUnapproved ObservationKind = "unapproved"
	// ObservedRefused: the listed definition could not be given a digest (invalid UTF-8,
	// a lone surrogate, a duplicate member, no name, the name listed twice, ...).
	ObservedRefused ObservationKind = "refused"
)

// Observation is one tool the processor saw in a tools/list result and did not serve.
type Observation struct {
	Server, Tool string
	Kind         ObservationKind
	// Digest is the live digest of the definition as listed; "" when Kind is refused.
	Digest string
	// Approved is the approved digest the processor compared with ("" for none).
	Approved string
	// Refused says why no digest could be computed (Kind refused only).
	Refused string
	// At is when the processor saw the listing.
	At time.Time
}

// Recorder is the processor's write port for what it observes.
//
// Record stores one batch of observations, sorted by server then tool, with at most one
// observation per (server, tool, digest). It is called from a single background goroutine,
// never on a request's path, with a ctx bounded by the processor's record timeout; an
// error is logged and counted and the batch retried once with the next one. Drift written
// here is what makes `toolwarrant list` show DRIFT and the next crawl propose new tools.
type Recorder interface {
	Record(ctx context.Context, batch []Observation) error
}

// RecorderFunc adapts a function to [Recorder].
type RecorderFunc func(ctx context.Context, batch []Observation) error

// Record calls f.
func (f RecorderFunc) Record(ctx context.Context, batch []Observation) error { return f(ctx, batch) }

// digest is a SHA-256 sum; the processor compares sums, not strings, on the hot path.
type digest [32]byte

const digestPrefix = "sha256:"

// parseDigest accepts exactly the canonical "sha256:" + 64 lower-case hex form.
func parseDigest(s string) (digest, bool) {
	var d digest
	h, ok := strings.CutPrefix(s, digestPrefix)
	if !ok || len(h) != 64 || strings.ToLower(h) != h {
		return d, false
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, false
	}
	return d, true
}

func (d digest) String() string { return digestPrefix + hex.EncodeToString(d[:]) }

func sum(canonical []byte) digest { return sha256.Sum256(canonical) }
