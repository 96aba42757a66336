package warrant

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// observedEvents keeps a record that fits as one entry without part numbers, and splits
// one that does not into parts, each within MaxObservedBody, that together hold every
// observation in order, with the gateway's drift of each part's tools in that part.
func TestObservedEventsSplit(t *testing.T) {
	fields := map[string]any{"server": "s", "crawl": 7, "source": SourceCrawl}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	small := []Observation{{Tool: "a", Digest: Digest("sha256:" + strings.Repeat("a", 64))}}
	if ev := observedEvents("c", at, fields, small, nil); len(ev) != 1 || strings.Contains(string(ev[0].Body), `"part"`) {
		t.Fatalf("a small record: %d events, %s", len(ev), ev[0].Body)
	}
	var obs []Observation
	for i := range 4000 {
		o := Observation{Tool: fmt.Sprintf("tool_%s_%05d", strings.Repeat("x", i%300), i)}
		if i%7 == 0 {
			o.Refused = "the definition is not valid UTF-8 at byte 12"
		} else {
			o.Digest = Digest(fmt.Sprintf("sha256:%064d", i))
		}
		obs = append(obs, o)
	}
	drifted := func(part []Observation) (string, any) {
		var ds []string
		for _, o := range part {
			if strings.HasSuffix(o.Tool, "0") {
				ds = append(ds, o.Tool)
			}
		}
		return "drift", ds
	}
	ev := observedEvents("c", at, fields, obs, drifted)
	if len(ev) < 3 {
		t.Fatalf("4,000 observations in %d events", len(ev))
	}
	var got []string
	drift := 0
	for i, e := range ev {
		if len(e.Body) > MaxObservedBody {
			t.Errorf("part %d is %d bytes, more than %d", i+1, len(e.Body), MaxObservedBody)
		}
		var b struct {
			Server       string
			Crawl        int
			Part, Parts  int
			Observations []struct{ Tool string }
			Drift        []string
		}
		if err := json.Unmarshal(e.Body, &b); err != nil || b.Server != "s" || b.Crawl != 7 || b.Part != i+1 || b.Parts != len(ev) || e.Type != EventCrawlObserved {
			t.Fatalf("part %d: %v %+v", i+1, err, b)
		}
		for _, o := range b.Observations {
			got = append(got, o.Tool)
		}
		for _, d := range b.Drift {
			if !strings.HasSuffix(d, "0") {
				t.Errorf("part %d: drift of %s", i+1, d)
			}
		}
		drift += len(b.Drift)
	}
	if len(got) != len(obs) || drift != 400 {
		t.Fatalf("the parts hold %d observations (want %d) and %d drifts (want 400)", len(got), len(obs), drift)
	}
	for i := range obs {
		if got[i] != obs[i].Tool {
			t.Fatalf("observation %d is %s, want %s", i, got[i], obs[i].Tool)
		}
	}
}
