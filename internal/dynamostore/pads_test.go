package dynamostore_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/locker/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) != "" {
		os.Exit(crashChild()) // TestSequencerCrash's child process, not a test run
	}
	os.Exit(awstest.Main(m))
}

// newStore returns a PadStore on a fresh table shaped like template.yaml's PadsTable.
// Extra APIOptions (call counters, fault injectors) are installed on its client.
func newStore(t testing.TB, apiOptions ...func(*dynamodb.Options)) *dynamostore.PadStore {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.PadsTable(t, cfg)
	s, err := dynamostore.New(dynamostore.Config{Client: dynamodb.NewFromConfig(cfg, apiOptions...), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) locker.Store { return newStore(t) })
}

// overlap holds every GetItem, once armed, until a second one is in flight (or 10 s have
// passed): it records whether the two reads of a ticketed read were ever outstanding
// together.
type overlap struct {
	armed    atomic.Bool
	inflight atomic.Int32
	both     chan struct{}
	once     sync.Once
	seen     atomic.Bool
}

func (o *overlap) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("overlap",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if o.armed.Load() && middleware.GetOperationName(ctx) == "GetItem" {
				if o.inflight.Add(1) == 2 {
					o.seen.Store(true)
					o.once.Do(func() { close(o.both) })
				}
				select {
				case <-o.both:
				case <-time.After(10 * time.Second):
				}
				defer o.inflight.Add(-1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// A ticketed read's pad and ticket GetItems are outstanding at once: one round trip.
func TestPadAndTicketReadsAtOnce(t *testing.T) {
	o := &overlap{both: make(chan struct{})}
	s := newStore(t, func(opts *dynamodb.Options) { opts.APIOptions = append(opts.APIOptions, o.Middleware) })
	ctx := t.Context()
	np := locker.NewPad{Pad: locker.Pad{ID: "0123456789abcdef0123456789abcdef", WriteKeyHash: locker.HashSecret("wk"), State: locker.StateOpen,
		CreatedAt: 1000, ExpiresAt: 4600, MaxBlocks: 8, MaxBytes: locker.MaxPadBytes, HeadHash: locker.GenesisHash},
		Ticket: locker.Ticket{Hash: locker.HashSecret("tk"), PadID: "0123456789abcdef0123456789abcdef", Type: locker.TicketReadOnce, MaxReads: 1, CreatedAt: 1000}}
	if err := s.CreatePad(ctx, np); err != nil { // also the table's format check, before arming
		t.Fatal(err)
	}
	o.armed.Store(true)
	p, tk, err := s.PadAndTicket(ctx, np.Pad.ID, np.Ticket.Hash)
	if err != nil || p != np.Pad || tk == nil || *tk != np.Ticket {
		t.Fatalf("PadAndTicket = %+v, %v, %v", p, tk, err)
	}
	if !o.seen.Load() {
		t.Fatal("the pad's and the ticket's GetItems were sent one after the other")
	}
}
