package locker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"sync"
	"time"
)

// DemoPadID is the permanent, public, read-only demo pad seeded on startup.
const DemoPadID = "demo-pad-v1"

// DemoWriteKey is the demo pad's published write key; writing with it gets 409 (sealed).
const DemoWriteKey = "demo-write-key"

// maxAttempts bounds how often a write that lost a check-and-set race is re-decided before
// the request is answered with a conflict.
const maxAttempts = 6

// Config configures a Service. The zero value of every optional field has a default.
type Config struct {
	// Store holds the pads. Required.
	Store Store
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Rand is the source of pad IDs, write keys and tickets. Default crypto/rand.Reader.
	Rand io.Reader
	// LeaseSeconds is the read_once lease window. Default DefaultLeaseSeconds.
	LeaseSeconds int
	// Logger receives warnings (never secrets). Default: discard.
	Logger *slog.Logger
	// ReadCacheEntries bounds the reads of sealed pads whose pad and ticket the Service
	// remembers instead of reading them from the store again (readcache.go). Default
	// DefaultReadCacheEntries; negative disables it.
	ReadCacheEntries int
}

// Service applies the Padlock rules over a Store. It is safe for concurrent use.
type Service struct {
	store Store
	now   func() time.Time
	rand  io.Reader
	lease int64
	log   *slog.Logger
	// stripes serialize writes to one pad inside this process, so concurrent appends queue
	// instead of losing check-and-set races; across processes the store's conditions decide.
	stripes [64]sync.Mutex
	reads   *readCache
}

// New returns a Service for cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("locker: Config.Store is required")
	}
	s := &Service{store: cfg.Store, now: cfg.Now, rand: cfg.Rand, lease: int64(cfg.LeaseSeconds), log: cfg.Logger,
		reads: newReadCache(cfg.ReadCacheEntries)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.lease <= 0 {
		s.lease = DefaultLeaseSeconds
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func (s *Service) lock(padID string) func() {
	h := fnv.New32a()
	h.Write([]byte(padID))
	m := &s.stripes[h.Sum32()%uint32(len(s.stripes))]
	m.Lock()
	return m.Unlock
}

// HashSecret returns the stored form of a write key or ticket: lowercase hex SHA-256.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateRequest are the parameters of a new pad.
type CreateRequest struct {
	TTLSeconds int64
	MaxBlocks  int64
}

// DefaultCreateRequest is what an empty JSON object asks for.
func DefaultCreateRequest() CreateRequest {
	return CreateRequest{TTLSeconds: DefaultTTLSeconds, MaxBlocks: DefaultMaxBlocks}
}

// Validate refuses out-of-range parameters with ErrInvalidBody.
func (r CreateRequest) Validate() error {
	if r.TTLSeconds <= 0 || r.TTLSeconds > MaxTTLSeconds || r.MaxBlocks <= 0 || r.MaxBlocks > MaxMaxBlocks {
		return ErrInvalidBody
	}
	return nil
}

// Created carries a new pad's capabilities. They are returned once and never stored.
type Created struct {
	PadID      string
	WriteKey   string
	ReadTicket string
}

// LogValue keeps capabilities out of logs.
func (c Created) LogValue() slog.Value { return slog.StringValue("pad " + c.PadID) }

// Create makes a pad and its first (read_once) ticket in one store transaction, with the
// payment receipt when one is given (its PadID is filled in here). ErrRedeemed (wrapped) when
// the receipt was redeemed already.
func (s *Service) Create(ctx context.Context, req CreateRequest, receipt *Receipt) (Created, error) {
	if err := req.Validate(); err != nil {
		return Created{}, err
	}
	now := s.now().Unix()
	for attempt := 0; ; attempt++ {
		var idb [16]byte
		if _, err := io.ReadFull(s.rand, idb[:]); err != nil {
			return Created{}, fmt.Errorf("create pad: read random: %w", err)
		}
		idb[6] = idb[6]&0x0f | 0x40 // a version-4 UUID, as the peer's uuid4().hex
		idb[8] = idb[8]&0x3f | 0x80
		wk, err := s.token()
		if err != nil {
			return Created{}, err
		}
		tk, err := s.token()
		if err != nil {
			return Created{}, err
		}
		c := Created{PadID: hex.EncodeToString(idb[:]), WriteKey: wk, ReadTicket: tk}
		np := NewPad{
			Pad: Pad{ID: c.PadID, WriteKeyHash: HashSecret(wk), State: StateOpen, CreatedAt: now,
				ExpiresAt: now + req.TTLSeconds, MaxBlocks: int(req.MaxBlocks), MaxBytes: MaxPadBytes, HeadHash: GenesisHash},
			Ticket: Ticket{Hash: HashSecret(tk), PadID: c.PadID, Type: TicketReadOnce, MaxReads: 1, CreatedAt: now},
		}
		if receipt != nil {
			r := *receipt
			r.PadID, r.CreatedAt = c.PadID, now
			np.Receipt = &r
		}
		err = s.store.CreatePad(ctx, np)
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, ErrConflict) && attempt < 2: // a 128-bit ID collision: draw again
			continue
		case errors.Is(err, ErrRedeemed):
			return Created{}, err
		default:
			return Created{}, s.storeErr("create pad", err)
		}
	}
}

func (s *Service) token() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// storeErr turns a store failure into ErrUnavailable for retryable causes and an internal
// error otherwise; the cause is kept for the log, never shown to clients.
func (s *Service) storeErr(op string, err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, Unavailable(err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Unavailable reports a store failure as the KindUnavailable refusal ([AsError]: retry
// later), keeping cause for the log only.
func Unavailable(cause error) error { return &unavailableError{cause} }

type unavailableError struct{ cause error }

func (e *unavailableError) Error() string { return errUnavailable.Detail + ": " + e.cause.Error() }
func (e *unavailableError) Unwrap() error { return e.cause }

// AsError returns the refusal err carries, if any. Store unavailability is reported as a
// KindUnavailable refusal; any other error is internal (nil, false).
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var u *unavailableError
	if errors.As(err, &u) {
		return errUnavailable, true
	}
	return nil, false
}

// pad reads a pad. The demo pad is seeded when a read finds it missing (a store whose owner
// did not seed it at start, as the pads Lambda does not): the public demo is there whenever
// it is asked for, and costs nothing while it exists.
func (s *Service) pad(ctx context.Context, id string) (Pad, error) {
	p, err := s.store.Pad(ctx, id)
	if errors.Is(err, ErrNotFound) && id == DemoPadID {
		if err := SeedDemo(ctx, s.store, s.now); err != nil {
			return Pad{}, s.storeErr("seed demo pad", err)
		}
		p, err = s.store.Pad(ctx, id)
	}
	if errors.Is(err, ErrNotFound) {
		return Pad{}, errPadNotFound
	}
	if err != nil {
		return Pad{}, s.storeErr("read pad", err)
	}
	return p, nil
}

// padAndTicket reads a pad and, unless it is the demo pad, the read ticket presented for
// it, with the refusals in this order: an unknown pad, a missing ticket, an unknown
// ticket. A store that reads both at once (PadTicketReader) is asked once; a pair the
// read cache remembers is not read at all (remembered).
func (s *Service) padAndTicket(ctx context.Context, padID, ticket string) (p Pad, t Ticket, remembered bool, err error) {
	if padID == DemoPadID {
		p, err = s.pad(ctx, padID)
		return p, Ticket{}, false, err
	}
	var th string
	if ticket != "" {
		th = HashSecret(ticket)
		if e, ok := s.reads.get(padID, th); ok {
			return e.pad, e.ticket, true, nil
		}
	}
	if both, ok := s.store.(PadTicketReader); ok && ticket != "" {
		var tp *Ticket
		p, tp, err = both.PadAndTicket(ctx, padID, th)
		switch {
		case errors.Is(err, ErrNotFound):
			return Pad{}, Ticket{}, false, errPadNotFound
		case err != nil:
			return Pad{}, Ticket{}, false, s.storeErr("read pad and ticket", err)
		case tp == nil:
			return Pad{}, Ticket{}, false, errInvalidTicket
		}
		return p, *tp, false, nil
	}
	if p, err = s.pad(ctx, padID); err != nil {
		return Pad{}, Ticket{}, false, err
	}
	if ticket == "" {
		return Pad{}, Ticket{}, false, errMissingTicket
	}
	t, err = s.store.Ticket(ctx, th)
	if errors.Is(err, ErrNotFound) {
		return Pad{}, Ticket{}, false, errInvalidTicket
	}
	if err != nil {
		return Pad{}, Ticket{}, false, s.storeErr("read ticket", err)
	}
	return p, t, false, nil
}

func (s *Service) expire(ctx context.Context, p Pad, now int64) (Pad, error) {
	if p.State == StateOpen && p.ExpiresAt <= now {
		if err := s.store.Expire(ctx, p.ID); err != nil {
			return p, s.storeErr("expire pad", err)
		}
		p.State = StateExpired
	}
	return p, nil
}

func checkWriteKey(p Pad, key string, present bool) error {
	if !present || key == "" {
		return errInvalidWriteKey
	}
	if subtle.ConstantTimeCompare([]byte(HashSecret(key)), []byte(p.WriteKeyHash)) != 1 {
		return errInvalidWriteKey
	}
	return nil
}

func writable(p Pad) error {
	switch p.State {
	case StateOpen:
		return nil
	case StateSealed:
		return errSealed
	default:
		return errExpired
	}
}

// Ack is an append's acknowledgment.
type Ack struct {
	PadID    string
	Seq      int
	CurrHash string
}

// Append adds payload as the pad's next block. Checks run in the contract's order: unknown pad,
// write key, lazy expiry, state, empty payload, size, block quota, byte quota, block-0
// envelope. The caller has already refused bodies over MaxBlockBytes while reading them.
func (s *Service) Append(ctx context.Context, padID, writeKey string, hasKey bool, contentType string, payload []byte) (Ack, error) {
	defer s.lock(padID)()
	for attempt := 1; ; attempt++ {
		p, err := s.pad(ctx, padID)
		if err != nil {
			return Ack{}, err
		}
		if err := checkWriteKey(p, writeKey, hasKey); err != nil {
			return Ack{}, err
		}
		now := s.now().Unix()
		if p, err = s.expire(ctx, p, now); err != nil {
			return Ack{}, err
		}
		if err := writable(p); err != nil {
			return Ack{}, err
		}
		if len(payload) == 0 {
			return Ack{}, errEmptyPayload
		}
		if len(payload) > MaxBlockBytes {
			return Ack{}, ErrBlockTooLarge
		}
		if p.BlockCount >= p.MaxBlocks {
			return Ack{}, errBlockQuota
		}
		if p.TotalBytes+len(payload) > p.MaxBytes {
			return Ack{}, errByteQuota
		}
		if p.BlockCount == 0 {
			if reason := EnvelopeError(payload); reason != "" {
				return Ack{}, refuse(KindBadRequest, "block 0 invalid envelope: %s", reason)
			}
		}
		b := Block{PadID: padID, Seq: p.BlockCount, PrevHash: p.HeadHash, CurrHash: NextHash(p.HeadHash, payload),
			ContentType: contentType, Payload: payload, CreatedAt: now}
		err = s.store.AppendBlock(ctx, b)
		if err == nil {
			return Ack{PadID: padID, Seq: b.Seq, CurrHash: b.CurrHash}, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Ack{}, s.storeErr("append block", err)
		}
		// Another writer (another process) moved the pad on: decide again from a fresh read.
		if attempt == maxAttempts {
			return Ack{}, errBusy
		}
		if err := s.backoff(ctx, attempt); err != nil {
			return Ack{}, err
		}
	}
}

func (s *Service) backoff(ctx context.Context, attempt int) error {
	return Backoff(ctx, 5*time.Millisecond, attempt)
}

// Backoff waits a random time below base<<attempt (exponential, with full jitter) before
// another attempt of a write that lost a race, or until ctx is done and returns its error.
func Backoff(ctx context.Context, base time.Duration, attempt int) error {
	d := time.Duration(mrand.Int64N(int64(base) << attempt))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Sealed is a seal's result.
type Sealed struct {
	PadID    string
	State    State
	SealedAt int64
	HeadHash string
}

// Seal freezes the pad after auditing its stored chain. A pad whose chain or accounting is
// inconsistent is refused (KindInconsistent) and left exactly as it is — never repaired.
func (s *Service) Seal(ctx context.Context, padID, writeKey string, hasKey bool) (Sealed, error) {
	defer s.lock(padID)()
	for attempt := 1; ; attempt++ {
		p, err := s.pad(ctx, padID)
		if err != nil {
			return Sealed{}, err
		}
		if err := checkWriteKey(p, writeKey, hasKey); err != nil {
			return Sealed{}, err
		}
		now := s.now().Unix()
		if p, err = s.expire(ctx, p, now); err != nil {
			return Sealed{}, err
		}
		if err := writable(p); err != nil {
			return Sealed{}, err
		}
		blocks, err := s.store.Blocks(ctx, padID, 0, math.MaxInt32)
		if err != nil {
			return Sealed{}, s.storeErr("read blocks", err)
		}
		if problems := Audit(p, blocks); len(problems) > 0 {
			s.log.WarnContext(ctx, "seal refused: inconsistent pad", slog.String("pad_id", padID), slog.Int("problems", len(problems)))
			return Sealed{}, &Error{KindInconsistent, auditDetail(problems)}
		}
		err = s.store.Seal(ctx, padID, p.BlockCount, p.HeadHash, now)
		if err == nil {
			return Sealed{PadID: padID, State: StateSealed, SealedAt: now, HeadHash: p.HeadHash}, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Sealed{}, s.storeErr("seal pad", err)
		}
		if attempt == maxAttempts {
			return Sealed{}, errBusy
		}
		if err := s.backoff(ctx, attempt); err != nil {
			return Sealed{}, err
		}
	}
}

// ParseTicketType checks a requested ticket type. The refusal quotes the value as the peer
// does (a Python repr).
func ParseTicketType(v any) (TicketType, error) {
	if str, ok := v.(string); ok {
		switch t := TicketType(str); t {
		case TicketReadOnce, TicketReadUnlimited:
			return t, nil
		}
		return "", refuse(KindUnprocessable, "type must be 'read_once' or 'read_unlimited', got %s", pyRepr(str))
	}
	return "", ErrInvalidBody
}

// MintedTicket is a new ticket; the ticket itself is never stored.
type MintedTicket struct {
	PadID  string
	Ticket string
	Type   TicketType
}

// LogValue keeps the ticket out of logs.
func (m MintedTicket) LogValue() slog.Value { return slog.StringValue("ticket for pad " + m.PadID) }

// MintTicket adds a read ticket to a pad. It works on sealed and expired pads alike.
func (s *Service) MintTicket(ctx context.Context, padID, writeKey string, hasKey bool, typ TicketType) (MintedTicket, error) {
	p, err := s.pad(ctx, padID)
	if err != nil {
		return MintedTicket{}, err
	}
	if err := checkWriteKey(p, writeKey, hasKey); err != nil {
		return MintedTicket{}, err
	}
	tk, err := s.token()
	if err != nil {
		return MintedTicket{}, err
	}
	t := Ticket{Hash: HashSecret(tk), PadID: padID, Type: typ, MaxReads: 1, CreatedAt: s.now().Unix()}
	if err := s.store.PutTicket(ctx, t); err != nil {
		return MintedTicket{}, s.storeErr("put ticket", err)
	}
	return MintedTicket{PadID: padID, Ticket: tk, Type: typ}, nil
}

// Manifest returns a pad's metadata (free: no ticket, no lease). Lazy expiry applies.
func (s *Service) Manifest(ctx context.Context, padID string) (Pad, error) {
	p, err := s.pad(ctx, padID)
	if err != nil {
		return Pad{}, err
	}
	return s.expire(ctx, p, s.now().Unix())
}

// Slice is the result of a blocks read.
type Slice struct {
	PadID       string
	From, To    int
	TotalBlocks int
	Blocks      []Block
	// Reused is set when ReadOptions.Reuse answered for the blocks: Blocks is nil.
	Reused bool
	// Pad is the pad record the read was decided on (after lazy expiry): its manifest
	// describes exactly these blocks.
	Pad Pad
}

// ReadOptions adjust a blocks read for a transport that serves a whole pad at once.
type ReadOptions struct {
	// Whole lifts the slice caps (MaxSliceBlocks, MaxSliceBytes): the pad's own quotas
	// bound what is read.
	Whole bool
	// Reuse, when set, is asked for a read of a whole pad (from 0 to its last block), with
	// the pad record the read is decided on, whether the caller already holds that pad's
	// blocks: a pad's blocks up to a head never change (the head commits to every one of
	// them), in any state. When it answers true the blocks are not read from the store
	// (Slice.Reused); every check, and the read_once lease, apply as for any read.
	Reuse func(p Pad) bool
	// Check, when set, is the transport's own limit on the blocks read from the store: an
	// error it returns refuses the read before the read is recorded (no lease opens).
	Check func(blocks []Block) error
}

// ReadBlocks returns blocks from..to (inclusive; without hasTo, up to the last block) of a pad for
// the holder of a read ticket (none needed for the demo pad). Empty results, refusals and
// oversized slices do not open a read_once lease; a successful non-empty read does.
func (s *Service) ReadBlocks(ctx context.Context, padID, ticket string, from, to int, hasTo bool) (Slice, error) {
	return s.ReadBlocksWith(ctx, padID, ticket, from, to, hasTo, ReadOptions{})
}

// ReadBlocksWith is ReadBlocks adjusted by opt.
func (s *Service) ReadBlocksWith(ctx context.Context, padID, ticket string, from, to int, hasTo bool, opt ReadOptions) (Slice, error) {
	p, t, remembered, err := s.padAndTicket(ctx, padID, ticket)
	if err != nil {
		return Slice{}, err
	}
	now := s.now().Unix()
	if padID != DemoPadID {
		if subtle.ConstantTimeCompare([]byte(t.PadID), []byte(padID)) != 1 {
			return Slice{}, errInvalidTicket
		}
		if s.leaseOver(t, now) {
			return Slice{}, errLeaseExpired
		}
	}
	if p, err = s.expire(ctx, p, now); err != nil {
		return Slice{}, err
	}
	total := p.BlockCount
	empty := Slice{PadID: padID, From: from, To: from, TotalBlocks: total, Blocks: []Block{}, Pad: p}
	if total == 0 {
		return empty, nil
	}
	if from < 0 || (hasTo && to < from) {
		return Slice{}, errRange
	}
	if from >= total {
		return empty, nil
	}
	if !hasTo || to > total-1 {
		to = total - 1
	}
	if !opt.Whole && to-from+1 > MaxSliceBlocks {
		return Slice{}, refuse(KindTooLarge, "slice exceeds %d blocks; narrow from/to", MaxSliceBlocks)
	}
	var blocks []Block
	reused := from == 0 && to == total-1 && opt.Reuse != nil && opt.Reuse(p)
	if !reused {
		if blocks, err = s.store.Blocks(ctx, padID, from, to); err != nil {
			return Slice{}, s.storeErr("read blocks", err)
		}
		size := 0
		for _, b := range blocks {
			size += len(b.Payload)
		}
		if !opt.Whole && size > MaxSliceBytes {
			return Slice{}, refuse(KindTooLarge, "slice payload exceeds %d bytes; narrow from/to", MaxSliceBytes)
		}
		if opt.Check != nil {
			if err := opt.Check(blocks); err != nil {
				return Slice{}, err
			}
		}
	}
	// Only the read that opens a lease writes; later reads inside the window are pure reads,
	// so reading never costs a durable write per page.
	if padID != DemoPadID && t.Type == TicketReadOnce && t.LeaseStartedAt == 0 && (reused || len(blocks) > 0) {
		if _, err := s.store.RecordRead(ctx, t.Hash, now); err != nil {
			return Slice{}, s.storeErr("record read", err)
		}
	}
	if !remembered {
		s.reads.put(p, t)
	}
	return Slice{PadID: padID, From: from, To: to, TotalBlocks: total, Blocks: blocks, Reused: reused, Pad: p}, nil
}

func (s *Service) leaseOver(t Ticket, now int64) bool {
	return t.Type == TicketReadOnce && t.LeaseStartedAt != 0 && now-t.LeaseStartedAt > s.lease
}

// Health reports the store's state for /health.
func (s *Service) Health(ctx context.Context) (StoreHealth, error) {
	return s.store.Health(ctx)
}
