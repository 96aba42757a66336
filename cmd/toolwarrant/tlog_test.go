package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/crawler/fixture"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/tiles/tilestest"
)

// TestTlogTiles: the embedded route publishes its audit log as c2sp.org/tlog-tiles. `audit
// checkpoint --tiles DIR` publishes each checkpoint; `tlog tiles` catches an existing log up
// (only what it gained), rebuilds and checks it, and publishes an export at the newest note
// of a checkpoint directory. An independent client served DIR over loopback HTTP verifies
// the checkpoint under the verifier key `audit key --checkpoint` prints, rebuilds its root
// from the tiles and proves the approval entry from the bundles. A crawl of a server with
// so many tools that its entry outgrows a bundle is refused by name.
func TestTlogTiles(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"TOOLWARRANT_CONFIG_DIR": filepath.Join(dir, "config")}
	f := fixture.New(forecast, alerts)
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, args := range [][]string{{"init"}, {"server", "add", "wx", srv.URL + "/mcp", "--allow-private"}, {"crawl"}} {
		if r := runCLI(t, dir, env, args...); r.code > 1 {
			t.Fatalf("%v: %s", args, r)
		}
	}
	approver := sshKey(t, dir, "approver")
	if r := runCLI(t, dir, env, "trust", "init", "--ssh-key", approver+".pub", "--principal", "approver@example"); r.code != 0 {
		t.Fatalf("trust init: %s", r)
	}
	if r := runCLI(t, dir, env, "approve", "wx", "get_forecast", "--hash", string(digestOf(t, forecast)), "--sign-key", approver); r.code != 0 {
		t.Fatalf("approve: %s", r)
	}

	tilesDir := filepath.Join(dir, "www")
	cps := filepath.Join(dir, "checkpoints")
	r := runCLI(t, dir, env, "audit", "checkpoint", "--dir", cps, "--tiles", tilesDir)
	if r.code != 0 || !strings.Contains(r.stdout, "published tree ") || !strings.Contains(r.stdout, "to "+tilesDir) {
		t.Fatalf("audit checkpoint --tiles: %s", r)
	}
	vkey := strings.TrimSpace(runCLI(t, dir, env, "audit", "key", "--checkpoint").stdout)
	web := httptest.NewServer(http.FileServer(http.Dir(tilesDir)))
	defer web.Close()
	first := proveApproval(t, web.URL+"/", vkey)
	if note, _ := os.ReadFile(filepath.Join(cps, first.Size64()+".note")); string(note) != string(first.Note) {
		t.Errorf("the served checkpoint is not %s.note", first.Size64())
	}

	// The log grows (a reworded tool is recorded); tlog tiles catches up.
	f.SetTools(rugged, alerts)
	if r := runCLI(t, dir, env, "crawl"); r.code > 1 {
		t.Fatalf("crawl: %s", r)
	}
	r = runCLI(t, dir, env, "tlog", "tiles", "--out", tilesDir, "--json")
	var res struct {
		Size, Previous, Read int64
		Checkpoint           bool
		Vkey                 string
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || !res.Checkpoint || res.Previous != first.Size || res.Size <= first.Size ||
		res.Read != res.Size || res.Vkey != vkey {
		t.Fatalf("tlog tiles --json after growth: %s (%+v)", r, res)
	}
	second := proveApproval(t, web.URL+"/", vkey)
	if second.Size != res.Size {
		t.Errorf("served size %d, published %d", second.Size, res.Size)
	}
	docsTilesVerifier(t, web.URL+"/", vkey, tilesDir)
	if r := runCLI(t, dir, env, "tlog", "tiles"); r.code != 2 || !strings.Contains(r.stderr, "--out is required") {
		t.Errorf("tlog tiles without --out: %s", r)
	}
	env["TOOLWARRANT_TILES_DIR"] = tilesDir
	if r := runCLI(t, dir, env, "tlog", "tiles", "--rebuild"); r.code != 0 || !strings.Contains(r.stdout, "up to date") {
		t.Errorf("tlog tiles --rebuild (TOOLWARRANT_TILES_DIR): %s", r)
	}
	delete(env, "TOOLWARRANT_TILES_DIR")

	// An export, published at the newest checkpoint note of the checkpoint directory (no
	// checkpoint key needed: what an AWS log's auditor does with its bucket).
	exp := runCLI(t, dir, env, "audit", "export")
	writeFile(t, filepath.Join(dir, "audit.jsonl"), exp.stdout)
	other := filepath.Join(dir, "www2")
	if r := runCLI(t, dir, nil, "tlog", "tiles", "--export", filepath.Join(dir, "audit.jsonl"), "--checkpoints", cps, "--vkey", vkey, "--out", other); r.code != 0 ||
		!strings.Contains(r.stdout, "published tree "+first.Size64()+" ") {
		t.Fatalf("tlog tiles --export --checkpoints: %s", r)
	}
	web2 := httptest.NewServer(http.FileServer(http.Dir(other)))
	defer web2.Close()
	if l := proveApproval(t, web2.URL+"/", vkey); l.Size != first.Size {
		t.Errorf("published at size %d, want the note's %d", l.Size, first.Size)
	}

	// The tiles of a rewritten log are refused: an export whose approval was edited.
	forged := strings.ReplaceAll(exp.stdout, `"approved"`, `"rejected"`)
	writeFile(t, filepath.Join(dir, "forged.jsonl"), forged)
	if r := runCLI(t, dir, nil, "tlog", "tiles", "--export", filepath.Join(dir, "forged.jsonl"), "--checkpoints", cps, "--vkey", vkey, "--out", other); r.code != 1 {
		t.Errorf("a forged export: %s, want exit 1", r)
	}

	// A server of 1,500 tools: one entry listing every tool would be more than a bundle
	// holds, so the crawl writes its observations as several crawl_observed entries, each
	// within warrant.MaxObservedBody, and the tiles keep up.
	f.SetTools(fixture.Tools("tool", 1500)...)
	if r := runCLI(t, dir, env, "crawl"); r.code > 1 {
		t.Fatalf("crawl of 1,500 tools: %s", r)
	}
	r = runCLI(t, dir, env, "tlog", "tiles", "--out", tilesDir)
	if r.code != 0 {
		t.Fatalf("tlog tiles after a crawl of 1,500 tools: %s", r)
	}
	if l := tilestest.Open(t, tilestest.Prefix(web.URL+"/"), vkey); l.Size <= second.Size {
		t.Errorf("after the large crawl the served checkpoint is size %d, want more than %d", l.Size, second.Size)
	}
	parts, tools := 0, map[string]bool{}
	for _, line := range strings.Split(runCLI(t, dir, env, "audit", "export").stdout, "\n") {
		var e struct {
			Type string
			Body json.RawMessage
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Type != "crawl_observed" {
			continue
		}
		var b struct {
			Crawl        int64
			Part, Parts  int
			Observations []struct{ Tool string }
		}
		var entry struct{ Event json.RawMessage }
		if err := json.Unmarshal(e.Body, &entry); err != nil || json.Unmarshal(entry.Event, &b) != nil {
			t.Fatalf("a crawl_observed entry: %v: %.300s", err, e.Body)
		}
		if b.Parts > 1 {
			parts++
			for _, o := range b.Observations {
				tools[o.Tool] = true
			}
		}
	}
	if parts < 2 || len(tools) != 1500 {
		t.Errorf("the large crawl's entries: %d parts naming %d tools, want several parts naming all 1,500", parts, len(tools))
	}
	if r := runCLI(t, dir, env, "audit", "verify"); r.code != 0 {
		t.Errorf("audit verify after the split crawl: %s", r)
	}
}

type served struct{ *tilestest.Log }

// Size64 is the served tree size in decimal.
func (s served) Size64() string { return strconv.FormatInt(s.Size, 10) }

// proveApproval reads the tiled log at prefix as an independent client and proves its
// first approval.
func proveApproval(t *testing.T, prefix, vkey string) served {
	t.Helper()
	l := tilestest.Open(t, tilestest.Prefix(prefix), vkey)
	entries := l.Entries(t)
	i := tilestest.Find(entries, `"type":"approved"`)
	if i < 0 {
		t.Fatalf("no approval among the %d published entries", len(entries))
	}
	l.Prove(t, i, entries[i])
	return served{l}
}

// docsTilesVerifier runs the tile client docs/transparency-log.md shows (kept byte for byte
// in testdata/tilesverify) against the log served at prefix from dir: it proves and prints
// the approval, and fails once a byte of the served bundle changes.
func docsTilesVerifier(t *testing.T, prefix, vkey, dir string) {
	t.Helper()
	root := testenv.RepoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "cmd/toolwarrant/testdata/tilesverify/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/transparency-log.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(src)+"```\n") {
		t.Fatal("docs/transparency-log.md does not show cmd/toolwarrant/testdata/tilesverify/main.go as it is")
	}
	l := tilestest.Open(t, tilestest.Prefix(prefix), vkey)
	entries := l.Entries(t)
	seq := strconv.FormatInt(tilestest.Find(entries, `"type":"approved"`)+1, 10)
	bin := testenv.BuildCommand(t, "./cmd/toolwarrant/testdata/tilesverify")
	out, err := exec.Command(bin, prefix, vkey, seq).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "entry "+seq+" of ") || !strings.Contains(string(out), `"type":"approved"`) {
		t.Fatalf("tilesverify: %v\n%s", err, out)
	}
	bundle := filepath.Join(dir, "tile", "entries", "000.p", strconv.FormatInt(l.Size, 10))
	orig, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(strings.Replace(string(orig), `"type":"approved"`, `"type":"rejected"`, 1))
	writeFile(t, bundle, string(forged))
	defer writeFile(t, bundle, string(orig))
	if out, err := exec.Command(bin, prefix, vkey, seq).CombinedOutput(); err == nil {
		t.Errorf("tilesverify accepted an altered bundle:\n%s", out)
	}
}
