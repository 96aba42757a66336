package scale_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// fleet is N fake MCP servers (internal/crawler/fixture) behind one loopback httptest
// server, server i at /s/<i>/mcp, each listing its own tools.
type fleet struct {
	srv     *httptest.Server
	servers []*fixture.Server
	// defs are the tools each server lists now.
	defs  [][]string
	tools int
	// lastList is when the fleet last answered a tools/list (UnixNano): the end of a
	// crawl's listing step.
	lastList atomic.Int64
}

func newFleet(t testing.TB, n, tools int) *fleet {
	t.Helper()
	f := &fleet{tools: tools}
	for i := range n {
		defs := fixture.Tools(fmt.Sprintf("s%04d_t", i), tools)
		f.defs = append(f.defs, defs)
		f.servers = append(f.servers, fixture.New(defs...))
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fleet) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/s/")
	num, tail, _ := strings.Cut(rest, "/")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || tail != "mcp" || i < 0 || i >= len(f.servers) {
		http.NotFound(w, r)
		return
	}
	before := f.servers[i].Lists()
	f.servers[i].ServeHTTP(w, r)
	if f.servers[i].Lists() != before {
		f.lastList.Store(time.Now().UnixNano())
	}
}

// name is server i's catalog name.
func name(i int) string { return fmt.Sprintf("srv-%04d", i) }

// catalog is the fleet as TOOLWARRANT_SERVERS lists it.
func (f *fleet) catalog() []warrant.Server {
	out := make([]warrant.Server, len(f.servers))
	for i := range f.servers {
		out[i] = warrant.Server{Name: name(i), URL: f.srv.URL + "/s/" + strconv.Itoa(i) + "/mcp", AllowPrivate: true}
	}
	return out
}

// drift rewords one tool of each of the first n servers (generation gen), so the next
// crawl records one new version for each.
func (f *fleet) drift(n, gen int) {
	for i := range min(n, len(f.servers)) {
		tools := fixture.Tools(fmt.Sprintf("s%04d_t", i), f.tools)
		tools[0] = strings.Replace(tools[0], "Look up record", fmt.Sprintf("Look up (revision %d) record", gen), 1)
		f.defs[i] = tools
		f.servers[i].SetTools(tools...)
	}
}
