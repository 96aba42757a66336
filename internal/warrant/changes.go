package warrant

import (
	"context"
	"encoding/json"
	"fmt"
)

// ServerChanges is what the audit log says changed between two heads: the servers its
// entries name, or All when it cannot say which.
type ServerChanges struct {
	// Head is the head read: the cursor to ask from next time.
	Head AuditHead
	// Servers are the servers the entries after the asked head name.
	Servers map[string]bool
	// All: read every server (more entries than asked for, a head that moved back, a log
	// that does not chain from the asked head, or an entry that names no server and is not
	// of a kind that changes no tool).
	All bool
}

// unnamedHarmless are the audit entry types that name no server and change no tool:
// decision records, review policies, trust changes. Any other entry without a server
// makes ChangedServers answer All.
var unnamedHarmless = map[string]bool{
	EventDecisionsRecorded: true,
	EventPolicyAdded:       true,
	EventPolicyRevoked:     true,
	"trust_changed":        true, // trust.EventTrustChanged (the core does not link trust)
}

// ChangedServers reads the catalog's audit head and, when it moved on from since, the
// entries after since (at most maxEntries of them, else All): every catalog write appends
// its entries in the same transaction as its change, and an entry names its server in its
// event's "server" (the record's body is the audit package's {"event": {...}, ...}). It is
// the change feed both the enforcement points' refresh and the crawl's look-alike names
// follow: one read of one item when nothing changed, however large the catalog.
func ChangedServers(ctx context.Context, cat Catalog, since AuditHead, maxEntries int) (ServerChanges, error) {
	head, err := cat.AuditHead(ctx)
	if err != nil {
		return ServerChanges{}, fmt.Errorf("read the audit head: %w", err)
	}
	out := ServerChanges{Head: head, Servers: map[string]bool{}}
	switch {
	case since.Seq < 0 || head.Seq < since.Seq:
		out.All = true
		return out, nil
	case head.Seq == since.Seq:
		out.All = head.Hash != since.Hash
		return out, nil
	case head.Seq-since.Seq > int64(maxEntries):
		out.All = true
		return out, nil
	}
	prev := since.Hash
	for after := since.Seq; after < head.Seq; {
		recs, err := cat.AuditRecords(ctx, after, int(min(head.Seq-after, 128)))
		if err != nil {
			return ServerChanges{}, fmt.Errorf("read audit entries after %d: %w", after, err)
		}
		if len(recs) == 0 {
			return ServerChanges{}, fmt.Errorf("audit entries after %d missing (head %d)", after, head.Seq)
		}
		for _, r := range recs {
			if r.Seq != after+1 || r.PrevHash != prev {
				out.All = true
				return out, nil
			}
			after, prev = r.Seq, r.Hash
			var body struct {
				Event struct {
					Server string `json:"server"`
				} `json:"event"`
			}
			if json.Unmarshal(r.Body, &body) == nil && body.Event.Server != "" {
				out.Servers[body.Event.Server] = true
			} else if !unnamedHarmless[r.Type] {
				out.All = true
				return out, nil
			}
		}
	}
	if prev != head.Hash {
		out.All = true
	}
	return out, nil
}
