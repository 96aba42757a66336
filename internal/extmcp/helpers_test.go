package extmcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/enforce/enforcetest"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
)

// memSource is the shared in-memory source, with the lower-case names these tests use.
type memSource struct{ *enforcetest.Source }

func newMemSource() *memSource { return &memSource{enforcetest.NewSource()} }

func (m *memSource) set(server, tool string, ev enforce.ToolEvidence) { m.Set(server, tool, ev) }
func (m *memSource) fail(err error)                                   { m.Fail(err) }

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// testProcessor is a started Processor on a settable clock, refreshed by the test (its
// own 10 s ticker runs in real time, longer than these tests take).
type testProcessor struct {
	*enforce.Processor
	src   *memSource
	clock *clock
}

func newTestProcessor(t testing.TB, src *memSource, servers []string, mod func(*enforce.Config)) *testProcessor {
	t.Helper()
	tp := &testProcessor{src: src, clock: newClock()}
	cfg := enforce.Config{Servers: servers, Source: src, Now: tp.clock.now, Refresh: 10 * time.Second, Staleness: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	p, err := enforce.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	tp.Processor = p
	return tp
}

// refresh runs exactly one refresh round.
func (tp *testProcessor) refresh(t testing.TB) { t.Helper(); tp.Refresh(t.Context()) }

func liveDigest(t testing.TB, raw []byte) string          { return enforcetest.LiveDigest(t, raw) }
func everything(t testing.TB) ([]byte, []json.RawMessage) { return enforcetest.Everything(t) }
func toolNameOf(t testing.TB, raw []byte) string          { return enforcetest.ToolName(t, raw) }
func names(t testing.TB, result []byte) []string          { return enforcetest.Names(t, result) }

func mcpRequest(method, params string) *pb.McpRequest {
	return &pb.McpRequest{ServiceNames: []string{"everything"}, Method: method, McpRequest: []byte(params), Headers: requestHeaders()}
}

func mcpResponse(method, result string) *pb.McpResponse {
	return &pb.McpResponse{ServiceNames: []string{"everything"}, Method: method, McpResponse: []byte(result)}
}

func (tp *testProcessor) setHook(f func(ctx context.Context, method string)) { tp.SetDecisionHook(f) }

// listingN is an n-tool server-everything listing with nine in ten tools approved.
func listingN(t testing.TB, n int) ([]byte, *memSource) {
	src := newMemSource()
	return enforcetest.Listing(t, src.Source, "everything", n), src
}
