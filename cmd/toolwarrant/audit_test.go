package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestAuditVerifyHeadPrintsWholeHashes pins issue 34 item 7: a kept head whose hash
// differs from the log's only after the 12th digit prints both hashes whole, so the two
// do not read as the same hash.
func TestAuditVerifyHeadPrintsWholeHashes(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(fixture.New(forecast))
	defer srv.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}} {
		if r := runCLI(t, dir, nil, args...); r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	runCLI(t, dir, nil, "crawl")
	r := runCLI(t, dir, nil, "audit", "verify", "--json")
	var rep struct{ Head warrant.AuditHead }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Head.Seq == 0 {
		t.Fatalf("audit verify --json: %v %s", err, r)
	}
	last := "0"
	if strings.HasSuffix(rep.Head.Hash, "0") {
		last = "1"
	}
	kept := rep.Head.Hash[:63] + last
	r = runCLI(t, dir, nil, "audit", "verify", "--head", fmt.Sprintf("%d:%s", rep.Head.Seq, kept))
	want := fmt.Sprintf("entry %d: hash %s differs from the head you kept (%s): the history up to here was rewritten\n", rep.Head.Seq, rep.Head.Hash, kept)
	if r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("audit verify --head with the last digit changed: want %q in stdout\n%s", want, r)
	}
}
