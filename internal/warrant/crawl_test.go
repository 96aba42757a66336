package warrant_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
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

// countingCatalog counts Tools, ServerTools and Servers reads.
type countingCatalog struct {
	warrant.Catalog
	tools, serverTools, servers int
}

func (c *countingCatalog) Servers(ctx context.Context) ([]warrant.Server, error) {
	c.servers++
	return c.Catalog.Servers(ctx)
}

func (c *countingCatalog) Tools(ctx context.Context) ([]warrant.ToolRecord, error) {
	c.tools++
	return c.Catalog.Tools(ctx)
}

func (c *countingCatalog) ServerTools(ctx context.Context, server string) ([]warrant.ToolRecord, error) {
	c.serverTools++
	return c.Catalog.ServerTools(ctx, server)
}

// TestCrawlRunReadsTheCatalogOnce: a crawl run in which every server has new versions
// reads every server's state (Catalog.Tools) once, not once per server, and each server's
// own records once (ServerTools); the look-alike rule still sees the names of tools
// recorded earlier in the same run (whatever the order) and those already in the catalog.
func TestCrawlRunReadsTheCatalogOnce(t *testing.T) {
	ctx := t.Context()
	sq, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(t.TempDir(), "c.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	cat := &countingCatalog{Catalog: sq}
	svc, err := warrant.New(warrant.Config{Catalog: cat, Identity: "crawler"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "z"} {
		if _, err := svc.AddServer(ctx, warrant.Server{Name: n, URL: "https://" + n + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(names []string, listings map[string][]string) map[string]warrant.IngestResult {
		t.Helper()
		outs, err := svc.Crawl(ctx, warrant.CrawlRequest{Servers: names, Headers: func(context.Context, warrant.Server) (map[string]string, error) { return nil, nil },
			Lister: &fakeLister{listings: listings}})
		if err != nil {
			t.Fatal(err)
		}
		res := map[string]warrant.IngestResult{}
		for _, o := range outs {
			if o.Failed != "" {
				t.Fatalf("%s: %v", o.Server, o.Err)
			}
			res[o.Server] = o.Result
		}
		return res
	}
	run([]string{"z"}, map[string][]string{"z": {"send_mail", "Send mail."}})
	cat.tools, cat.serverTools = 0, 0
	res := run([]string{"a", "b", "c", "d"}, map[string][]string{
		"a": {"read_file", "Read a file."},
		"b": {"read_f\u0456le", "Read a file."}, // Cyrillic і: a look-alike of a's tool
		"c": {"send_ma\u0456l", "Send mail."},   // a look-alike of z's tool, from an earlier crawl
		"d": {"other", "Other."},
	})
	if cat.tools != 1 || cat.serverTools != 4 {
		t.Errorf("a run of 4 servers with new versions read Tools %d times and ServerTools %d times, want 1 and 4", cat.tools, cat.serverTools)
	}
	confusable := func(srv string) bool {
		for _, nv := range res[srv].New {
			if slices.Contains(nv.Drift.Rules(), warrant.RuleConfusableName) {
				return true
			}
		}
		return false
	}
	// The fake lister hands the listings back in reverse order, so b is recorded before a:
	// whichever comes second sees the other.
	if !confusable("a") && !confusable("b") {
		t.Errorf("read_file and read_f\u0456le, crawled in one run, were not graded confusable: a %+v b %+v", res["a"].New, res["b"].New)
	}
	if !confusable("c") {
		t.Errorf("send_ma\u0456l was not graded confusable with z's send_mail: %+v", res["c"].New)
	}
	if confusable("d") {
		t.Errorf("other was graded confusable: %+v", res["d"].New)
	}
}

// TestCrawlRunsFollowTheChangeFeed: with an Auditor, a service keeps the catalog's tool
// names between crawl runs and brings them up to date from the audit log: a run reads every
// server's state (Catalog.Tools) only the first time, or when the log moved on by more
// entries than it follows; otherwise it reads the servers the new entries name (the other
// writer's included, so a look-alike another worker recorded is still graded) and its own.
func TestCrawlRunsFollowTheChangeFeed(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	sq, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(dir, "c.db"), Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	key, err := keysigner.Create(filepath.Join(dir, "c.db.logkey"), keysigner.Algorithm("ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	service := func(cat warrant.Catalog) *warrant.Service {
		svc, err := warrant.New(warrant.Config{Catalog: cat, Auditor: &audit.Chainer{Signer: key}, Identity: "crawler"})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	cat := &countingCatalog{Catalog: sq}
	worker, other := service(cat), service(sq)
	for _, n := range []string{"a", "b", "c", "d", "z"} {
		if _, err := other.AddServer(ctx, warrant.Server{Name: n, URL: "https://" + n + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(svc *warrant.Service, server, tool, desc string) warrant.IngestResult {
		t.Helper()
		outs, err := svc.Crawl(ctx, warrant.CrawlRequest{Servers: []string{server}, Headers: func(context.Context, warrant.Server) (map[string]string, error) { return nil, nil },
			Lister: &fakeLister{listings: map[string][]string{server: {tool, desc}}}})
		if err != nil || len(outs) != 1 || outs[0].Failed != "" {
			t.Fatalf("crawl %s: %+v, %v", server, outs, err)
		}
		return outs[0].Result
	}
	confusable := func(res warrant.IngestResult) bool {
		for _, nv := range res.New {
			if slices.Contains(nv.Drift.Rules(), warrant.RuleConfusableName) {
				return true
			}
		}
		return false
	}
	reads := func(step string, tools, serverTools int) {
		t.Helper()
		if cat.tools != tools || cat.serverTools != serverTools {
			t.Errorf("%s: read Tools %d times and ServerTools %d times, want %d and %d", step, cat.tools, cat.serverTools, tools, serverTools)
		}
		if cat.servers != 0 {
			t.Errorf("%s: a run of one named server read the whole server list %d times", step, cat.servers)
		}
		cat.tools, cat.serverTools, cat.servers = 0, 0, 0
	}
	run(worker, "z", "send_mail", "Send mail.")
	reads("the worker's first run", 1, 1)
	run(other, "a", "read_file", "Read a file.")
	if !confusable(run(worker, "b", "read_f\u0456le", "Read a file.")) {
		t.Error("read_f\u0456le was not graded confusable with read_file, which another worker recorded since the last run")
	}
	reads("a run after the worker's and another's records", 0, 3) // b's own; z and a from the feed
	if !confusable(run(worker, "c", "send_ma\u0456l", "Send mail.")) {
		t.Error("send_ma\u0456l was not graded confusable with z's send_mail, kept from the first run")
	}
	reads("a run after the worker's own record", 0, 2) // c's own; b from the feed
	run(worker, "c", "send_ma\u0456l", "Send mail.")
	reads("an unchanged crawl (nothing to grade)", 0, 0)
	// More entries than the names follow: the next run reads every server again.
	head, err := sq.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.AppendAudit(ctx, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1025, "trust_changed")}); err != nil {
		t.Fatal(err)
	}
	if confusable(run(worker, "d", "other", "Other.")) {
		t.Error("other was graded confusable")
	}
	reads("a run after 1,025 entries", 1, 1)
	// A larger catalog follows more: 16 entries per server it holds tools of.
	for i := range 70 {
		n := fmt.Sprintf("s%02d", i)
		if _, err := other.AddServer(ctx, warrant.Server{Name: n, URL: "https://" + n + ".example.com/mcp"}); err != nil {
			t.Fatal(err)
		}
		run(other, n, "tool_"+n, "A tool.")
	}
	run(worker, "d", "other_two", "Other.")
	cat.tools, cat.serverTools = 0, 0
	if head, err = sq.AuditHead(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sq.AppendAudit(ctx, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1100, "trust_changed")}); err != nil {
		t.Fatal(err)
	}
	if !confusable(run(worker, "d", "t\u03bfol_s07", "A tool.")) {
		t.Error("t\u03bfol_s07 was not graded confusable with s07's tool_s07")
	}
	reads("a run after 1,100 entries, 75 servers with tools", 0, 2) // d's own, and from the feed
	// A run of every server reads the list once.
	if _, err := worker.Crawl(ctx, warrant.CrawlRequest{Headers: func(context.Context, warrant.Server) (map[string]string, error) { return nil, nil },
		Lister: &fakeLister{}}); err != nil {
		t.Fatal(err)
	}
	if cat.servers != 1 {
		t.Errorf("a run of every server read the server list %d times, want 1", cat.servers)
	}
}
