package enforce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// CatalogSource adapts the toolwarrant catalog port to [Source]. One snapshot is one
// ServerTools read of the one server asked for (its cost does not grow with the servers
// the catalog holds): a tool's approved digest is ToolRecord.Approved, its crawled digest
// ToolRecord.Current when the server's last crawl listed it (a REMOVED tool has none). A
// tool without an approval — every tool until a person approves one — is denied:
// fail-closed by construction.
type CatalogSource struct {
	Catalog warrant.Catalog
}

// CatalogFeedSource is a [CatalogSource] that is also a [ChangeFeed] read from the
// catalog's audit log: a refresh round reads the head (one read of one item, however
// many servers the catalog holds) and, when it moved, the entries since; then only the
// servers those entries name. It is what a long-running processor should use.
type CatalogFeedSource struct {
	CatalogSource
}

var (
	_ Source     = CatalogSource{}
	_ ChangeFeed = CatalogFeedSource{}
)

// FeedMaxEntries bounds what one [CatalogFeedSource.Changes] call reads: past that many new
// audit entries it answers All (reading every server costs less than the entries would).
const FeedMaxEntries = 512

// Changes implements [ChangeFeed] from the audit log, which every catalog write appends
// to in the same transaction as its change: one read of the head and, when it moved, the
// entries since since (at most FeedMaxEntries; warrant.ChangedServers). The cursor is the
// head, "SEQ:HASH"; an unreadable cursor (the first call's ""), a head that moved back, or
// entries that do not chain from the cursor's hash (a replaced log) answer All, and so does
// an entry that names no server and is not of a type that changes no evidence.
func (c CatalogFeedSource) Changes(ctx context.Context, since string) (Changes, error) {
	seqText, hash, ok := strings.Cut(since, ":")
	seq, perr := strconv.ParseInt(seqText, 10, 64)
	from := warrant.AuditHead{Seq: seq, Hash: hash}
	if !ok || perr != nil {
		from = warrant.AuditHead{Seq: -1} // start afresh
	}
	ch, err := warrant.ChangedServers(ctx, c.Catalog, from, FeedMaxEntries)
	if err != nil {
		return Changes{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return Changes{Cursor: strconv.FormatInt(ch.Head.Seq, 10) + ":" + ch.Head.Hash, Servers: ch.Servers, All: ch.All}, nil
}

// Snapshot reads the evidence for server. ErrUnknownServer when the catalog has no such
// server; ErrUnavailable (wrapping the catalog's error) for any other failure.
func (c CatalogSource) Snapshot(ctx context.Context, server string) (Snapshot, error) {
	started := time.Now()
	recs, err := c.Catalog.ServerTools(ctx, server)
	if errors.Is(err, warrant.ErrNotFound) {
		return Snapshot{}, fmt.Errorf("server %q: %w", server, ErrUnknownServer)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: read tools of %q: %w", ErrUnavailable, server, err)
	}
	s := Snapshot{Server: server, Tools: map[string]ToolEvidence{}, ReadAt: started}
	for _, r := range recs {
		if r.Server != server {
			continue
		}
		ev := ToolEvidence{Approved: string(r.Approved)}
		if r.State() != warrant.StateRemoved {
			ev.Crawled = string(r.Current)
		}
		s.Tools[r.Tool] = ev
	}
	return s, nil
}

// GatewayObserver is what the catalog side must provide to receive the processor's
// observations: record that the gateway listed these definitions of server's tools at
// at (observations sorted by tool, one per tool; Digest empty and Refused set when the
// definition could not be digested). It must append them to the audit log so that
// `toolwarrant list` shows DRIFT and the next crawl proposes new tools. Implemented by
// warrant.Service.ObserveGateway (a crawl record with Source warrant.SourceGateway).
type GatewayObserver interface {
	ObserveGateway(ctx context.Context, server string, at time.Time, obs []warrant.Observation) error
}

// CatalogRecorder adapts a [GatewayObserver] to [Recorder]: one call per server in the
// batch, stopping at the first error.
func CatalogRecorder(o GatewayObserver) Recorder {
	return RecorderFunc(func(ctx context.Context, batch []Observation) error {
		for i := 0; i < len(batch); {
			j := i
			var obs []warrant.Observation
			var seen []time.Time
			at := batch[i].At
			for ; j < len(batch) && batch[j].Server == batch[i].Server; j++ {
				o := batch[j]
				if o.At.After(at) {
					at = o.At
				}
				w := warrant.Observation{Tool: o.Tool, Digest: warrant.Digest(o.Digest), Refused: o.Refused}
				// One observation per tool: the latest seen.
				if n := len(obs); n > 0 && obs[n-1].Tool == o.Tool {
					if !o.At.Before(seen[n-1]) {
						obs[n-1], seen[n-1] = w, o.At
					}
					continue
				}
				obs, seen = append(obs, w), append(seen, o.At)
			}
			if err := o.ObserveGateway(ctx, batch[i].Server, at, obs); err != nil {
				return fmt.Errorf("record %d observations of server %q: %w", len(obs), batch[i].Server, err)
			}
			i = j
		}
		return nil
	})
}

// DecisionLog is what the catalog side provides to keep decision records: append one
// window to the audit log as signed entries. Implemented by warrant.Service.RecordDecisions.
type DecisionLog interface {
	RecordDecisions(ctx context.Context, w warrant.DecisionWindow) error
}

// CatalogDecisions adapts a [DecisionLog] to [DecisionRecorder].
func CatalogDecisions(l DecisionLog) DecisionRecorder {
	return DecisionRecorderFunc(func(ctx context.Context, b DecisionBatch) error {
		w := warrant.DecisionWindow{Point: b.Point, Instance: b.Instance, Shadow: b.Shadow, From: b.From, To: b.To, Folded: b.Folded,
			Records: make([]warrant.DecisionCount, len(b.Records))}
		for i, r := range b.Records {
			w.Records[i] = warrant.DecisionCount{Server: r.Server, Tool: r.Tool, Method: r.Method, Digest: warrant.Digest(r.Digest),
				Outcome: string(r.Outcome), Cause: r.Cause, Approvals: warrant.Digest(r.Approvals), Count: r.Count}
		}
		return l.RecordDecisions(ctx, w)
	})
}

// LogDecisions is a [DecisionRecorder] that writes each window as one log line at info
// level (records as JSON): where no audit log can take them (a read-only catalog), the
// container's log keeps them.
func LogDecisions(log *slog.Logger) DecisionRecorder {
	return DecisionRecorderFunc(func(ctx context.Context, b DecisionBatch) error {
		log.InfoContext(ctx, "enforce: decisions", slog.String("point", b.Point), slog.String("instance", b.Instance), slog.Bool("shadow", b.Shadow),
			slog.Time("from", b.From), slog.Time("to", b.To), slog.Any("records", b.Records), slog.Uint64("folded", b.Folded))
		return nil
	})
}
