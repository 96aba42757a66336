package warrant_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// fakeLister lists every target with the tools of listings, or fails it.
type fakeLister struct {
	listings map[string][]string // server → tool, description, ...
	fail     map[string]error
	got      []warrant.CrawlTarget
}

func (f *fakeLister) List(_ context.Context, targets []warrant.CrawlTarget) []warrant.Listed {
	f.got = append(f.got, targets...)
	out := make([]warrant.Listed, 0, len(targets))
	for i := len(targets) - 1; i >= 0; i-- { // any order: the run sorts
		t := targets[i]
		if err := f.fail[t.Server.Name]; err != nil {
			out = append(out, warrant.Listed{Server: t.Server.Name, Err: err})
			continue
		}
		l := &warrant.Listing{Server: t.Server.Name}
		tools := f.listings[t.Server.Name]
		for j := 0; j+1 < len(tools); j += 2 {
			b, _ := catalogtest.Def(tools[j], tools[j+1])
			l.Tools = append(l.Tools, warrant.RawTool{Name: tools[j], Raw: b})
		}
		out = append(out, warrant.Listed{Server: t.Server.Name, Listing: l, Transport: "http"})
	}
	return out
}

// TestCrawlRun: the crawl run of the CLI and the crawl function — selection (unknown
// names refused or reported, duplicates once), headers resolved per server (a failure is
// that server's alone and it is not listed), listing, recording, outcomes sorted.
func TestCrawlRun(t *testing.T) {
	ctx := t.Context()
	cat, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(t.TempDir(), "c.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	svc, err := warrant.New(warrant.Config{Catalog: cat, Identity: "crawler"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"down", "nokey", "ok", "other"} {
		srv := warrant.Server{Name: n, URL: "https://" + n + ".example.com/mcp"}
		if n == "nokey" || n == "ok" {
			srv.Headers = []warrant.HeaderRef{{Header: "Authorization", Env: strings.ToUpper(n) + "_TOKEN"}}
		}
		if _, err := svc.AddServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
	}
	headers := func(_ context.Context, s warrant.Server) (map[string]string, error) {
		if s.Name == "nokey" {
			return nil, errors.New(`server "nokey": header Authorization: environment variable NOKEY_TOKEN is not set or empty`)
		}
		h := map[string]string{}
		for _, r := range s.Headers {
			h[r.Header] = "Bearer s3cr3t"
		}
		return h, nil
	}
	lister := &fakeLister{listings: map[string][]string{"ok": {"a", "A", "b", "B"}, "other": {"x", "X"}},
		fail: map[string]error{"down": errors.New(`server "down": unavailable`)}}

	if _, err := svc.Crawl(ctx, warrant.CrawlRequest{Servers: []string{"ok", "typo"}, RefuseUnknown: true, Headers: headers, Lister: lister}); !errors.Is(err, warrant.ErrNotFound) {
		t.Fatalf("an unknown name with RefuseUnknown: %v", err)
	} else if ue := (*warrant.UnknownServerError)(nil); !errors.As(err, &ue) || ue.Name != "typo" {
		t.Errorf("error %v does not name the server", err)
	}
	if len(lister.got) != 0 {
		t.Errorf("a refused run listed %d servers", len(lister.got))
	}

	outs, err := svc.Crawl(ctx, warrant.CrawlRequest{Servers: []string{"typo", "ok", "nokey", "down", "ok"}, Headers: headers, Lister: lister})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, fmt.Sprintf("%s:%s:%v:%d:%d", o.Server, o.Failed, o.Listed(), o.Tools, len(o.Result.New)))
	}
	if want := "down:list:true:0:0 nokey:headers:false:0:0 ok::true:2:2 typo:select:false:0:0"; strings.Join(got, " ") != want {
		t.Errorf("outcomes %v, want %s", got, want)
	}
	if len(lister.got) != 2 || lister.got[0].Headers["Authorization"] != "Bearer s3cr3t" {
		t.Errorf("listed %+v; want down and ok (once), with ok's header", lister.got)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("target", "t", lister.got[0])
	if strings.Contains(logged.String(), "s3cr3t") {
		t.Errorf("a target logs its header values: %s", logged.String())
	}

	// No names: every server; a server recorded before has its removed tools.
	lister.listings["ok"] = []string{"a", "A"}
	outs, err = svc.Crawl(ctx, warrant.CrawlRequest{Headers: headers, Lister: lister})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 4 || outs[2].Server != "ok" || outs[2].Result.Crawl != 2 || strings.Join(outs[2].Result.Removed, ",") != "b" || outs[3].Server != "other" || outs[3].Failed != "" {
		t.Errorf("crawl of every server: %+v", outs)
	}
}
