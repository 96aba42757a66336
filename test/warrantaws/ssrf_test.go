package warrantaws_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestCrawlSSRFGuard: in a VPC the crawl Lambda could reach internal ranges and the
// container credentials endpoint 169.254.170.2; the crawler's address policy refuses them
// (metadata even with allowPrivate), the outcome says so, and nothing is recorded.
func TestCrawlSSRFGuard(t *testing.T) {
	s := newStack(t)
	s.c.Servers = []warrant.Server{
		{Name: "creds", URL: "http://169.254.170.2/v2/credentials", AllowPrivate: true},
		{Name: "imds", URL: "http://169.254.169.254/latest/meta-data/", AllowPrivate: true},
		{Name: "internal", URL: "http://10.0.0.7/mcp"},
		{Name: "loopback", URL: "http://127.0.0.1:9/mcp"},
	}
	crawl := s.crawl(t, awsapp.WarrantOptions{})
	res, err := crawl(t.Context(), json.RawMessage(testenv.Event(t, "crawl-scheduled.json")))
	if err != nil || res.Failed != 4 || res.Recorded != 0 {
		t.Fatalf("crawl: %+v, %v", res, err)
	}
	for _, o := range res.Servers {
		if !strings.Contains(o.Error, "refused by the address policy") {
			t.Errorf("%s: %q, want a refusal by the address policy", o.Server, o.Error)
		}
	}
	w := s.warrant(t, "test", awsapp.WarrantOptions{})
	for _, srv := range s.c.Servers {
		if got, _ := w.Catalog.Server(t.Context(), srv.Name); got.LastCrawl != 0 {
			t.Errorf("%s: a refused crawl was recorded", srv.Name)
		}
	}
}
