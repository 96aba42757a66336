package review

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var itemRE = regexp.MustCompile(`name="item" value="([A-Za-z0-9_-]+ sha256:[0-9a-f]{64})"`)

// bulkForm reads the page's bulk form for server s: its items.
func bulkForm(t *testing.T, html string) []string {
	t.Helper()
	i := strings.Index(html, `action="/approve-all"`)
	if i < 0 {
		t.Fatalf("the page has no bulk form")
	}
	form := html[i : i+strings.Index(html[i:], "</form>")]
	var items []string
	for _, m := range itemRE.FindAllStringSubmatch(form, -1) {
		items = append(items, m[1])
	}
	return items
}

func itemTool(t *testing.T, v string) string {
	t.Helper()
	a, _, _ := strings.Cut(v, " ")
	s, err := unarg(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBulkApprovalFromThePage: the page offers one form per server for its routine
// first-sight tools (not the smuggled tag text, the bidi controls, the look-alike name),
// and posting it approves exactly those with one statement. A tool crawled after the page
// was rendered makes the post stale (409, nothing approved, the new tool not approved);
// a forged form that adds a held tool is refused whole; a read-only page has no form.
func TestBulkApprovalFromThePage(t *testing.T) {
	w := newWorld(t)
	h, _ := w.handler(t)
	html, csrf, head := page(t, h)
	items := bulkForm(t, html)
	var tools []string
	for _, v := range items {
		tools = append(tools, itemTool(t, v))
	}
	if !strings.Contains(strings.Join(tools, ","), "plain") || strings.Contains(strings.Join(tools, ","), "smuggle") ||
		strings.Contains(strings.Join(tools, ","), "hostile") || strings.Contains(strings.Join(tools, ","), "\u0456") {
		t.Fatalf("bulk form lists %q", tools)
	}
	origin := map[string]string{"Origin": "http://" + addr}
	form := func(csrf, head string, items []string) url.Values {
		return url.Values{"csrf": {csrf}, "head": {head}, "server": {arg("s")}, "item": items}
	}
	approved := func() map[string]bool {
		t.Helper()
		aps, err := w.cat.Approvals(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, a := range aps {
			m[a.Tool] = true
		}
		return m
	}

	// A tool arrives after the page was rendered: 409, nothing approved.
	ingest(t, w.svc, plainDef, smuggleDef, hostileDef, lookDef, readFileDef, `{"name":"late","description":"Arrived late.","inputSchema":{"type":"object"}}`)
	before, _ := w.cat.AuditHead(t.Context())
	rec := serve(h, req{method: "POST", target: "/approve-all", form: form(csrf, head, items), cookie: true, header: origin})
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "moved on since the page was rendered") {
		t.Fatalf("stale bulk: %d %s", rec.Code, rec.Body)
	}
	if after, _ := w.cat.AuditHead(t.Context()); after != before || len(approved()) != 0 {
		t.Fatalf("a stale bulk approval recorded something")
	}

	// Read again: the form now lists late too. A forged form adding a held tool: refused whole.
	html, csrf, head = page(t, h)
	items = bulkForm(t, html)
	if len(items) != len(tools)+1 {
		t.Fatalf("after late: %d items, want %d", len(items), len(tools)+1)
	}
	forged := append([]string{arg("smuggle") + " " + string(digest(t, smuggleDef))}, items...)
	rec = serve(h, req{method: "POST", target: "/approve-all", form: form(csrf, head, forged), cookie: true, header: origin})
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not a routine first-sight tool") {
		t.Errorf("forged: %d %s", rec.Code, rec.Body)
	}
	if len(approved()) != 0 {
		t.Fatal("a forged bulk approval recorded something")
	}
	// Without the page's Origin or CSRF token: refused.
	if rec := serve(h, req{method: "POST", target: "/approve-all", form: form(csrf, head, items), cookie: true}); rec.Code != http.StatusForbidden {
		t.Errorf("no Origin: %d", rec.Code)
	}
	if rec := serve(h, req{method: "POST", target: "/approve-all", form: form(strings.Repeat("0", 64), head, items), cookie: true, header: origin}); rec.Code != http.StatusForbidden {
		t.Errorf("wrong CSRF: %d", rec.Code)
	}

	rec = serve(h, req{method: "POST", target: "/approve-all", form: form(csrf, head, items), cookie: true, header: origin})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("bulk: %d %s", rec.Code, rec.Body)
	}
	res := serve(h, req{method: "GET", target: rec.Header().Get("Location"), cookie: true})
	if !strings.Contains(res.Body.String(), "approvals in one signed statement") {
		t.Errorf("result page: %s", res.Body)
	}
	got := approved()
	for _, v := range items {
		if !got[itemTool(t, v)] {
			t.Errorf("%s not approved", itemTool(t, v))
		}
	}
	if len(got) != len(items) || got["smuggle"] || got["hostile"] {
		t.Errorf("approved %v, want exactly the %d of the form", got, len(items))
	}
	recs, _ := w.cat.AuditRecords(t.Context(), mustSeq(t, head), 100)
	if len(recs) != len(items) {
		t.Errorf("%d audit entries for %d approvals", len(recs), len(items))
	}
	// Nothing routine is left: no bulk form.
	if html, _, _ := page(t, h); strings.Contains(html, `action="/approve-all"`) {
		t.Error("a bulk form with nothing routine left")
	}

	ro, err := New(Config{Source: ServiceSource{Service: w.svc}, Addr: addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ingest(t, w.svc, `{"name":"later","description":"Later still.","inputSchema":{"type":"object"}}`)
	if rec := serve(ro, req{method: "GET", target: "/", cookie: true}); strings.Contains(rec.Body.String(), "approve-all") {
		t.Error("a read-only page offers a bulk form")
	}
}

func mustSeq(t *testing.T, head string) int64 {
	t.Helper()
	var h warrant.AuditHead
	seq, _, _ := strings.Cut(head, ":")
	for _, c := range seq {
		h.Seq = h.Seq*10 + int64(c-'0')
	}
	return h.Seq
}

// ApproveAll makes counting a BulkApprover when its source is one.
func (c *counting) ApproveAll(ctx context.Context, req warrant.BulkRequest) (BulkOutcome, error) {
	c.decided.Add(1)
	b, ok := c.Source.(BulkApprover)
	if !ok {
		return BulkOutcome{}, ErrReadOnly
	}
	return b.ApproveAll(ctx, req)
}
