package awstest

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/aws/smithy-go/middleware"
)

// Calls counts SDK API calls per operation name (one per call, however many attempts the
// retryer makes). It is safe for concurrent use.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// NewCalls returns an empty counter.
func NewCalls() *Calls { return &Calls{n: map[string]int{}} }

// Middleware is an APIOptions entry (dynamodb.Options.APIOptions) that counts each call.
func (c *Calls) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awstest.Calls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			c.n[middleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// Take returns the counts since the last Take and resets them.
func (c *Calls) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

// Ops returns the sorted operation names of counts, for messages.
func Ops(counts map[string]int) []string {
	var ops []string
	for op := range counts {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// ErrInjected is the error a Fault returns in place of a response. It reports itself as a
// retryable timeout, as a lost response would be.
var ErrInjected = errors.New("awstest: injected fault: response lost after the request was sent")

type injected struct{}

func (injected) Error() string        { return ErrInjected.Error() }
func (injected) Unwrap() error        { return ErrInjected }
func (injected) Timeout() bool        { return true }
func (injected) Temporary() bool      { return true }
func (injected) RetryableError() bool { return true }

// Fault fails chosen attempts of one operation after they were sent: the request reaches the
// server (which may commit it) and the response is replaced by a retryable timeout. It sits
// inside the retry loop, so the SDK's retryer sees each failed attempt.
type Fault struct {
	// Operation is the API operation to fail, e.g. "TransactWriteItems".
	Operation string
	// Fail reports whether attempt n (1-based, counted over every call of Operation) fails.
	Fail func(n int64) bool
	n    atomic.Int64
}

// Attempts returns how many attempts of Operation were sent.
func (f *Fault) Attempts() int64 { return f.n.Load() }

// Middleware is an APIOptions entry that installs the fault.
func (f *Fault) Middleware(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("awstest.Fault",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in) // the request is sent and answered here
			if middleware.GetOperationName(ctx) != f.Operation {
				return out, md, err
			}
			if n := f.n.Add(1); f.Fail != nil && f.Fail(n) {
				return middleware.DeserializeOutput{}, md, injected{}
			}
			return out, md, err
		}), middleware.Before)
}

// Unsent is an APIOptions entry that fails every call of operation before it is sent
// (nothing reaches the server), as a process that dies just before the call would: the
// caller sees err.
func Unsent(operation string, err error) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awstest.Unsent",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) == operation {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}
