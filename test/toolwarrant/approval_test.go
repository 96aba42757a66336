package toolwarrant

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/sshsig"
	"github.com/agentgate-dev/agentgate/internal/testenv"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// world is a catalog with a log key, a trust list of two people and one recorded tool.
type world struct {
	dir     string
	cat     *sqlitestore.Catalog
	svc     *warrant.Service
	log     *keysigner.Signer
	people  map[string]sshsig.Signer
	digest  warrant.Digest
	trustRt string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{dir: t.TempDir(), people: map[string]sshsig.Signer{}}
	var err error
	if w.cat, err = sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: filepath.Join(w.dir, "toolwarrant.db"), Create: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cat.Close() })
	if w.log, err = keysigner.Create(filepath.Join(w.dir, "toolwarrant.db.logkey"), keysigner.Ed25519); err != nil {
		t.Fatal(err)
	}
	w.svc, _ = warrant.New(warrant.Config{Catalog: w.cat, Auditor: &audit.Chainer{Signer: w.log}, Identity: "crawler@test"})
	sk := testenv.LookPath(t, "ssh-keygen")
	var keys []trust.Key
	for _, name := range []string{"alice", "bob"} {
		path := filepath.Join(w.dir, name)
		if out, err := exec.Command(sk, "-q", "-t", "ed25519", "-N", "", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		s, err := sshsig.LoadKeyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		w.people[name] = s
		k, _ := trust.NewKey(name, s.Public().AuthorizedKey())
		keys = append(keys, k)
	}
	head, _ := w.cat.AuditHead(ctx)
	body := fmt.Sprintf(`{"action":"init","list":{"keys":[{"principal":%q,"key":%q,"fingerprint":%q},{"principal":%q,"key":%q,"fingerprint":%q}]},"logKey":%q}`,
		keys[0].Principal, keys[0].Key, keys[0].Fingerprint, keys[1].Principal, keys[1].Key, keys[1].Fingerprint, w.log.KeyID())
	if err := w.svc.RecordEvent(ctx, warrant.Event{Type: trust.EventTrustChanged, Actor: "op", Body: []byte(body)}, head); err != nil {
		t.Fatal(err)
	}
	root, _ := w.cat.AuditHead(ctx)
	w.trustRt = root.Hash
	if _, err := w.svc.AddServer(ctx, warrant.Server{Name: "s", URL: "https://s.example.com/mcp"}); err != nil {
		t.Fatal(err)
	}
	raw, d := catalogtest.Def("t", "one")
	w.digest = d
	for range 3 {
		if _, err := w.svc.Ingest(ctx, warrant.Listing{Server: "s", Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// approve signs and records an approval by name over head.
func (w *world) approve(ctx context.Context, name string, head warrant.AuditHead) error {
	stmt := trust.NewDecision(warrant.DecisionApproved, "s", "t", w.digest, false, name, head, time.Now())
	b, sig, err := trust.Sign(stmt, w.people[name])
	if err != nil {
		return err
	}
	return w.svc.Decide(ctx, warrant.Decision{Server: "s", Tool: "t", Digest: w.digest, Kind: warrant.DecisionApproved, Actor: name,
		Statement: b, Signature: sig, ReadHead: &head})
}

func (w *world) verify(t *testing.T, args ...string) run {
	t.Helper()
	bin, _ := binaries(t)
	return tw(t, bin, w.dir, append([]string{"audit", "verify"}, args...)...)
}

// TestApproversRace: two people approve the same tool over the same head at once: exactly
// one wins, the other is told the log moved, and the chain stays linear.
func TestApproversRace(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	head, _ := w.cat.AuditHead(ctx)
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for _, name := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.approve(ctx, name, head)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	won := 0
	for name, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, warrant.ErrConflict) || !strings.Contains(err.Error(), "moved on"):
			t.Errorf("%s: %v, want to be told the head moved", name, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d approvals won, want 1: %v", won, errs)
	}
	if decs, _ := w.cat.Decisions(ctx, "s", "t"); len(decs) != 1 {
		t.Errorf("%d decisions recorded", len(decs))
	}
	if r := w.verify(t); r.code != 0 {
		t.Errorf("audit verify after the race: %s", r)
	}
}

// TestTamperingCaughtByAuditVerify rewrites the log behind toolwarrant's back, with its
// triggers dropped: a changed body, a deleted entry and two swapped entries are caught by
// audit verify alone; a rewritten history re-signed with the stolen log key only with the
// head or the trust root kept outside the database.
func TestTamperingCaughtByAuditVerify(t *testing.T) {
	setup := func(t *testing.T) (*world, warrant.AuditHead, *sql.DB) {
		w := newWorld(t)
		head, _ := w.cat.AuditHead(t.Context())
		if err := w.approve(t.Context(), "alice", head); err != nil {
			t.Fatal(err)
		}
		raw, _ := catalogtest.Def("t", "one")
		if _, err := w.svc.Ingest(t.Context(), warrant.Listing{Server: "s", Tools: []warrant.RawTool{{Name: "t", Raw: raw}}}); err != nil {
			t.Fatal(err)
		}
		final, _ := w.cat.AuditHead(t.Context())
		if r := w.verify(t, "--head", fmt.Sprintf("%d:%s", final.Seq, final.Hash), "--trust-root", w.trustRt); r.code != 0 {
			t.Fatalf("untouched log: %s", r)
		}
		return w, final, tamperable(t, w)
	}
	for _, tc := range []struct {
		name, sql string
		seq       string
	}{
		{"body changed", `UPDATE audit SET body = CAST(replace(CAST(body AS TEXT), '"crawl":2', '"crawl":7') AS BLOB) WHERE seq = 5`, "entry 5: "},
		{"entry deleted", `DELETE FROM audit WHERE seq = 4`, "entry 5: "},
		{"entries swapped", `UPDATE audit SET seq = 1000 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = 5; UPDATE audit SET seq = 5 WHERE seq = 1000`, "entry 4: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, db := setup(t)
			if _, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			if r := w.verify(t); r.code != 1 || !strings.HasPrefix(r.stdout, tc.seq) {
				t.Errorf("audit verify: %s\nwant the first problem at %q", r, tc.seq)
			}
		})
	}
	t.Run("rewritten and re-signed", func(t *testing.T) {
		w, final, db := setup(t)
		// Rewrite the last entry (a crawl after the last human signature) and re-sign it,
		// and, as a second forgery, the whole log from the trust list on.
		forgeNewest(t, w, db, 4)
		if r := w.verify(t); r.code != 0 {
			t.Fatalf("a re-signed rewrite is consistent on its own; audit verify said: %s", r)
		}
		if r := w.verify(t, "--head", fmt.Sprintf("%d:%s", final.Seq, final.Hash)); r.code != 1 || !strings.Contains(r.stdout, "head you kept") {
			t.Errorf("audit verify --head: %s", r)
		}
		// A rewrite from the very start (a new trust list with the thief's key) is caught
		// by the trust root.
		if _, err := db.Exec(`UPDATE audit SET body = CAST(replace(CAST(body AS TEXT), '"principal":"bob"', '"principal":"mallory"') AS BLOB) WHERE seq = 1`); err != nil {
			t.Fatal(err)
		}
		recs, _ := w.cat.AuditRecords(t.Context(), 0, 1000)
		re, err := rechain(t, w, recs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range re {
			if _, err := db.Exec(`UPDATE audit SET prev_hash = ?, hash = ?, signature = ? WHERE seq = ?`, r.PrevHash, r.Hash, r.Signature, r.Seq); err != nil {
				t.Fatal(err)
			}
		}
		if r := w.verify(t, "--trust-root", w.trustRt); r.code != 1 || !strings.Contains(r.stdout, "trust root you kept") {
			t.Errorf("audit verify --trust-root: %s", r)
		}
	})
}

// tamperable opens w's catalog with the audit log's append-only triggers dropped, as someone
// with write access to the file could; it is closed when the test ends.
func tamperable(t *testing.T, w *world) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+w.cat.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete; DROP TRIGGER audit_head_advances`); err != nil {
		t.Fatal(err)
	}
	return db
}

// forgeNewest rewrites the newest audit entry as a crawl numbered crawl, chained and
// signed with the log key, and points the head at it, as a thief with the log key and
// write access to the catalog would. db is the catalog with the update triggers dropped.
func forgeNewest(t *testing.T, w *world, db *sql.DB, crawl int) {
	t.Helper()
	recs, _ := w.cat.AuditRecords(t.Context(), 0, 1000)
	last := recs[len(recs)-1]
	body := fmt.Sprintf(`{"server":"s","crawl":%d,"observations":[]}`, crawl)
	forged, err := (&audit.Chainer{Signer: w.log}).Chain(t.Context(), warrant.AuditHead{Seq: last.Seq - 1, Hash: last.PrevHash},
		[]warrant.Event{{Type: last.Type, Actor: last.Actor, At: last.At, Body: []byte(body)}})
	if err != nil {
		t.Fatal(err)
	}
	f := forged[0]
	if _, err := db.Exec(`UPDATE audit SET body = ?, hash = ?, signature = ? WHERE seq = ?`, f.Body, f.Hash, f.Signature, f.Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_head SET hash = ? WHERE id = 1`, f.Hash); err != nil {
		t.Fatal(err)
	}
}

// rechain recomputes hashes and log signatures of records with their bodies as stored
// (bodies keep their seq, type, actor and time), as a thief with the log key would.
func rechain(t *testing.T, w *world, recs []warrant.AuditRecord) ([]warrant.AuditRecord, error) {
	prev := warrant.Genesis()
	out := make([]warrant.AuditRecord, len(recs))
	for i, r := range recs {
		h, err := audit.Hash(prev.Hash, r.Body)
		if err != nil {
			return nil, err
		}
		raw := make([]byte, 32)
		fmt.Sscanf(h, "%x", &raw)
		sig, err := w.log.Sign(t.Context(), raw)
		if err != nil {
			return nil, err
		}
		r.PrevHash, r.Hash, r.Signature = prev.Hash, h, sig
		out[i] = r
		prev = warrant.AuditHead{Seq: r.Seq, Hash: h}
	}
	return out, nil
}
