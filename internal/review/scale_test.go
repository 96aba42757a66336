package review

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// toolsCounting counts the reads of every tool record of the catalog.
type toolsCounting struct {
	warrant.Catalog
	reads atomic.Int64
}

func (c *toolsCounting) Tools(ctx context.Context) ([]warrant.ToolRecord, error) {
	c.reads.Add(1)
	return c.Catalog.Tools(ctx)
}

// TestPageReadsTheCatalogOnce: rendering a page of n pending tools reads every tool
// record of the catalog a constant number of times, not once per card (the diff of each
// card needs the catalog's names for the look-alike check). Measured before: 1,000 pending
// tools took 18.8 s to read, 0.26 s after (go test -bench ReadPage ./internal/review/).
func TestPageReadsTheCatalogOnce(t *testing.T) {
	w := newWorld(t)
	var defs []string
	for i := range 60 {
		defs = append(defs, fmt.Sprintf(`{"name":"tool_%03d","description":"Tool number %d.","inputSchema":{"type":"object"}}`, i, i))
	}
	ingest(t, w.svc, defs...)
	svc, cc := countingService(t, w)
	s, err := read(t.Context(), ServiceSource{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.diffs) < 60 {
		t.Fatalf("%d cards diffed", len(s.diffs))
	}
	if n := cc.reads.Load(); n > 3 {
		t.Errorf("rendering %d cards read every tool record %d times, want at most 3 (the listing and the names, once per head)", len(s.diffs), n)
	}
}

func countingService(tb testing.TB, w *world) (*warrant.Service, *toolsCounting) {
	tb.Helper()
	key, err := keysigner.Create(filepath.Join(tb.TempDir(), "log.key"), keysigner.Ed25519)
	if err != nil {
		tb.Fatal(err)
	}
	cc := &toolsCounting{Catalog: w.cat}
	svc, err := warrant.New(warrant.Config{Catalog: cc, Auditor: &audit.Chainer{Signer: key}, Identity: "reader@test"})
	if err != nil {
		tb.Fatal(err)
	}
	return svc, cc
}

// BenchmarkReadPage reads the page's snapshot of 1,000 pending tools of one server.
func BenchmarkReadPage(b *testing.B) {
	w := newWorld(b)
	var defs []string
	for i := range 1000 {
		defs = append(defs, fmt.Sprintf(`{"name":"tool_%04d","description":"Tool number %d.","inputSchema":{"type":"object"}}`, i, i))
	}
	ingest(b, w.svc, defs...)
	src := ServiceSource{Service: w.svc}
	b.ResetTimer()
	for b.Loop() {
		if _, err := read(b.Context(), src); err != nil {
			b.Fatal(err)
		}
	}
}
