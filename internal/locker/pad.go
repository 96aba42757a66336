package locker

import "log/slog"

// State is a pad's lifecycle state.
type State string

// Pad states. A pad starts open; seal makes it sealed; an open pad whose write window has
// passed becomes expired on its next access (lazy expiry). A sealed pad is never expired.
const (
	StateOpen    State = "open"
	StateSealed  State = "sealed"
	StateExpired State = "expired"
)

// Pad is a pad's metadata. WriteKeyHash is the only trace of the write key that is stored.
type Pad struct {
	ID           string
	WriteKeyHash string // lowercase hex sha256 of the write key
	State        State
	CreatedAt    int64 // unix seconds
	ExpiresAt    int64 // unix seconds; appends and seals are refused from this instant on
	SealedAt     int64 // unix seconds, 0 while not sealed
	MaxBlocks    int
	MaxBytes     int
	BlockCount   int
	TotalBytes   int
	HeadHash     string
}

// LogValue keeps the write-key hash out of logs.
func (p Pad) LogValue() slog.Value {
	return slog.GroupValue(slog.String("pad_id", p.ID), slog.String("state", string(p.State)),
		slog.Int("block_count", p.BlockCount))
}

// Block is one stored block of a pad.
type Block struct {
	PadID       string
	Seq         int
	PrevHash    string
	CurrHash    string
	ContentType string // the writer's Content-Type, stored verbatim and never verified
	Payload     []byte
	CreatedAt   int64
}

// TicketType is a read ticket's policy.
type TicketType string

// Ticket types. read_once is a legacy wire name for a lease: the first successful non-empty
// read opens a window of the configured lease length during which reads are unlimited.
// read_unlimited never expires.
const (
	TicketReadOnce      TicketType = "read_once"
	TicketReadUnlimited TicketType = "read_unlimited"
)

// Ticket is a stored read ticket. Only the SHA-256 of the ticket is stored (Hash); the ticket
// itself exists only in the response that minted it.
type Ticket struct {
	Hash           string
	PadID          string
	Type           TicketType
	RedeemedCount  int
	MaxReads       int   // always 1; kept for the wire's data model, never enforced
	LeaseStartedAt int64 // unix seconds, 0 until the first successful non-empty read
	CreatedAt      int64
}

// LogValue keeps the ticket hash out of logs.
func (t Ticket) LogValue() slog.Value {
	return slog.GroupValue(slog.String("pad_id", t.PadID), slog.String("type", string(t.Type)))
}

// Receipt is a redeemed payment: one per pad created in txid mode. TxHash is the replay key.
type Receipt struct {
	TxHash      string // 0x-prefixed, lowercase
	PadID       string
	AmountUnits string // decimal integer, token units
	Payer       string // lowercase 0x address
	CreatedAt   int64
}

// NewPad is everything create commits in one transaction: the pad, its first read ticket and,
// in txid mode, the payment receipt.
type NewPad struct {
	Pad     Pad
	Ticket  Ticket
	Receipt *Receipt
}

// PadCounts are the health endpoint's aggregates.
type PadCounts struct {
	Total    int // every pad
	Unsealed int // state open only
	Sealed   int
}

// StoreHealth is what a store reports about itself for /health.
type StoreHealth struct {
	Writable bool // the store accepts writes: not opened or mounted read-only, and its last write was not refused for lack of space or an I/O error
	WALMode  bool // SQLite: journal_mode is WAL. Stores without a SQLite journal (DynamoDB) report false
	Pads     PadCounts
}
