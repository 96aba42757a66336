package enforce

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// fakeCatalog implements the one read CatalogSource makes; any other method panics.
type fakeCatalog struct {
	warrant.Catalog
	tools   func(context.Context) ([]warrant.ToolRecord, error)
	servers map[string]bool
}

func (f fakeCatalog) ServerTools(ctx context.Context, server string) ([]warrant.ToolRecord, error) {
	recs, err := f.tools(ctx)
	if err != nil {
		return nil, err
	}
	if !f.servers[server] {
		return nil, fmt.Errorf("server %q: %w", server, warrant.ErrNotFound)
	}
	var out []warrant.ToolRecord
	for _, r := range recs {
		if r.Server == server {
			out = append(out, r)
		}
	}
	return out, nil
}

func TestCatalogSource(t *testing.T) {
	a := warrant.Digest("sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	b := warrant.Digest("sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	recs := []warrant.ToolRecord{
		{Server: "s", Tool: "approved", LastCrawl: 3, ServerLastCrawl: 3, Current: a, Approved: a},
		{Server: "s", Tool: "drifted", LastCrawl: 3, ServerLastCrawl: 3, Current: b, Approved: a},
		{Server: "s", Tool: "pending", LastCrawl: 3, ServerLastCrawl: 3, Current: b},
		{Server: "s", Tool: "removed", LastCrawl: 2, ServerLastCrawl: 3, Current: a, Approved: a},
		{Server: "other", Tool: "x", LastCrawl: 1, ServerLastCrawl: 1, Current: a, Approved: a},
	}
	src := CatalogSource{Catalog: fakeCatalog{tools: func(context.Context) ([]warrant.ToolRecord, error) { return recs, nil }, servers: map[string]bool{"s": true, "empty": true}}}
	got, err := src.Snapshot(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ToolEvidence{
		"approved": {Approved: string(a), Crawled: string(a)},
		"drifted":  {Approved: string(a), Crawled: string(b)},
		"pending":  {Crawled: string(b)},
		"removed":  {Approved: string(a)},
	}
	if diff := cmp.Diff(want, got.Tools); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if got.ReadAt.IsZero() || time.Since(got.ReadAt) > time.Minute {
		t.Errorf("ReadAt = %v", got.ReadAt)
	}
	if s, err := src.Snapshot(t.Context(), "empty"); err != nil || len(s.Tools) != 0 {
		t.Errorf("server with no tools: %v %v", s, err)
	}
	if _, err := src.Snapshot(t.Context(), "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
	down := CatalogSource{Catalog: fakeCatalog{tools: func(context.Context) ([]warrant.ToolRecord, error) { return nil, warrant.ErrUnavailable }}}
	if _, err := down.Snapshot(t.Context(), "s"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, warrant.ErrUnavailable) {
		t.Errorf("catalog down: %v", err)
	}
}

// TestCatalogDecisions: through the adapter, a tool without an approval is denied, and
// only approved+crawled tools are served.
func TestCatalogDecisions(t *testing.T) {
	v1 := []byte(`{"name":"echo","inputSchema":{}}`)
	recs := []warrant.ToolRecord{
		{Server: "s", Tool: "echo", LastCrawl: 1, ServerLastCrawl: 1, Current: warrant.Digest(d(v1))},
	}
	cat := fakeCatalog{tools: func(context.Context) ([]warrant.ToolRecord, error) { return recs, nil }, servers: map[string]bool{"s": true}}
	p, err := New(Config{Servers: []string{"s"}, Source: CatalogSource{Catalog: cat}})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(t.Context())
	defer p.Close(context.Background())
	if got := p.ListTools(t.Context(), []string{"s"}, []byte(`{"tools":[`+string(v1)+`]}`)); got.Outcome != OutcomeMutated || got.Dropped != 1 {
		t.Errorf("no approval yet: %v", got.Outcome)
	}
	if got := p.CallTool(t.Context(), []string{"s"}, []byte(`{"name":"echo"}`)); got.Cause != CauseUnapproved {
		t.Errorf("no approval yet: %v", got.Cause)
	}
}

type fakeObserver struct {
	calls []string
	obs   [][]warrant.Observation
}

func (f *fakeObserver) ObserveGateway(_ context.Context, server string, _ time.Time, obs []warrant.Observation) error {
	f.calls = append(f.calls, server)
	f.obs = append(f.obs, obs)
	return nil
}

func TestCatalogRecorder(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeObserver{}
	err := CatalogRecorder(f).Record(t.Context(), []Observation{
		{Server: "a", Tool: "x", Digest: "sha256:01", At: t0.Add(time.Second)},
		{Server: "a", Tool: "x", Digest: "sha256:02", At: t0},
		{Server: "a", Tool: "y", Refused: "lone surrogate", At: t0},
		{Server: "b", Tool: "z", Digest: "sha256:03", At: t0},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]warrant.Observation{{{Tool: "x", Digest: "sha256:01"}, {Tool: "y", Refused: "lone surrogate"}}, {{Tool: "z", Digest: "sha256:03"}}}
	if diff := cmp.Diff([]string{"a", "b"}, f.calls); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff(want, f.obs); diff != "" {
		t.Errorf("observations (-want +got):\n%s", diff)
	}
}
