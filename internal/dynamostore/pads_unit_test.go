package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// fakeAPI is a function-field fake of the DynamoDB client: each test sets the calls it
// needs and returns the SDK's own error types, so the driver's translation runs as in
// production. Unset calls succeed with empty output (GetItem of the format marker answers
// with the current version). It is safe for concurrent use.
type fakeAPI struct {
	mu       sync.Mutex
	get      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	put      func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	update   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	query    func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	transact func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	tokens   []string
}

func (f *fakeAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if getS(in.Key, attrPK) == pkSchema {
		return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{version: str(FormatVersion)}}, nil
	}
	if f.get == nil {
		return &dynamodb.GetItemOutput{}, nil
	}
	return f.get(in)
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.put == nil {
		return &dynamodb.PutItemOutput{}, nil
	}
	return f.put(in)
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.update == nil {
		return &dynamodb.UpdateItemOutput{}, nil
	}
	return f.update(in)
}

func (f *fakeAPI) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if f.query == nil {
		return &dynamodb.QueryOutput{}, nil
	}
	return f.query(in)
}

func (f *fakeAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.mu.Lock()
	f.tokens = append(f.tokens, aws.ToString(in.ClientRequestToken))
	f.mu.Unlock()
	if f.transact == nil {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	return f.transact(in)
}

func newFakeStore(t *testing.T, f *fakeAPI) *PadStore {
	t.Helper()
	s, err := New(Config{Client: f, Table: "pads", MaxTxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cancelledWith(reasons ...types.CancellationReason) error {
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

func reason(code string, item map[string]types.AttributeValue) types.CancellationReason {
	return types.CancellationReason{Code: aws.String(code), Item: item}
}

var none = reason("None", nil)

func testBlock() locker.Block {
	return locker.Block{PadID: "p1", Seq: 0, PrevHash: locker.GenesisHash, CurrHash: locker.NextHash(locker.GenesisHash, []byte("x")),
		ContentType: "text/plain", Payload: []byte("x"), CreatedAt: 1}
}

func TestAppendErrorTranslation(t *testing.T) {
	other := map[string]types.AttributeValue{aWriteID: str("someone-else")}
	tests := []struct {
		name string
		err  error
		want error // nil: success
	}{
		{"unknown pad", cancelledWith(reason("ConditionalCheckFailed", nil), none), locker.ErrNotFound},
		{"pad moved on", cancelledWith(reason("ConditionalCheckFailed", other), none), locker.ErrConflict},
		{"block exists", cancelledWith(none, reason("ConditionalCheckFailed", nil)), locker.ErrConflict},
		{"transaction conflict is a lost race", cancelledWith(reason("TransactionConflict", nil), none), locker.ErrConflict},
		{"throttled inside the transaction", cancelledWith(reason("ThrottlingError", nil), none), locker.ErrUnavailable},
		{"provisioned throughput", &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, locker.ErrUnavailable},
		{"request limit", &types.RequestLimitExceeded{Message: aws.String("limit")}, locker.ErrUnavailable},
		{"internal server error", &types.InternalServerError{Message: aws.String("oops")}, locker.ErrUnavailable},
		{"in progress", &types.TransactionInProgressException{Message: aws.String("busy")}, locker.ErrUnavailable},
		{"throttling by code", &smithy.GenericAPIError{Code: "ThrottlingException", Message: "rate"}, locker.ErrUnavailable},
		{"retries exhausted", &retry.MaxAttemptsError{Attempt: 3, Err: errors.New("timeout")}, locker.ErrUnavailable},
		{"deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), locker.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore(t, &fakeAPI{transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, tc.err
			}})
			err := s.AppendBlock(t.Context(), testBlock())
			if !errors.Is(err, tc.want) {
				t.Errorf("AppendBlock err = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("not a sentinel", func(t *testing.T) {
		for _, e := range []error{&smithy.GenericAPIError{Code: "ValidationException", Message: "bad"}, context.Canceled} {
			s := newFakeStore(t, &fakeAPI{transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) { return nil, e }})
			err := s.AppendBlock(t.Context(), testBlock())
			if err == nil || errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrConflict) || errors.Is(err, locker.ErrNotFound) {
				t.Errorf("%v: AppendBlock err = %v, want an internal error", e, err)
			}
		}
	})
}

// TestOwnWriteIsSuccess: a condition failure whose META carries this write's ID means an
// earlier attempt (its response lost) committed: success, not a conflict.
func TestOwnWriteIsSuccess(t *testing.T) {
	f := &fakeAPI{}
	f.transact = func(in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		wid := in.TransactItems[0].Update.ExpressionAttributeValues[":wid"].(*types.AttributeValueMemberS).Value
		return nil, cancelledWith(reason("ConditionalCheckFailed", map[string]types.AttributeValue{aWriteID: str(wid)}),
			reason("ConditionalCheckFailed", nil))
	}
	s := newFakeStore(t, f)
	if err := s.AppendBlock(t.Context(), testBlock()); err != nil {
		t.Errorf("AppendBlock = %v, want success", err)
	}
	if err := s.Seal(t.Context(), "p1", 0, locker.GenesisHash, 5); err != nil {
		t.Errorf("Seal = %v, want success", err)
	}
	tok := f.tokens[0]
	if len(tok) < 1 || len(tok) > 36 {
		t.Errorf("ClientRequestToken %q is not 1-36 characters", tok)
	}
}

func TestCreateCounterConflictRetries(t *testing.T) {
	np := locker.NewPad{Pad: locker.Pad{ID: "p1", State: locker.StateOpen, MaxBlocks: 8, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash},
		Ticket: locker.Ticket{Hash: "h1", PadID: "p1", Type: locker.TicketReadOnce, MaxReads: 1}}
	calls := 0
	f := &fakeAPI{transact: func(in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		calls++
		if calls < 3 {
			return nil, cancelledWith(none, none, reason("TransactionConflict", nil))
		}
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}}
	s := newFakeStore(t, f)
	if err := s.CreatePad(t.Context(), np); err != nil {
		t.Fatalf("CreatePad = %v, want success on the third shard", err)
	}
	if len(f.tokens) != 3 || f.tokens[0] == f.tokens[1] || f.tokens[1] == f.tokens[2] {
		t.Errorf("tokens %v: each re-send needs its own token", f.tokens)
	}
	if w := strings.Split(f.tokens[0], "-")[0]; !strings.HasPrefix(f.tokens[2], w) {
		t.Errorf("tokens %v do not share the write ID", f.tokens)
	}
	calls = -100 // always conflict now
	if err := s.CreatePad(t.Context(), np); !errors.Is(err, locker.ErrUnavailable) {
		t.Errorf("CreatePad with busy counters = %v, want ErrUnavailable", err)
	}
	// A conflict on the pad itself is not retried by the driver.
	f.transact = func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
		return nil, cancelledWith(reason("TransactionConflict", nil), none, none)
	}
	f.tokens = nil
	if err := s.CreatePad(t.Context(), np); !errors.Is(err, locker.ErrUnavailable) || len(f.tokens) != 1 {
		t.Errorf("CreatePad with a conflicting META = %v after %d sends, want ErrUnavailable after 1", err, len(f.tokens))
	}
}

func TestCreateRefusals(t *testing.T) {
	np := locker.NewPad{Pad: locker.Pad{ID: "p1", State: locker.StateOpen, MaxBytes: 1, HeadHash: locker.GenesisHash},
		Ticket:  locker.Ticket{Hash: "h1", PadID: "p1", Type: locker.TicketReadOnce},
		Receipt: &locker.Receipt{TxHash: "0x1", AmountUnits: "1", Payer: "0x2"}}
	tests := []struct {
		name    string
		reasons []types.CancellationReason
		want    error
	}{
		{"pad exists", []types.CancellationReason{reason("ConditionalCheckFailed", map[string]types.AttributeValue{aWriteID: str("x")}), none, none, none}, locker.ErrConflict},
		{"ticket exists", []types.CancellationReason{none, reason("ConditionalCheckFailed", nil), none, none}, locker.ErrConflict},
		{"receipt redeemed", []types.CancellationReason{none, none, reason("ConditionalCheckFailed", nil), none}, locker.ErrRedeemed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore(t, &fakeAPI{transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return nil, cancelledWith(tc.reasons...)
			}})
			if err := s.CreatePad(t.Context(), np); !errors.Is(err, tc.want) {
				t.Errorf("CreatePad = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestHealthAndFormat(t *testing.T) {
	s := newFakeStore(t, &fakeAPI{query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		return &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{
			{aTotal: num(3), aOpen: num(2)}, {aTotal: num(1), aOpen: num(-1), aSealed: num(1)}, {}}}, nil
	}})
	h, err := s.Health(t.Context())
	if err != nil || h.Pads != (locker.PadCounts{Total: 4, Unsealed: 1, Sealed: 1}) || !h.Writable {
		t.Errorf("Health = %+v, %v", h, err)
	}
	s = newFakeStore(t, &fakeAPI{query: func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no table")}
	}})
	if _, err := s.Health(t.Context()); err == nil {
		t.Errorf("Health of an unreadable table succeeded")
	}
	if h.WALMode {
		t.Errorf("Health on DynamoDB reports wal_mode true: there is no SQLite write-ahead log")
	}
}

// markerFake is a DynamoDB fake for the format marker: marker is the stored version ("" for
// none), getErr fails marker reads, and it counts calls by operation and key.
type markerFake struct {
	fakeAPI
	mu     sync.Mutex
	marker string
	getErr error
	putErr error
	calls  []string // "GetItem SCHEMA", "PutItem SCHEMA", "GetItem PAD#p1", ...
}

func (f *markerFake) record(op string, k map[string]types.AttributeValue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op+" "+getS(k, attrPK))
}

func (f *markerFake) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *markerFake) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.record("GetItem", in.Key)
	if getS(in.Key, attrPK) != pkSchema {
		return &dynamodb.GetItemOutput{}, nil
	}
	f.mu.Lock()
	v, err := f.marker, f.getErr
	f.mu.Unlock()
	time.Sleep(time.Millisecond) // let concurrent first calls overlap
	if err != nil {
		return nil, err
	}
	if v == "" {
		return &dynamodb.GetItemOutput{}, nil
	}
	return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{version: str(v)}}, nil
}

func (f *markerFake) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.record("PutItem", in.Item)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.putErr != nil {
		return nil, f.putErr
	}
	if getS(in.Item, attrPK) == pkSchema {
		if aws.ToString(in.ConditionExpression) != "attribute_not_exists(pk)" {
			return nil, errors.New("marker written without its condition")
		}
		if f.marker != "" {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("exists")}
		}
		f.marker = getS(in.Item, version)
	}
	return &dynamodb.PutItemOutput{}, nil
}

// TestFormatMarkerOnFirstUse: New makes no call; the first call checks the marker (one
// GetItem), later calls do not; concurrent first calls share one check.
func TestFormatMarkerOnFirstUse(t *testing.T) {
	f := &markerFake{marker: FormatVersion}
	s, err := New(Config{Client: f, Table: "pads"})
	if err != nil {
		t.Fatal(err)
	}
	if c := f.take(); len(c) != 0 {
		t.Fatalf("New made calls: %v", c)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Pad(t.Context(), "p1"); !errors.Is(err, locker.ErrNotFound) {
				t.Errorf("Pad = %v", err)
			}
		}()
	}
	wg.Wait()
	c := f.take()
	if n := strings.Count(strings.Join(c, ","), "GetItem SCHEMA"); n != 1 || len(c) != 9 {
		t.Errorf("8 concurrent first calls: %v; want one marker read and 8 pad reads", c)
	}
	if _, err := s.Pad(t.Context(), "p1"); !errors.Is(err, locker.ErrNotFound) {
		t.Fatal(err)
	}
	if c := f.take(); fmt.Sprint(c) != "[GetItem PAD#p1]" {
		t.Errorf("a later call: %v, want the pad read alone", c)
	}
}

// TestFormatMarkerFailuresAreRetried: a failed check is never remembered as a success, and
// its error carries no sentinel but unavailability (never a not-found of its own).
func TestFormatMarkerFailuresAreRetried(t *testing.T) {
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "slow down"}
	f := &markerFake{marker: FormatVersion, getErr: throttled}
	s, err := New(Config{Client: f, Table: "pads"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pad(t.Context(), "p1"); !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Pad while the marker read is throttled = %v, want unavailable", err)
	}
	if c := f.take(); fmt.Sprint(c) != "[GetItem SCHEMA]" {
		t.Errorf("calls = %v: the pad must not be read before the marker was", c)
	}
	f.mu.Lock()
	f.getErr = nil
	f.marker = "pads/0"
	f.mu.Unlock()
	for range 2 {
		_, err := s.Health(t.Context())
		if err == nil || !strings.Contains(err.Error(), `"pads/0"`) || errors.Is(err, locker.ErrUnavailable) {
			t.Errorf("Health on a table of another version = %v", err)
		}
		if err := s.AppendBlock(t.Context(), locker.Block{PadID: "p1"}); err == nil || errors.Is(err, locker.ErrConflict) || errors.Is(err, locker.ErrNotFound) {
			t.Errorf("append on a table of another version = %v", err)
		}
	}
	if c := f.take(); fmt.Sprint(c) != "[GetItem SCHEMA GetItem SCHEMA GetItem SCHEMA GetItem SCHEMA]" {
		t.Errorf("calls = %v: every call must re-check and none may reach the table", c)
	}
	f.mu.Lock()
	f.marker = FormatVersion
	f.mu.Unlock()
	if _, err := s.Health(t.Context()); err != nil {
		t.Errorf("Health once the marker is right: %v", err)
	}
}

// TestNewTableInitialised: on a table without a marker, Initialize runs first (on a view
// that does not check the marker again), then the marker is written; an Initialize or
// marker-write failure leaves no marker and is retried by the next call.
func TestNewTableInitialised(t *testing.T) {
	f := &markerFake{}
	var inits int
	fail := errors.New("seed failed")
	var initErr error
	s, err := New(Config{Client: f, Table: "pads", Initialize: func(ctx context.Context, st locker.Store) error {
		inits++
		if _, err := st.Pad(ctx, locker.DemoPadID); !errors.Is(err, locker.ErrNotFound) {
			return err
		}
		return initErr
	}})
	if err != nil {
		t.Fatal(err)
	}
	initErr = fail
	if _, err := s.Ticket(t.Context(), "h1"); err == nil || errors.Is(err, locker.ErrNotFound) || !strings.Contains(err.Error(), "seed failed") {
		t.Errorf("Ticket while initialisation fails = %v", err)
	}
	if c := f.take(); fmt.Sprint(c) != "[GetItem SCHEMA GetItem PAD#demo-pad-v1]" {
		t.Errorf("calls = %v: no marker may be written after a failed initialisation", c)
	}
	initErr = nil
	f.putErr = &smithy.GenericAPIError{Code: "InternalServerError", Message: "oops"}
	if _, err := s.Ticket(t.Context(), "h1"); !errors.Is(err, locker.ErrUnavailable) {
		t.Errorf("Ticket while the marker write fails = %v, want unavailable", err)
	}
	f.take()
	f.putErr = nil
	if _, err := s.Ticket(t.Context(), "h1"); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Ticket after a good initialisation = %v", err)
	}
	if c := f.take(); fmt.Sprint(c) != "[GetItem SCHEMA GetItem PAD#demo-pad-v1 PutItem SCHEMA GetItem TKT#h1]" {
		t.Errorf("calls = %v", c)
	}
	if inits != 3 || f.marker != FormatVersion {
		t.Errorf("Initialize ran %d times (want 3), marker %q", inits, f.marker)
	}
	if _, err := s.Ticket(t.Context(), "h1"); !errors.Is(err, locker.ErrNotFound) || inits != 3 {
		t.Errorf("a later call re-initialised (%d) or failed: %v", inits, err)
	}
}

func TestKeys(t *testing.T) {
	if got := blockSK(42); got != "BLK#000000042" {
		t.Errorf("blockSK(42) = %s", got)
	}
	for _, id := range []string{"", strings.Repeat("a", maxIDLen+1), "\xff"} {
		if validID(id) {
			t.Errorf("validID(%q) = true", id)
		}
	}
	s := newFakeStore(t, &fakeAPI{get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		t.Error("an invalid ID reached DynamoDB")
		return nil, nil
	}})
	if _, err := s.Pad(t.Context(), "\xff"); !errors.Is(err, locker.ErrNotFound) {
		t.Errorf("Pad(invalid) = %v", err)
	}
}
