package enforce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// memSource is a concurrency-safe in-memory Source; set err to make the store "down".
type memSource struct {
	mu    sync.Mutex
	snaps map[string]map[string]ToolEvidence
	err   error
	reads int
}

func newMemSource() *memSource { return &memSource{snaps: map[string]map[string]ToolEvidence{}} }

func (m *memSource) set(server, tool string, ev ToolEvidence) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snaps[server] == nil {
		m.snaps[server] = map[string]ToolEvidence{}
	}
	m.snaps[server][tool] = ev
}

func (m *memSource) Snapshot(ctx context.Context, server string) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.err != nil {
		return Snapshot{}, m.err
	}
	tools, ok := m.snaps[server]
	if !ok {
		return Snapshot{}, ErrUnknownServer
	}
	cp := make(map[string]ToolEvidence, len(tools))
	for k, v := range tools {
		cp[k] = v
	}
	return Snapshot{Server: server, Tools: cp}, nil
}

// memRecorder collects recorded batches.
type memRecorder struct {
	mu       sync.Mutex
	batches  [][]Observation
	err      error // every Record fails with it
	failOnce error // the next Record fails with it, the ones after succeed
	delay    time.Duration
}

func (r *memRecorder) Record(ctx context.Context, batch []Observation) error {
	if r.delay > 0 {
		select {
		case <-time.After(r.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failOnce; err != nil {
		r.failOnce = nil
		return err
	}
	if r.err != nil {
		return r.err
	}
	r.batches = append(r.batches, append([]Observation(nil), batch...))
	return nil
}

func (r *memRecorder) all() []Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Observation
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// testProcessor is a started Processor whose refreshes happen only when the test ticks.
type testProcessor struct {
	*Processor
	src   *memSource
	rec   *memRecorder
	clock *clock
	ticks chan time.Time
	done  chan struct{}
}

func newTestProcessor(t testing.TB, src *memSource, servers []string, mod func(*Config)) *testProcessor {
	t.Helper()
	tp := &testProcessor{src: src, rec: &memRecorder{}, clock: newClock(), ticks: make(chan time.Time), done: make(chan struct{}, 100)}
	cfg := Config{Servers: servers, Source: src, Recorder: tp.rec, Now: tp.clock.now, Refresh: time.Second, Staleness: 10 * time.Second,
		RecordInterval: 10 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.tick = func() (<-chan time.Time, func()) { return tp.ticks, func() {} }
	p.cache.refreshed = func() {
		select {
		case tp.done <- struct{}{}:
		default:
		}
	}
	p.Start(t.Context())
	<-tp.done // the initial refresh
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	tp.Processor = p
	return tp
}

// refresh runs exactly one refresh round and waits for it.
func (tp *testProcessor) refresh(t testing.TB) {
	t.Helper()
	select {
	case tp.ticks <- time.Now():
	case <-time.After(5 * time.Second):
		t.Fatal("refresh loop not running")
	}
	select {
	case <-tp.done:
	case <-time.After(5 * time.Second):
		t.Fatal("refresh did not finish")
	}
}

// liveDigest is the digest the processor computes for a tool object as listed.
func liveDigest(t testing.TB, raw []byte) string {
	t.Helper()
	c, err := canon.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(s[:])
}

// everything returns the captured server-everything listing and its tools' raw bytes.
func everything(t testing.TB) ([]byte, []json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(everythingFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return data[:len(data)-1], doc.Tools // without the file's final newline
}

func toolNameOf(t testing.TB, raw []byte) string {
	t.Helper()
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v.Name
}

// ListTools decides a tools/list result through Decide, as every transport does.
func (p *Processor) ListTools(ctx context.Context, services []string, result []byte) Decision {
	return p.Decide(ctx, Message{Phase: PhaseResponse, Method: "tools/list", Services: services, Body: result})
}

// CallTool decides a tools/call request through Decide.
func (p *Processor) CallTool(ctx context.Context, services []string, params []byte) Decision {
	return p.Decide(ctx, Message{Phase: PhaseRequest, Method: "tools/call", Services: services, Body: params})
}
