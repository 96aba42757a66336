package warrant

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// AuditHead is the position of the newest audit record: its sequence number and hash.
type AuditHead struct {
	// Seq is the newest record's sequence number; 0 for an empty log.
	Seq int64 `json:"seq"`
	// Hash is the newest record's hash; GenesisHash for an empty log.
	Hash string `json:"hash"`
}

// GenesisHash is the head hash of an empty audit log: 64 zeros, the hex of 32 zero bytes.
var GenesisHash = strings.Repeat("0", 64)

// Genesis is the head of an empty audit log.
func Genesis() AuditHead { return AuditHead{Seq: 0, Hash: GenesisHash} }

// AuditRecord is one stored audit entry. The store keeps it verbatim and checks only that
// it links to the head (PrevHash, Seq); computing and verifying Hash and Signature is the
// audit package's job (internal/audit). Records are never updated or deleted.
type AuditRecord struct {
	// Seq numbers records from 1 without gaps.
	Seq int64
	// Type is the kind of entry: server_added, crawl_observed, version_recorded, approved,
	// rejected, rolled_back, trust_changed, ...
	Type string
	// Actor is the identity that caused the entry; At is when.
	Actor string
	At    time.Time
	// PrevHash is the previous record's Hash (GenesisHash for the first); Hash is this
	// record's hash, SHA-256(prev_hash || JCS(body)) in the audit package's scheme.
	PrevHash, Hash string
	// Body is the entry's JSON body, canonical (RFC 8785).
	Body []byte
	// KeyID names the log key that made Signature over Hash.
	KeyID     string
	Signature []byte
}

// AuditAppend is the audit part of a write: records to append, chained from Prev. A write
// carrying a non-empty AuditAppend succeeds only if the store's head is still Prev, and
// then advances the head to the last record in the same transaction. The zero value
// appends nothing and checks nothing.
type AuditAppend struct {
	Prev    AuditHead
	Records []AuditRecord
}

// Event is one fact a write establishes, for the audit log: the service hands the events
// of each write to its Auditor, which turns them into records.
type Event struct {
	// Type is the audit entry type (server_added, crawl_observed, version_recorded, ...).
	Type string
	// Actor and At say who and when.
	Actor string
	At    time.Time
	// Body is the event's JSON body (not yet canonical).
	Body json.RawMessage
}

// Auditor turns the events of one write into audit records chained from head (Seq
// head.Seq+1, ...). The audit package's Chainer signs them; a nil Auditor writes no audit records. Chain must be
// deterministic for given input and must not write anywhere: the service calls it again
// with the new head when the write loses a race.
type Auditor interface {
	Chain(ctx context.Context, head AuditHead, events []Event) ([]AuditRecord, error)
}

// EventSequencer appends events that accompany no other write (decision records) without
// taking the audit head: the store queues them and a sequencer chains, signs and
// integrates queued events in batches, one head update per batch (dynamostore's sequenced
// appends). AppendEvents returns nil only once the events are in the log, consecutive and
// in order; ErrInvalid (nothing queued) for events it refuses; ErrUnavailable when they
// could not be queued (nothing queued: retry); ErrQueued when they were queued but not
// yet sequenced (they will be: do not append them again).
type EventSequencer interface {
	AppendEvents(ctx context.Context, events []Event) error
}

// Event types written by this package.
const (
	EventServerAdded     = "server_added"
	EventCrawlObserved   = "crawl_observed"
	EventVersionRecorded = "version_recorded"
)
