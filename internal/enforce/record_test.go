package enforce

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestObservationsBatchedOffThePath: a recorder that takes seconds per write does not slow
// decisions; repeated listings of the same drift are recorded once; a full queue drops
// and counts instead of blocking.
func TestObservationsBatchedOffThePath(t *testing.T) {
	src := newMemSource()
	src.set("s", "known", ToolEvidence{})
	tp := newTestProcessor(t, src, []string{"s"}, func(c *Config) { c.RecordQueue = 8; c.RecordBatch = 4 })
	tp.rec.delay = 300 * time.Millisecond
	var tools []string
	for i := range 20 {
		tools = append(tools, fmt.Sprintf(`{"name":"new%02d","inputSchema":{}}`, i))
	}
	listing := []byte(`{"tools":[` + strings.Join(tools, ",") + `]}`)
	start := time.Now()
	for range 50 {
		if got := tp.ListTools(t.Context(), []string{"s"}, listing); got.Dropped != 20 {
			t.Fatalf("dropped %d", got.Dropped)
		}
	}
	if el := time.Since(start); el > 250*time.Millisecond {
		t.Errorf("50 listings took %s with a slow recorder: recording is on the request path", el)
	}
	tp.Close(t.Context())
	m := tp.Metrics()
	recorded, dropped := m.obsRecorded.Load(), m.obsDropped.Load()
	if recorded+dropped != 20 || dropped == 0 {
		t.Errorf("recorded %d + dropped %d, want 20 distinct observations, some dropped by the 8-deep queue", recorded, dropped)
	}
	seen := map[string]int{}
	for _, o := range tp.rec.all() {
		seen[o.Tool]++
		if o.Kind != ObservedNew {
			t.Errorf("%s: kind %s", o.Tool, o.Kind)
		}
	}
	for tool, n := range seen {
		if n != 1 {
			t.Errorf("%s recorded %d times", tool, n)
		}
	}
}

// TestRecorderFailureRetriedOnce: a failed write is retried with the next batch; a second
// failure drops it and counts.
func TestRecorderFailureRetriedOnce(t *testing.T) {
	src := newMemSource()
	src.set("s", "x", ToolEvidence{})
	tp := newTestProcessor(t, src, []string{"s"}, nil)
	// Only the first write fails: the retry succeeds whether the ticker or b's batch
	// brings it (switching the error off after the failure raced the ticker, whose second
	// failure dropped a).
	tp.rec.mu.Lock()
	tp.rec.failOnce = errors.New("database is locked")
	tp.rec.mu.Unlock()
	tp.ListTools(t.Context(), []string{"s"}, []byte(`{"tools":[{"name":"a","inputSchema":{}}]}`))
	waitFor(t, func() bool { return tp.Metrics().recordFailures.Load() >= 1 })
	tp.ListTools(t.Context(), []string{"s"}, []byte(`{"tools":[{"name":"b","inputSchema":{}}]}`))
	waitFor(t, func() bool { return len(tp.rec.all()) == 2 })
	if got := tp.rec.all(); got[0].Tool != "a" || got[1].Tool != "b" {
		t.Errorf("recorded %+v, want a (retried) and b", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
