package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

var _ locker.Store = (*PadStore)(nil)

// API is the part of *dynamodb.Client the pads driver calls. Tests substitute fakes that
// return the SDK's own error types.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// FormatVersion is the data-model version stored in the table's SCHEMA item. New refuses a
// table that records another version.
const FormatVersion = "pads/1"

// Config configures New.
type Config struct {
	// Client is the DynamoDB client (dynamodb.NewFromConfig). Required. The caller builds it,
	// so endpoints (moto, LocalStack), retries and middlewares are theirs to choose.
	Client API
	// Table is the pads table's name (template.yaml PadsTable; PADS_TABLE in the Lambda).
	// Required.
	Table string
	// CounterShards is how many items hold the /health pad counters. Default 16. It may be
	// changed at any time: Health sums every shard that exists.
	CounterShards int
	// MaxTxAttempts bounds how often a create, seal or expire is re-sent when DynamoDB
	// cancelled it only for a TransactionConflict on a counter shard (nothing was written),
	// each time on another shard after a jittered pause. Default 4.
	MaxTxAttempts int
	// Rand is the source of write IDs (idempotency tokens). Default crypto/rand.Reader.
	Rand io.Reader
	// Logger receives warnings. Default: discard.
	Logger *slog.Logger
	// Initialize, when set, fills a new table: it runs when the first use of the store finds
	// no format marker, on a view of the store that skips the marker check, and the marker
	// is written only after it succeeded, so an initialisation cut short is finished by the
	// next first use. It must be idempotent and safe to run from several processes at once.
	// The pads Lambda seeds the demo pad here (locker.SeedDemo).
	Initialize func(ctx context.Context, st locker.Store) error
}

// LogValue shows the table, never credentials (there are none here).
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("table", c.Table), slog.Int("counter_shards", c.CounterShards))
}

// PadStore is the DynamoDB implementation of locker.Store. It is safe for concurrent use.
type PadStore struct {
	db       API
	table    *string
	shards   int
	attempts int
	rand     io.Reader
	log      *slog.Logger
	init     func(context.Context, locker.Store) error
	// format is the once-per-store check of the table's format marker; nil in the view
	// that Initialize receives (the check is under way when it runs).
	format *formatCheck
}

// formatCheck remembers that the table's format marker was found right. Only a success is
// remembered: a failed check (throttling, a table of another version) is tried again by
// the next call. sem lets one caller check at a time, the others waiting within their ctx.
type formatCheck struct {
	ok  atomic.Bool
	sem chan struct{}
}

// New returns a PadStore for cfg. It makes no call: the table's format marker is checked
// by the store's first call that reaches DynamoDB (README.md, "Format marker"), so a
// Lambda cold start that builds the store costs no AWS call.
func New(cfg Config) (*PadStore, error) {
	if cfg.Client == nil {
		return nil, errors.New("dynamostore: Config.Client is required")
	}
	if cfg.Table == "" {
		return nil, errors.New("dynamostore: Config.Table is required")
	}
	s := &PadStore{db: cfg.Client, table: aws.String(cfg.Table), shards: cfg.CounterShards, attempts: cfg.MaxTxAttempts,
		rand: cfg.Rand, log: cfg.Logger, init: cfg.Initialize, format: &formatCheck{sem: make(chan struct{}, 1)}}
	if s.shards <= 0 {
		s.shards = 16
	}
	if s.attempts <= 0 {
		s.attempts = 4
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// ready checks the table's format marker once per store, before the first call that
// reaches DynamoDB: one strongly consistent GetItem; on a new table, Initialize and then a
// conditional PutItem of the marker. Concurrent first calls wait for one check. An error
// keeps only the sentinels a caller may act on (unavailable: retry later; ctx), never one
// from inside the initialisation that could pass for the caller's own answer.
func (s *PadStore) ready(ctx context.Context) error {
	f := s.format
	if f == nil || f.ok.Load() {
		return nil
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("dynamostore: table %s: waiting for the format check: %w", *s.table, ctx.Err())
	}
	defer func() { <-f.sem }()
	if f.ok.Load() {
		return nil
	}
	err := s.checkFormat(ctx)
	if err == nil {
		f.ok.Store(true)
		return nil
	}
	for _, sentinel := range []error{locker.ErrUnavailable, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("dynamostore: table %s not ready: %w: %v", *s.table, sentinel, err)
		}
	}
	return fmt.Errorf("dynamostore: table %s not ready: %v", *s.table, err)
}

// unchecked is the store without the format check, for Initialize.
func (s *PadStore) unchecked() *PadStore {
	u := *s
	u.format = nil
	return &u
}

// Keys and attribute names (README.md, "Data model").
const (
	attrPK          = "pk"
	attrSK          = "sk"
	skMeta          = "META"
	pkStats         = "STATS"
	pkSchema        = "SCHEMA"
	blockKeyDigits  = 9
	maxKeySeq       = 999999999
	maxIDLen        = 256 // no pad ID or ticket hash is longer; longer input is simply unknown
	maxQueryPages   = 256 // a pad holds at most 256 KiB of payload: one or two pages in practice
	version         = "version"
	aState          = "state"
	aWriteKeyHash   = "write_key_hash"
	aCreatedAt      = "created_at"
	aExpiresAt      = "expires_at"
	aSealedAt       = "sealed_at"
	aMaxBlocks      = "max_blocks"
	aMaxBytes       = "max_bytes"
	aBytesLeft      = "bytes_left"
	aBlockCount     = "block_count"
	aTotalBytes     = "total_bytes"
	aHeadHash       = "head_hash"
	aWriteID        = "wid"
	aSeq            = "seq"
	aPrevHash       = "prev_hash"
	aCurrHash       = "curr_hash"
	aContentType    = "content_type"
	aPayload        = "payload"
	aPadID          = "pad_id"
	aType           = "type"
	aRedeemedCount  = "redeemed_count"
	aMaxReads       = "max_reads"
	aLeaseStartedAt = "lease_started_at"
	aAmountUnits    = "amount_units"
	aPayer          = "payer"
	aTotal          = "total"
	aOpen           = "open"
	aSealed         = "sealed"
)

func padPK(id string) string      { return "PAD#" + id }
func blockSK(seq int) string      { return fmt.Sprintf("BLK#%0*d", blockKeyDigits, seq) }
func ticketPK(hash string) string { return "TKT#" + hash }
func receiptPK(tx string) string  { return "RCPT#" + tx }
func shardSK(n int) string        { return fmt.Sprintf("SHARD#%03d", n) }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

func metaKey(id string) map[string]types.AttributeValue { return key(padPK(id), skMeta) }

// validID reports whether id can name a stored pad or ticket: DynamoDB refuses keys that are
// not UTF-8 or too long with a ValidationException, which would surface as a 500.
func validID(id string) bool { return id != "" && len(id) <= maxIDLen && utf8.ValidString(id) }

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// writeID returns a fresh random write ID: stored in META by every write, and the
// transaction's ClientRequestToken, so a retried write can recognise itself.
func (s *PadStore) writeID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (s *PadStore) shard() int { return mrand.IntN(s.shards) }

func (s *PadStore) checkFormat(ctx context.Context) error {
	k := key(pkSchema, pkSchema)
	for attempt := 0; attempt < 3; attempt++ {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return classify("read format marker", err)
		}
		if out.Item != nil {
			if v := getS(out.Item, version); v != FormatVersion {
				return fmt.Errorf("the table records data-model version %q; this build understands %q", v, FormatVersion)
			}
			return nil
		}
		// A new table: fill it first, so that a marker means an initialised table.
		if s.init != nil {
			if err := s.init(ctx, s.unchecked()); err != nil {
				return fmt.Errorf("initialise table: %w", err)
			}
		}
		item := key(pkSchema, pkSchema)
		item[version] = str(FormatVersion)
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: item,
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		var ccf *types.ConditionalCheckFailedException
		if err == nil {
			return nil
		}
		if !errors.As(err, &ccf) {
			return classify("write format marker", err)
		}
		// Another process wrote it first: read it again.
	}
	return errors.New("format marker: could not be read or written")
}

// CreatePad implements locker.Store: one TransactWriteItems that puts META, the ticket and
// the receipt, each only if absent, and adds the pad to a counter shard.
func (s *PadStore) CreatePad(ctx context.Context, np locker.NewPad) error {
	p := np.Pad
	if !validID(p.ID) {
		return fmt.Errorf("create pad: invalid pad ID")
	}
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("create pad: %w", err)
	}
	wid, err := s.writeID()
	if err != nil {
		return fmt.Errorf("create pad: %w", err)
	}
	meta := metaKey(p.ID)
	meta[aState] = str(string(p.State))
	meta[aWriteKeyHash] = str(p.WriteKeyHash)
	meta[aCreatedAt] = num(p.CreatedAt)
	meta[aExpiresAt] = num(p.ExpiresAt)
	meta[aSealedAt] = num(p.SealedAt)
	meta[aMaxBlocks] = num(int64(p.MaxBlocks))
	meta[aMaxBytes] = num(int64(p.MaxBytes))
	meta[aBytesLeft] = num(int64(p.MaxBytes - p.TotalBytes))
	meta[aBlockCount] = num(int64(p.BlockCount))
	meta[aTotalBytes] = num(int64(p.TotalBytes))
	meta[aHeadHash] = str(p.HeadHash)
	meta[aWriteID] = str(wid)
	ifAbsent := aws.String("attribute_not_exists(pk)")
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: s.table, Item: meta, ConditionExpression: ifAbsent,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}}
	ticketAt, receiptAt := -1, -1
	if t := np.Ticket; t.Hash != "" {
		ticketAt = len(items)
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: s.table, Item: ticketItem(t, p.ID), ConditionExpression: ifAbsent}})
	}
	if r := np.Receipt; r != nil {
		receiptAt = len(items)
		item := key(receiptPK(r.TxHash), "RCPT")
		item[aPadID] = str(p.ID)
		item[aAmountUnits] = str(r.AmountUnits)
		item[aPayer] = str(r.Payer)
		item[aCreatedAt] = num(r.CreatedAt)
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: s.table, Item: item, ConditionExpression: ifAbsent}})
	}
	counted := aOpen
	if p.State == locker.StateSealed {
		counted = aSealed
	} else if p.State != locker.StateOpen {
		counted = ""
	}
	return s.transact(ctx, "create pad", wid, items, func() types.TransactWriteItem {
		return s.counterUpdate(map[string]int64{aTotal: 1, counted: 1})
	}, locker.ErrUnavailable, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failed(reasons, 0) && ownWrite(reasons[0].Item, wid):
			return true, nil // an earlier attempt of this very create committed
		case failed(reasons, 0):
			return false, fmt.Errorf("create pad: pad exists: %w", locker.ErrConflict)
		case failed(reasons, ticketAt):
			return false, fmt.Errorf("create pad: ticket exists: %w", locker.ErrConflict)
		case failed(reasons, receiptAt):
			return false, fmt.Errorf("create pad: %w", locker.ErrRedeemed)
		}
		return false, nil
	})
}

func ticketItem(t locker.Ticket, padID string) map[string]types.AttributeValue {
	item := key(ticketPK(t.Hash), "TKT")
	item[aPadID] = str(padID)
	item[aType] = str(string(t.Type))
	item[aRedeemedCount] = num(int64(t.RedeemedCount))
	item[aMaxReads] = num(int64(t.MaxReads))
	item[aCreatedAt] = num(t.CreatedAt)
	if t.LeaseStartedAt != 0 {
		item[aLeaseStartedAt] = num(t.LeaseStartedAt)
	}
	return item
}

// counterUpdate adds deltas to a randomly chosen counter shard. Spreading the counters keeps
// concurrent creates and seals from conflicting on one hot item.
func (s *PadStore) counterUpdate(deltas map[string]int64) types.TransactWriteItem {
	expr := "ADD"
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	i := 0
	for _, a := range []string{aTotal, aOpen, aSealed} {
		d, ok := deltas[a]
		if !ok || d == 0 {
			continue
		}
		if i > 0 {
			expr += ","
		}
		expr += fmt.Sprintf(" #c%d :c%d", i, i)
		names[fmt.Sprintf("#c%d", i)] = a
		values[fmt.Sprintf(":c%d", i)] = num(d)
		i++
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: s.table, Key: key(pkStats, shardSK(s.shard())),
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names, ExpressionAttributeValues: values}}
}

// failed reports whether item i of a cancelled transaction failed its condition.
func failed(reasons []types.CancellationReason, i int) bool {
	return i >= 0 && i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

func reasonCode(reasons []types.CancellationReason, i int) string {
	if i < 0 || i >= len(reasons) {
		return ""
	}
	return aws.ToString(reasons[i].Code)
}

// ownWrite reports whether the META item returned with a failed condition carries our write
// ID: then an earlier attempt of this same write (whose response was lost, retried by the
// SDK) committed it, and the write succeeded. DynamoDB's ClientRequestToken gives the same
// answer for ten minutes; this check also holds on emulators that ignore the token.
func ownWrite(item map[string]types.AttributeValue, wid string) bool {
	return item != nil && getS(item, aWriteID) == wid
}

// cancelled is how a write reads a cancelled transaction: done when the reasons prove the
// write committed (an earlier attempt of it did), err for a refusal, neither when the
// remaining reason codes decide.
type cancelled func(reasons []types.CancellationReason) (done bool, err error)

// transact sends items (plus, when counter is non-nil, one counter-shard update as the last
// item) as one TransactWriteItems whose ClientRequestToken is derived from wid. A cancellation
// is handed to onCancel. One caused only by TransactionConflict on the counter shard wrote
// nothing, so the transaction is re-sent on another shard after a jittered pause, at most
// s.attempts times in all. Any other TransactionConflict is reported as raced (ErrConflict
// for writes whose callers re-read and decide again, ErrUnavailable for the others).
func (s *PadStore) transact(ctx context.Context, op, wid string, items []types.TransactWriteItem,
	counter func() types.TransactWriteItem, raced error, onCancel cancelled) error {
	for attempt := 1; ; attempt++ {
		all := items
		if counter != nil {
			all = append(append([]types.TransactWriteItem(nil), items...), counter())
		}
		// One token per attempt: the SDK's own retries of this attempt reuse it, and DynamoDB
		// answers a duplicate of a committed transaction with success for ten minutes. A
		// re-send on another shard is a different request, so it needs another token; the
		// write ID stored in META still recognises it.
		token := wid + "-" + strconv.Itoa(attempt)
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all, ClientRequestToken: aws.String(token)})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return classify(op, err)
		}
		reasons := tce.CancellationReasons
		done, rerr := onCancel(reasons)
		if rerr != nil {
			return rerr
		}
		if done {
			return nil
		}
		code := cancelCode(reasons)
		if code == "TransactionConflict" && counter != nil && onlyConflictAt(reasons, len(items)) {
			if attempt < s.attempts {
				if err := locker.Backoff(ctx, 10*time.Millisecond, attempt); err != nil {
					return classify(op, err)
				}
				continue
			}
			return fmt.Errorf("%s: counter shards busy after %d attempts: %w: %v", op, attempt, locker.ErrUnavailable, err)
		}
		if code == "TransactionConflict" {
			return fmt.Errorf("%s: another transaction was writing the same item: %w", op, raced)
		}
		return cancelErr(op, code, err)
	}
}

// cancelCode returns the first reason code other than None and ConditionalCheckFailed.
func cancelCode(reasons []types.CancellationReason) string {
	for i := range reasons {
		switch c := reasonCode(reasons, i); c {
		case "", "None", "ConditionalCheckFailed":
		default:
			return c
		}
	}
	return ""
}

// onlyConflictAt reports whether item i is the only one that did not pass, with a conflict.
func onlyConflictAt(reasons []types.CancellationReason, i int) bool {
	for j := range reasons {
		c := reasonCode(reasons, j)
		if j == i {
			if c != "TransactionConflict" {
				return false
			}
		} else if c != "" && c != "None" {
			return false
		}
	}
	return true
}

// cancelErr maps a cancellation reason that is not a failed condition. Nothing was written.
func cancelErr(op, code string, err error) error {
	switch code {
	case "ProvisionedThroughputExceeded", "ThrottlingError", "RequestLimitExceeded", "InternalServerError", "TransactionInProgress":
		return fmt.Errorf("%s: %w: %v", op, locker.ErrUnavailable, err)
	case "":
		return fmt.Errorf("%s: transaction cancelled without a reason: %v", op, err)
	}
	return fmt.Errorf("%s: transaction cancelled (%s): %v", op, code, err)
}

// Pad implements locker.Store with one strongly consistent GetItem.
func (s *PadStore) Pad(ctx context.Context, id string) (locker.Pad, error) {
	if !validID(id) {
		return locker.Pad{}, fmt.Errorf("pad: %w", locker.ErrNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return locker.Pad{}, fmt.Errorf("read pad: %w", err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: metaKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return locker.Pad{}, classify("read pad", err)
	}
	if out.Item == nil {
		return locker.Pad{}, fmt.Errorf("pad: %w", locker.ErrNotFound)
	}
	return decodePad(id, out.Item)
}

func decodePad(id string, item map[string]types.AttributeValue) (locker.Pad, error) {
	d := decoder{item: item}
	p := locker.Pad{ID: id, WriteKeyHash: d.s(aWriteKeyHash), State: locker.State(d.s(aState)), CreatedAt: d.n(aCreatedAt),
		ExpiresAt: d.n(aExpiresAt), SealedAt: d.n(aSealedAt), MaxBlocks: int(d.n(aMaxBlocks)), MaxBytes: int(d.n(aMaxBytes)),
		BlockCount: int(d.n(aBlockCount)), TotalBytes: int(d.n(aTotalBytes)), HeadHash: d.s(aHeadHash)}
	if d.err != nil {
		return locker.Pad{}, fmt.Errorf("read pad %s: %w", id, d.err)
	}
	return p, nil
}

// AppendBlock implements locker.Store: one TransactWriteItems that advances META only if it
// is exactly as the caller read it and puts the block only if absent.
func (s *PadStore) AppendBlock(ctx context.Context, b locker.Block) error {
	if !validID(b.PadID) {
		return fmt.Errorf("append block: %w", locker.ErrNotFound)
	}
	if b.Seq < 0 || b.Seq > maxKeySeq {
		return fmt.Errorf("append block: seq %d: %w", b.Seq, locker.ErrConflict)
	}
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("append block: %w", err)
	}
	wid, err := s.writeID()
	if err != nil {
		return fmt.Errorf("append block: %w", err)
	}
	n := int64(len(b.Payload))
	update := types.TransactWriteItem{Update: &types.Update{TableName: s.table, Key: metaKey(b.PadID),
		UpdateExpression: aws.String("SET block_count = block_count + :one, total_bytes = total_bytes + :n, " +
			"bytes_left = bytes_left - :n, head_hash = :curr, wid = :wid"),
		// DynamoDB conditions have no arithmetic, so the byte quota is kept as bytes_left.
		ConditionExpression: aws.String("block_count = :seq AND head_hash = :prev AND #state = :open AND " +
			"expires_at > :now AND block_count < max_blocks AND bytes_left >= :n"),
		ExpressionAttributeNames: map[string]string{"#state": aState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":n": num(n), ":curr": str(b.CurrHash),
			":wid": str(wid), ":seq": num(int64(b.Seq)), ":prev": str(b.PrevHash), ":open": str(string(locker.StateOpen)),
			":now": num(b.CreatedAt)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
	block := key(padPK(b.PadID), blockSK(b.Seq))
	block[aSeq] = num(int64(b.Seq))
	block[aPrevHash] = str(b.PrevHash)
	block[aCurrHash] = str(b.CurrHash)
	block[aContentType] = str(b.ContentType)
	block[aPayload] = &types.AttributeValueMemberB{Value: b.Payload}
	block[aCreatedAt] = num(b.CreatedAt)
	block[aWriteID] = str(wid)
	put := types.TransactWriteItem{Put: &types.Put{TableName: s.table, Item: block, ConditionExpression: aws.String("attribute_not_exists(pk)")}}
	return s.transact(ctx, "append block", wid, []types.TransactWriteItem{update, put}, nil, locker.ErrConflict,
		func(reasons []types.CancellationReason) (bool, error) {
			switch {
			case failed(reasons, 0) && reasons[0].Item == nil:
				return false, fmt.Errorf("append block: %w", locker.ErrNotFound)
			case failed(reasons, 0) && ownWrite(reasons[0].Item, wid):
				return true, nil
			case failed(reasons, 0), failed(reasons, 1):
				return false, fmt.Errorf("append block: pad moved on: %w", locker.ErrConflict)
			}
			return false, nil
		})
}

// Seal implements locker.Store: META becomes sealed only if open at blockCount and head, and
// the pad moves from open to sealed in a counter shard, in one transaction.
func (s *PadStore) Seal(ctx context.Context, padID string, blockCount int, head string, sealedAt int64) error {
	if !validID(padID) {
		return fmt.Errorf("seal pad: %w", locker.ErrNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("seal pad: %w", err)
	}
	wid, err := s.writeID()
	if err != nil {
		return fmt.Errorf("seal pad: %w", err)
	}
	update := types.TransactWriteItem{Update: &types.Update{TableName: s.table, Key: metaKey(padID),
		UpdateExpression:         aws.String("SET #state = :sealed, sealed_at = :at, wid = :wid"),
		ConditionExpression:      aws.String("#state = :open AND block_count = :n AND head_hash = :head"),
		ExpressionAttributeNames: map[string]string{"#state": aState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sealed": str(string(locker.StateSealed)), ":at": num(sealedAt),
			":wid": str(wid), ":open": str(string(locker.StateOpen)), ":n": num(int64(blockCount)), ":head": str(head)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
	return s.transact(ctx, "seal pad", wid, []types.TransactWriteItem{update}, func() types.TransactWriteItem {
		return s.counterUpdate(map[string]int64{aOpen: -1, aSealed: 1})
	}, locker.ErrConflict, func(reasons []types.CancellationReason) (bool, error) {
		switch {
		case failed(reasons, 0) && reasons[0].Item == nil:
			return false, fmt.Errorf("seal pad: %w", locker.ErrNotFound)
		case failed(reasons, 0) && ownWrite(reasons[0].Item, wid):
			return true, nil
		case failed(reasons, 0):
			return false, fmt.Errorf("seal pad: %w", locker.ErrConflict)
		}
		return false, nil
	})
}

// Expire implements locker.Store: META becomes expired only if open (lazy expiry), and the
// pad leaves the open count, in one transaction. A pad that is not open is left as is.
func (s *PadStore) Expire(ctx context.Context, padID string) error {
	if !validID(padID) {
		return fmt.Errorf("expire pad: %w", locker.ErrNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("expire pad: %w", err)
	}
	wid, err := s.writeID()
	if err != nil {
		return fmt.Errorf("expire pad: %w", err)
	}
	update := types.TransactWriteItem{Update: &types.Update{TableName: s.table, Key: metaKey(padID),
		UpdateExpression:         aws.String("SET #state = :expired, wid = :wid"),
		ConditionExpression:      aws.String("#state = :open"),
		ExpressionAttributeNames: map[string]string{"#state": aState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":expired": str(string(locker.StateExpired)), ":wid": str(wid),
			":open": str(string(locker.StateOpen))},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
	return s.transact(ctx, "expire pad", wid, []types.TransactWriteItem{update}, func() types.TransactWriteItem {
		return s.counterUpdate(map[string]int64{aOpen: -1})
	}, locker.ErrUnavailable, func(reasons []types.CancellationReason) (bool, error) {
		if failed(reasons, 0) && reasons[0].Item == nil {
			return false, fmt.Errorf("expire pad: %w", locker.ErrNotFound)
		}
		// Not open (or expired by an earlier attempt of ours): nothing to do.
		return failed(reasons, 0), nil
	})
}

// Blocks implements locker.Store with a strongly consistent Query on the pad's BLK# range,
// following pagination for at most maxQueryPages pages.
func (s *PadStore) Blocks(ctx context.Context, padID string, from, to int) ([]locker.Block, error) {
	if from < 0 {
		from = 0
	}
	if to > maxKeySeq {
		to = maxKeySeq
	}
	if !validID(padID) || to < from {
		return nil, nil
	}
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("read blocks: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(padPK(padID)), ":from": str(blockSK(from)),
			":to": str(blockSK(to))}}
	var out []locker.Block
	for page := 0; page < maxQueryPages; page++ {
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, classify("read blocks", err)
		}
		for _, item := range res.Items {
			d := decoder{item: item}
			b := locker.Block{PadID: padID, Seq: int(d.n(aSeq)), PrevHash: d.s(aPrevHash), CurrHash: d.s(aCurrHash),
				ContentType: d.s(aContentType), Payload: d.b(aPayload), CreatedAt: d.n(aCreatedAt)}
			if d.err != nil {
				return nil, fmt.Errorf("read blocks of %s: %w", padID, d.err)
			}
			out = append(out, b)
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	return nil, fmt.Errorf("read blocks of %s: more than %d pages", padID, maxQueryPages)
}

// PutTicket implements locker.Store with a PutItem conditioned on the hash being absent. The
// item carries a fresh write ID, so a condition failure on an item with our write ID (an SDK
// retry of a put whose response was lost) is success, while a second PutTicket of the same
// ticket is a conflict.
func (s *PadStore) PutTicket(ctx context.Context, t locker.Ticket) error {
	if !validID(t.Hash) {
		return fmt.Errorf("put ticket: invalid hash")
	}
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("put ticket: %w", err)
	}
	wid, err := s.writeID()
	if err != nil {
		return fmt.Errorf("put ticket: %w", err)
	}
	item := ticketItem(t, t.PadID)
	item[aWriteID] = str(wid)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ownWrite(ccf.Item, wid) {
			return nil
		}
		return fmt.Errorf("put ticket: %w", locker.ErrConflict)
	}
	if err != nil {
		return classify("put ticket", err)
	}
	return nil
}

func decodeTicket(hash string, item map[string]types.AttributeValue) (locker.Ticket, error) {
	d := decoder{item: item, optional: map[string]bool{aLeaseStartedAt: true}}
	t := locker.Ticket{Hash: hash, PadID: d.s(aPadID), Type: locker.TicketType(d.s(aType)), RedeemedCount: int(d.n(aRedeemedCount)),
		MaxReads: int(d.n(aMaxReads)), LeaseStartedAt: d.n(aLeaseStartedAt), CreatedAt: d.n(aCreatedAt)}
	if d.err != nil {
		return locker.Ticket{}, fmt.Errorf("read ticket: %w", d.err)
	}
	return t, nil
}

// Ticket implements locker.Store with one strongly consistent GetItem (a ticket minted a
// moment ago must work at once).
func (s *PadStore) Ticket(ctx context.Context, hash string) (locker.Ticket, error) {
	if !validID(hash) {
		return locker.Ticket{}, fmt.Errorf("ticket: %w", locker.ErrNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return locker.Ticket{}, fmt.Errorf("read ticket: %w", err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: key(ticketPK(hash), "TKT"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return locker.Ticket{}, classify("read ticket", err)
	}
	if out.Item == nil {
		return locker.Ticket{}, fmt.Errorf("ticket: %w", locker.ErrNotFound)
	}
	return decodeTicket(hash, out.Item)
}

// PadAndTicket implements locker.PadTicketReader: the pad's and the ticket's strongly
// consistent GetItems are sent at once, so a ticketed read waits for one round trip to
// DynamoDB instead of two, under the same IAM permission (dynamodb:GetItem) and read
// capacity. (A TransactGetItems would read both from one snapshot, but at twice the
// read capacity; the two reads were never one snapshot before either, and every check
// that follows holds for any ticket and pad read in either order.)
func (s *PadStore) PadAndTicket(ctx context.Context, padID, ticketHash string) (locker.Pad, *locker.Ticket, error) {
	var t locker.Ticket
	var terr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t, terr = s.Ticket(ctx, ticketHash)
	}()
	p, err := s.Pad(ctx, padID)
	<-done
	switch {
	case err != nil:
		return locker.Pad{}, nil, err
	case errors.Is(terr, locker.ErrNotFound):
		return p, nil, nil
	case terr != nil:
		return locker.Pad{}, nil, terr
	}
	return p, &t, nil
}

var _ locker.PadTicketReader = (*PadStore)(nil)

// RecordRead implements locker.Store with one UpdateItem: lease_started_at is set only when
// absent (if_not_exists), redeemed_count is incremented, and the ticket as stored afterwards
// is returned (ALL_NEW).
func (s *PadStore) RecordRead(ctx context.Context, hash string, now int64) (locker.Ticket, error) {
	if !validID(hash) {
		return locker.Ticket{}, fmt.Errorf("record read: %w", locker.ErrNotFound)
	}
	if err := s.ready(ctx); err != nil {
		return locker.Ticket{}, fmt.Errorf("record read: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: s.table, Key: key(ticketPK(hash), "TKT"),
		UpdateExpression:          aws.String("SET lease_started_at = if_not_exists(lease_started_at, :now) ADD redeemed_count :one"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now), ":one": num(1)},
		ReturnValues:              types.ReturnValueAllNew})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return locker.Ticket{}, fmt.Errorf("record read: %w", locker.ErrNotFound)
	}
	if err != nil {
		return locker.Ticket{}, classify("record read", err)
	}
	return decodeTicket(hash, out.Attributes)
}

// HasReceipt implements locker.Store with one strongly consistent GetItem of the key only.
func (s *PadStore) HasReceipt(ctx context.Context, txHash string) (bool, error) {
	if !validID(txHash) {
		return false, nil
	}
	if err := s.ready(ctx); err != nil {
		return false, fmt.Errorf("read receipt: %w", err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: key(receiptPK(txHash), "RCPT"),
		ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("pk")})
	if err != nil {
		return false, classify("read receipt", err)
	}
	return out.Item != nil, nil
}

// Health implements locker.Store with one strongly consistent Query of the counter shards
// (no Scan, no write of its own; the store's first call on a new table initialises it, see
// ready). An error means the table cannot be read. Writable is true: a DynamoDB table has
// no read-only mode (an IAM refusal surfaces on the write itself). WALMode is false: there
// is no SQLite write-ahead log here, and durability comes from DynamoDB acknowledging a
// write only once it is stored in several Availability Zones.
func (s *PadStore) Health(ctx context.Context) (locker.StoreHealth, error) {
	if err := s.ready(ctx); err != nil {
		return locker.StoreHealth{}, fmt.Errorf("health: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkStats)}}
	h := locker.StoreHealth{Writable: true, WALMode: false}
	for page := 0; page < maxQueryPages; page++ {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return locker.StoreHealth{}, classify("health: read counters", err)
		}
		for _, item := range out.Items {
			d := decoder{item: item, optional: map[string]bool{aTotal: true, aOpen: true, aSealed: true}}
			h.Pads.Total += int(d.n(aTotal))
			h.Pads.Unsealed += int(d.n(aOpen))
			h.Pads.Sealed += int(d.n(aSealed))
			if d.err != nil {
				return locker.StoreHealth{}, fmt.Errorf("health: %w", d.err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return h, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return locker.StoreHealth{}, fmt.Errorf("health: more than %d pages of counters", maxQueryPages)
}

// decoder reads typed attributes, remembering the first problem.
type decoder struct {
	item     map[string]types.AttributeValue
	optional map[string]bool
	err      error
}

func (d *decoder) missing(name string) {
	if d.err == nil && !d.optional[name] {
		d.err = fmt.Errorf("attribute %s missing or of the wrong type", name)
	}
}

func (d *decoder) s(name string) string {
	if v, ok := d.item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	d.missing(name)
	return ""
}

func (d *decoder) n(name string) int64 {
	v, ok := d.item[name].(*types.AttributeValueMemberN)
	if !ok {
		d.missing(name)
		return 0
	}
	x, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("attribute %s: %w", name, err)
	}
	return x
}

func (d *decoder) b(name string) []byte {
	if v, ok := d.item[name].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	d.missing(name)
	return nil
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
