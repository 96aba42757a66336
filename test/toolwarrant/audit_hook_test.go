package toolwarrant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// chainAuditor is a stand-in for internal/audit's auditor: entry_hash = SHA-256(prev || JCS(body)),
// unsigned. fail makes Chain fail, as a signer outage would.
type chainAuditor struct {
	fail  atomic.Bool
	calls atomic.Int64
}

func (a *chainAuditor) Chain(_ context.Context, head warrant.AuditHead, events []warrant.Event) ([]warrant.AuditRecord, error) {
	a.calls.Add(1)
	if a.fail.Load() {
		return nil, errors.New("signer unavailable")
	}
	var out []warrant.AuditRecord
	prev := head
	for _, e := range events {
		body, err := canon.Transform(e.Body)
		if err != nil {
			return nil, err
		}
		ph, _ := hex.DecodeString(prev.Hash)
		sum := sha256.Sum256(append(ph, body...))
		r := warrant.AuditRecord{Seq: prev.Seq + 1, Type: e.Type, Actor: e.Actor, At: e.At, PrevHash: prev.Hash, Hash: hex.EncodeToString(sum[:]), Body: body}
		out = append(out, r)
		prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	}
	return out, nil
}

// TestAuditorWritesWithEveryWrite checks the hook the audit log plugs into (warrant.Auditor): every server added,
// crawl recorded, version first seen and decision made gets its audit record in the same
// write, a failing auditor leaves nothing written, and racing crawls of different servers
// retry on the moved head and keep the chain linear.
func TestAuditorWritesWithEveryWrite(t *testing.T) {
	ctx := t.Context()
	cat, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(t.TempDir(), "c.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	aud := &chainAuditor{}
	svc, _ := warrant.New(warrant.Config{Catalog: cat, Auditor: aud, Identity: "crawler@test"})
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := svc.AddServer(ctx, warrant.Server{Name: name, URL: "https://" + name + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	raw, d := catalogtest.Def("t", "one")
	listing := func(server string) warrant.Listing {
		return warrant.Listing{Server: server, Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}
	}

	// A failing auditor: neither the crawl nor any record is written.
	aud.fail.Store(true)
	if _, err := svc.Ingest(ctx, listing("a")); err == nil {
		t.Fatal("a crawl was recorded although its audit records could not be made")
	}
	aud.fail.Store(false)
	if s, _ := cat.Server(ctx, "a"); s.LastCrawl != 0 {
		t.Errorf("the crawl was written without its audit records")
	}

	// Four servers crawled at once: every write reads the head, loses the race or wins it.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, name := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.Ingest(ctx, listing(name))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("crawl %d: %v", i, err)
		}
	}
	if err := svc.Decide(ctx, warrant.Decision{Server: "a", Tool: "t", Digest: d, Kind: warrant.DecisionApproved, Actor: "approver"}); err != nil {
		t.Fatal(err)
	}
	recs, err := cat.AuditRecords(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	prev := warrant.Genesis()
	for _, r := range recs {
		counts[r.Type]++
		if r.Seq != prev.Seq+1 || r.PrevHash != prev.Hash {
			t.Fatalf("record %d does not link to %d", r.Seq, prev.Seq)
		}
		prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	}
	want := map[string]int{warrant.EventServerAdded: 4, warrant.EventCrawlObserved: 4, warrant.EventVersionRecorded: 4, string(warrant.DecisionApproved): 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("audit records by type = %v, want %v", counts, want)
	}
	if head, _ := cat.AuditHead(ctx); head != prev {
		t.Errorf("head %+v, last record %+v", head, prev)
	}
}
