package trust

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// TestStepBulk: audit verify's check of a bulk approval. Its entries, one per listed
// tool, each carrying the one statement, in list order right after the head the
// statement names, pass. An entry that approves a tool or digest not on the list, an
// entry out of order or after another entry, a run cut short, and a bulk statement on a
// single decision are each reported.
func TestStepBulk(t *testing.T) {
	s := newSigner(t)
	list := List{Keys: []Key{key(t, "alice", s)}}
	dig := func(i int) warrant.Digest { return warrant.Digest(fmt.Sprintf("sha256:%064x", i)) }
	items := []warrant.BulkItem{{Tool: "a", Digest: dig(1)}, {Tool: "b", Digest: dig(2)}, {Tool: "c", Digest: dig(3)}}
	head := warrant.AuditHead{Seq: 10, Hash: strings.Repeat("0", 64)}
	stmt, sig, err := Sign(NewBulkApproval("s", items, "alice", head, time.Now()), s)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		typ, tool string
		digest    warrant.Digest
		item      int // -1: no item member
		items     int
	}
	// run steps the entries as records 11, 12, … chained from head and returns the
	// problems of each.
	run := func(es ...entry) [][]string {
		st := State{List: &list}
		prev := head
		var out [][]string
		for i, e := range es {
			body := map[string]any{"server": "s", "tool": e.tool, "digest": e.digest, "acceptedSuspicious": false,
				"statement": json.RawMessage(stmt), "signature": string(sig), "items": e.items}
			if e.item >= 0 {
				body["item"] = e.item
			}
			b, _ := json.Marshal(body)
			r := warrant.AuditRecord{Seq: head.Seq + int64(i) + 1, Type: e.typ, Actor: "alice", PrevHash: prev.Hash, Hash: fmt.Sprintf("%064x", 100+i)}
			out = append(out, st.Step(r, b))
			prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
		}
		return out
	}
	ok := func(what string, ps [][]string) {
		t.Helper()
		for i, p := range ps {
			if len(p) > 0 {
				t.Errorf("%s: entry %d: %q", what, i, p)
			}
		}
	}
	bad := func(what string, ps [][]string, at int, want string) {
		t.Helper()
		if !slices.ContainsFunc(ps[at], func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("%s: entry %d: %q, want a problem %q", what, at, ps[at], want)
		}
	}
	a := entry{"approved", "a", dig(1), 0, 3}
	b := entry{"approved", "b", dig(2), 1, 3}
	c := entry{"approved", "c", dig(3), 2, 3}
	ok("the whole list in order", run(a, b, c))

	bad("a tool not on the list", run(a, b, entry{"approved", "x", dig(3), 2, 3}), 2, "does not describe")
	bad("another digest", run(a, b, entry{"approved", "c", dig(9), 2, 3}), 2, "does not describe")
	bad("out of order", run(a, c, b), 1, "does not follow")
	bad("a rejection", run(a, entry{"rejected", "b", dig(2), 1, 3}, c), 1, "does not describe")
	bad("a run cut short", run(a, b, entry{"crawl_observed", "", "", -1, 0}), 2, "stop at entry 12")
	bad("the first entry not right after the head", run(entry{"approved", "b", dig(2), 1, 3}), 0, "does not follow")
	bad("no item member", run(entry{"approved", "a", dig(1), -1, 3}), 0, "does not describe")
	bad("a wrong count", run(entry{"approved", "a", dig(1), 0, 2}), 0, "does not describe")
	bad("an item past the list", run(a, b, c, entry{"approved", "c", dig(3), 3, 3}), 3, "does not describe")

	// The statement is an OpenSSH signature in the approval namespace, over canonical JSON.
	parsed, k, err := Check(list, stmt, sig)
	if err != nil || k.Principal != "alice" || parsed.Type != TypeBulk || !slices.Equal(parsed.Approvals, items) || parsed.AuditHead != head {
		t.Errorf("Check: %+v %v", parsed, err)
	}
}
