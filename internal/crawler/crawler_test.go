package crawler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/mcpclient/hostile"
	"github.com/agentgate-dev/agentgate/internal/netguard"
	"github.com/agentgate-dev/agentgate/internal/readbound"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func loopbackTarget(name, url string) Target {
	return Target{Server: warrant.Server{Name: name, URL: url, AllowPrivate: true}}
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestCrawlKeepsRawBytesAndSendsHeaders(t *testing.T) {
	tools := []string{
		`{ "name" : "spaced",  "description":"caf\u00e9", "inputSchema":{"type":"object"} }`,
		"{\"name\":\"badutf8\",\"description\":\"a\xffb\",\"inputSchema\":{\"type\":\"object\"}}",
		`{"name":"surrogate","description":"x\ud800y","inputSchema":{"type":"object"}}`,
	}
	f := fixture.New(tools...)
	f.PageSize = 2
	srv := serve(t, f)
	tg := loopbackTarget("fx", srv.URL+"/mcp")
	tg.Headers = map[string]string{"Authorization": "Bearer t0k"}
	o := CrawlOne(t.Context(), Config{Timeout: 10 * time.Second}, tg)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	if o.Pages != 2 || o.Transport != "http" || len(o.Listing.Tools) != 3 {
		t.Fatalf("outcome = %+v", o)
	}
	for i, tool := range o.Listing.Tools {
		if string(tool.Raw) != tools[i] {
			t.Errorf("tool %d raw = %q\nwant exactly %q", i, tool.Raw, tools[i])
		}
	}
	if f.Header("Authorization") != "Bearer t0k" {
		t.Errorf("Authorization sent = %q", f.Header("Authorization"))
	}
	// The offsets the ingestion error will name are offsets in these exact bytes.
	for i, off := range map[int]int64{1: 34, 2: 36} {
		_, _, err := warrant.DigestTool(o.Listing.Tools[i].Raw)
		var ce *canon.Error
		if !errors.As(err, &ce) || ce.Offset != off {
			t.Errorf("tool %d: %v, want a refusal at offset %d", i, err, off)
		}
	}
}

func TestCrawlManyServersBoundedConcurrency(t *testing.T) {
	f := fixture.New(fixture.Tools("t", 3)...)
	f.ListDelay = 50 * time.Millisecond
	srv := serve(t, f)
	var targets []Target
	for i := range 10 {
		targets = append(targets, loopbackTarget(fmt.Sprintf("s%02d", 9-i), srv.URL+"/mcp"))
	}
	// One broken server among them: its outcome is reported, the others still succeed.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	targets = append(targets, loopbackTarget("dead", "http://"+dead+"/mcp"))
	var progress []int
	var mu sync.Mutex
	outs := Crawl(t.Context(), Config{Concurrency: 3, Timeout: 10 * time.Second, Progress: func(done, total int, _ string) {
		mu.Lock()
		progress = append(progress, done)
		mu.Unlock()
		if total != 11 {
			t.Errorf("progress total = %d", total)
		}
	}}, targets)
	if len(outs) != 11 || outs[0].Server != "dead" || outs[1].Server != "s00" || outs[10].Server != "s09" {
		t.Fatalf("outcomes not sorted by server: %v", names(outs))
	}
	if !errors.Is(outs[0].Err, mcpclient.ErrUnavailable) {
		t.Errorf("dead server: %v", outs[0].Err)
	}
	for _, o := range outs[1:] {
		if o.Err != nil || len(o.Listing.Tools) != 3 {
			t.Errorf("%s: %v", o.Server, o.Err)
		}
	}
	// Each listing holds at most one request in flight, so the fixture never sees more
	// than Concurrency at once.
	if m := f.MaxActive(); m > 3 || m < 2 {
		t.Errorf("max concurrent requests = %d, want 2..3 with Concurrency 3", m)
	}
	if len(progress) != 11 || progress[10] != 11 {
		t.Errorf("progress = %v", progress)
	}
}

func names(outs []Outcome) []string {
	var n []string
	for _, o := range outs {
		n = append(n, o.Server)
	}
	return n
}

func TestCrawlBoundsTimeAndSize(t *testing.T) {
	slow := fixture.New(fixture.Tools("t", 1)...)
	slow.ListDelay = time.Minute
	srv := serve(t, slow)
	start := time.Now()
	o := CrawlOne(t.Context(), Config{Timeout: 700 * time.Millisecond}, loopbackTarget("slow", srv.URL+"/mcp"))
	if !errors.Is(o.Err, mcpclient.ErrUnavailable) || time.Since(start) > 10*time.Second {
		t.Errorf("slow server: %v after %v", o.Err, time.Since(start))
	}

	big := fixture.New(fixture.Tools("t", 1)...)
	big.Padding = 64 << 10
	srv = serve(t, big)
	o = CrawlOne(t.Context(), Config{Timeout: 10 * time.Second, MaxResponseBytes: 16 << 10}, loopbackTarget("big", srv.URL+"/mcp"))
	var be *readbound.Error
	if !errors.As(o.Err, &be) || be.Kind != readbound.KindMessage || !errors.Is(o.Err, mcpclient.ErrProtocol) ||
		!strings.Contains(o.Err.Error(), "TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES") {
		t.Errorf("oversized response: %v, want the message bound naming its variable", o.Err)
	}
}

// TestCrawlBoundsEachServerAcrossPages: endless pages each under the message bound are
// stopped by the listing bound and, with a larger one, by the server bound; the hostile
// server's outcome is refused while the other servers are crawled.
func TestCrawlBoundsEachServerAcrossPages(t *testing.T) {
	pages := &hostile.Server{Mode: hostile.Pages, Size: 900 << 10}
	event := &hostile.Server{Mode: hostile.EndlessEvent}
	body := &hostile.Server{Mode: hostile.Body, Size: 1 << 30}
	good := serve(t, fixture.New(fixture.Tools("t", 3)...))
	targets := []Target{
		loopbackTarget("good", good.URL+"/mcp"),
		loopbackTarget("pages", serve(t, pages).URL+"/mcp"),
		loopbackTarget("event", serve(t, event).URL+"/mcp"),
		loopbackTarget("body", serve(t, body).URL+"/mcp"),
	}
	cfg := Config{Timeout: 20 * time.Second, MaxResponseBytes: 1 << 20, MaxListingBytes: 4 << 20, MaxServerBytes: 6 << 20}
	outs := Crawl(t.Context(), cfg, targets)
	want := map[string]readbound.Kind{"pages": readbound.KindListing, "event": readbound.KindMessage, "body": readbound.KindMessage}
	for _, o := range outs {
		if o.Server == "good" {
			if o.Err != nil || o.Listing == nil || len(o.Listing.Tools) != 3 {
				t.Errorf("good: %v", o.Err)
			}
			continue
		}
		var be *readbound.Error
		if !errors.As(o.Err, &be) || be.Kind != want[o.Server] || o.Listing != nil {
			t.Errorf("%s: %v, want the %s bound", o.Server, o.Err, want[o.Server])
		}
	}
	if n := pages.Lists(); n > 6 {
		t.Errorf("the pages server was asked for %d pages; the listing bound should stop it at 5", n)
	}
	for _, h := range []*hostile.Server{pages, event, body} {
		if h.Sent() > 64<<20 {
			t.Errorf("a hostile server wrote %d bytes before the crawler hung up", h.Sent())
		}
	}

	// With a listing bound above the server bound, the server bound stops the pages.
	pages2 := &hostile.Server{Mode: hostile.Pages, Size: 900 << 10}
	o := CrawlOne(t.Context(), Config{Timeout: 20 * time.Second, MaxResponseBytes: 1 << 20, MaxListingBytes: 1 << 30, MaxServerBytes: 3 << 20},
		loopbackTarget("pages", serve(t, pages2).URL+"/mcp"))
	var be *readbound.Error
	if !errors.As(o.Err, &be) || be.Kind != readbound.KindServer || !strings.Contains(o.Err.Error(), "TOOLWARRANT_CRAWL_MAX_SERVER_BYTES") {
		t.Errorf("server bound: %v", o.Err)
	}
}

// --- the SSRF matrix ---

// sink accepts connections and counts them: every connection a refusal should have
// prevented would land here.
type sink struct {
	ln      net.Listener
	accepts atomic.Int64
}

func newSink(t *testing.T) *sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

// world is a fake internet: names resolve through a table (or a function), public
// addresses in routes are connected to loopback listeners, every other address to the
// sink. Dial only sees addresses the guard allowed.
type world struct {
	sink    *sink
	routes  map[netip.Addr]string // allowed public address → loopback listener
	names   map[string][]netip.Addr
	resolve func(host string) []netip.Addr
	dials   atomic.Int64
	lookups atomic.Int64
}

func (w *world) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	w.lookups.Add(1)
	if w.resolve != nil {
		return w.resolve(host), nil
	}
	if a, ok := w.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (w *world) dial(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	w.dials.Add(1)
	target := w.sink.ln.Addr().String()
	if r, ok := w.routes[addr.Addr()]; ok {
		target = r
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

func (w *world) config() Config {
	return Config{Resolver: w, Dial: w.dial, Timeout: 5 * time.Second}
}

var public = netip.MustParseAddr("93.184.216.34")

func TestSSRFMatrix(t *testing.T) {
	fx := serve(t, fixture.New(fixture.Tools("t", 2)...))
	w := &world{sink: newSink(t), routes: map[netip.Addr]string{public: strings.TrimPrefix(fx.URL, "http://")}}

	// Names that resolve to each refused class.
	classes := []struct {
		name     string
		addr     string
		metadata bool
	}{
		{"loopback", "127.0.0.1", false},
		{"loopback-other", "127.3.4.5", false},
		{"loopback-v6", "::1", false},
		{"rfc1918-10", "10.1.2.3", false},
		{"rfc1918-172", "172.16.5.4", false},
		{"rfc1918-192", "192.168.1.1", false},
		{"cgnat", "100.64.0.1", false},
		{"link-local", "169.254.10.10", false},
		{"link-local-v6", "fe80::1", false},
		{"unspecified", "0.0.0.0", false},
		{"unspecified-v6", "::", false},
		{"multicast", "224.0.0.1", false},
		{"multicast-v6", "ff02::1", false},
		{"ula", "fd12:3456::1", false},
		{"mapped-loopback", "::ffff:127.0.0.1", false},
		{"mapped-rfc1918", "::ffff:10.0.0.1", false},
		{"mapped-link-local", "::ffff:169.254.1.1", false},
		{"metadata-aws", "169.254.169.254", true},
		{"metadata-ecs", "169.254.170.2", true},
		{"metadata-aws-v6", "fd00:ec2::254", true},
		{"mapped-metadata", "::ffff:169.254.169.254", true},
	}
	w.names = map[string][]netip.Addr{"public.example": {public}}
	for _, c := range classes {
		w.names[c.name+".example"] = []netip.Addr{netip.MustParseAddr(c.addr)}
	}
	// A host with one public and one private answer is refused as a whole.
	w.names["mixed.example"] = []netip.Addr{public, netip.MustParseAddr("10.0.0.1")}

	// The control: a public name is crawled, through the fixture.
	if o := CrawlOne(t.Context(), w.config(), Target{Server: warrant.Server{Name: "ok", URL: "http://public.example/mcp"}}); o.Err != nil || len(o.Listing.Tools) != 2 {
		t.Fatalf("public server: %v", o.Err)
	}

	type tcase struct {
		name, url    string
		allowPrivate bool
		metadata     bool
	}
	var cases []tcase
	for _, c := range classes {
		cases = append(cases, tcase{"dns/" + c.name, "http://" + c.name + ".example/mcp", false, c.metadata})
		if c.metadata {
			cases = append(cases, tcase{"dns/" + c.name + "/allow-private", "http://" + c.name + ".example/mcp", true, true})
		}
	}
	cases = append(cases,
		tcase{"dns/mixed-answers", "http://mixed.example/mcp", false, false},
		tcase{"literal/127.0.0.1", "http://127.0.0.1:8080/mcp", false, false},
		tcase{"literal/[::1]", "http://[::1]/mcp", false, false},
		tcase{"literal/[::ffff:127.0.0.1]", "http://[::ffff:127.0.0.1]/mcp", false, false},
		tcase{"literal/169.254.169.254", "http://169.254.169.254/latest/meta-data/", true, true},
		tcase{"literal/[fd00:ec2::254]", "http://[fd00:ec2::254]/", true, true},
		tcase{"spelling/decimal", "http://2130706433/mcp", false, false},
		tcase{"spelling/octal", "http://0177.0.0.1/mcp", false, false},
		tcase{"spelling/hex", "http://0x7f.0.0.1/mcp", false, false},
		tcase{"spelling/short", "http://127.1/mcp", false, false},
		tcase{"spelling/decimal-metadata", "http://2852039166/", true, true},
		tcase{"localhost", "http://localhost:9/mcp", false, false},
		tcase{"userinfo", "http://user:pw@public.example/mcp", false, false},
		tcase{"scheme", "file:///etc/passwd", false, false},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, dialsBefore := w.sink.accepts.Load(), w.dials.Load()
			o := CrawlOne(t.Context(), w.config(), Target{Server: warrant.Server{Name: "x", URL: tc.url, AllowPrivate: tc.allowPrivate}})
			if !errors.Is(o.Err, ErrRefused) {
				t.Fatalf("err = %v, want a refusal", o.Err)
			}
			if !errors.Is(o.Err, netguard.ErrForbiddenAddress) && !errors.Is(o.Err, netguard.ErrInvalidURL) {
				t.Errorf("err = %v, want it to wrap the netguard refusal", o.Err)
			}
			if tc.metadata && !errors.Is(o.Err, netguard.ErrMetadataAddress) {
				t.Errorf("err = %v, want ErrMetadataAddress", o.Err)
			}
			if n := w.dials.Load() - dialsBefore; n != 0 {
				t.Errorf("%d dials reached the connect step", n)
			}
			if n := waitAccepts(w.sink, before); n != 0 {
				t.Errorf("%d connections were accepted", n)
			}
		})
	}
}

// waitAccepts returns the accepts beyond before, after giving any in-flight connection a
// moment to land.
func waitAccepts(s *sink, before int64) int64 {
	time.Sleep(20 * time.Millisecond)
	return s.accepts.Load() - before
}

func TestSSRFRedirectToMetadata(t *testing.T) {
	f := fixture.New()
	f.Redirect = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
	fx := serve(t, f)
	w := &world{sink: newSink(t), routes: map[netip.Addr]string{public: strings.TrimPrefix(fx.URL, "http://")},
		names: map[string][]netip.Addr{"public.example": {public}}}
	for _, allow := range []bool{false, true} {
		o := CrawlOne(t.Context(), w.config(), Target{Server: warrant.Server{Name: "redir", URL: "http://public.example/mcp", AllowPrivate: allow}})
		if !errors.Is(o.Err, ErrRefused) || !errors.Is(o.Err, netguard.ErrMetadataAddress) {
			t.Errorf("allowPrivate=%v: %v, want the redirect to the metadata address refused", allow, o.Err)
		}
	}
	if n := waitAccepts(w.sink, 0); n != 0 {
		t.Errorf("%d connections reached the sink", n)
	}
	if f.Sessions() != 0 {
		t.Error("the redirecting server was treated as an MCP server")
	}
}

func TestSSRFDNSRebinding(t *testing.T) {
	f := fixture.New(fixture.Tools("t", 2)...)
	f.CloseConnections = true // every request dials, and so resolves, again
	fx := serve(t, f)
	w := &world{sink: newSink(t), routes: map[netip.Addr]string{public: strings.TrimPrefix(fx.URL, "http://")}}
	var calls atomic.Int64
	w.resolve = func(string) []netip.Addr {
		if calls.Add(1) == 1 {
			return []netip.Addr{public}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	o := CrawlOne(t.Context(), w.config(), Target{Server: warrant.Server{Name: "rebind", URL: "http://rebind.example/mcp"}})
	if !errors.Is(o.Err, ErrRefused) || !errors.Is(o.Err, netguard.ErrForbiddenAddress) {
		t.Fatalf("rebinding: %v, want the second resolution refused", o.Err)
	}
	if calls.Load() < 2 || w.dials.Load() != 1 {
		t.Errorf("%d lookups, %d dials; want ≥2 lookups and only the first (public) one dialled", calls.Load(), w.dials.Load())
	}
	if n := waitAccepts(w.sink, 0); n != 0 {
		t.Errorf("%d connections reached the sink", n)
	}
}
