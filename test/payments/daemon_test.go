package payments

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/app"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// The base chain is one ganache on Base's chain ID (8453), shared by every test of the
// binary and stopped by PID in TestMain.
var base struct {
	once sync.Once
	g    *ganache
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if base.g != nil {
		base.g.stop()
	}
	os.Exit(code)
}

func baseChain(t testing.TB) *ganache {
	t.Helper()
	node, cli := ganacheCommand(t)
	base.once.Do(func() { base.g, base.err = startGanache(node, cli, 8453) })
	if base.err != nil {
		t.Fatal(base.err)
	}
	return base.g
}

// otherChain starts a ganache of its own for chainID, stopped by PID when the test ends.
func otherChain(t testing.TB, chainID uint64) *ganache {
	t.Helper()
	node, cli := ganacheCommand(t)
	g, err := startGanache(node, cli, chainID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.stop)
	return g
}

// proxy forwards JSON-RPC to a node and counts the calls by method, so tests can prove that
// a request never reached the provider.
type proxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{calls: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		p.mu.Lock()
		p.calls[req.Method]++
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *proxy) count(method string) int { p.mu.Lock(); defer p.mu.Unlock(); return p.calls[method] }

func (p *proxy) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += c
	}
	return n
}

// daemon is the real lockerd handler (app.LockerHandler, payments built from the config as
// lockerd does) over SQLite in a temporary directory, served over loopback HTTP.
type daemon struct {
	t     testing.TB
	url   string
	db    string
	store *sqlitestore.Store
}

type daemonOptions struct {
	rpcURL string
	wallet string
	token  string
	// wrap, when set, wraps the store the handler uses (failure injection).
	wrap func(locker.Store) locker.Store
}

func newDaemon(t testing.TB, o daemonOptions) *daemon {
	t.Helper()
	db := filepath.Join(t.TempDir(), "locker.db")
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := map[string]string{"LOCKER_MODE": "txid", "BASE_RPC_URL": o.rpcURL, "PAYMENT_WALLET_ADDRESS": o.wallet,
		"USDC_CONTRACT": o.token, "REQUIRED_USDC_UNITS": "2000"}
	cfg, err := config.LoadLocker(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var store locker.Store = st
	if o.wrap != nil {
		store = o.wrap(st)
	}
	h, err := app.LockerHandler(t.Context(), cfg, store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &daemon{t: t, url: srv.URL, db: db, store: st}
}

type reply struct {
	status int
	header http.Header
	body   string
}

var client = &http.Client{Timeout: 30 * time.Second}

func (d *daemon) do(method, path, body string, header ...string) reply {
	d.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, d.url+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// create posts a pad create with the proof (none when proof is "-").
func (d *daemon) create(proof string) reply {
	d.t.Helper()
	if proof == "-" {
		return d.do(http.MethodPost, "/v1/pads", `{"ttl_seconds":600,"max_blocks":4}`)
	}
	return d.do(http.MethodPost, "/v1/pads", `{"ttl_seconds":600,"max_blocks":4}`, "X-Payment-Proof", proof)
}

// receiptRow is a payment_receipts row, read straight from the SQLite file.
type receiptRow struct {
	TxHash, PadID, AmountUnits, Payer string
}

func (d *daemon) receipts() []receiptRow {
	d.t.Helper()
	db, err := sql.Open("sqlite", "file:"+d.db+"?mode=ro")
	if err != nil {
		d.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT tx_hash, pad_id, amount_units, payer FROM payment_receipts ORDER BY tx_hash`)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rows.Close()
	var out []receiptRow
	for rows.Next() {
		var r receiptRow
		if err := rows.Scan(&r.TxHash, &r.PadID, &r.AmountUnits, &r.Payer); err != nil {
			d.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		d.t.Fatal(err)
	}
	return out
}

// pads is the number of pads, the demo pad included.
func (d *daemon) pads() int {
	d.t.Helper()
	h, err := d.store.Health(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	return h.Pads.Total
}

// exec runs SQL on the daemon's database through a connection of its own (fault injection).
func (d *daemon) exec(query string) {
	d.t.Helper()
	db, err := sql.Open("sqlite", "file:"+d.db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		d.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), query); err != nil {
		d.t.Fatalf("%s: %v", query, err)
	}
}

func (d *daemon) health() (int, string) {
	d.t.Helper()
	r := d.do(http.MethodGet, "/health", "")
	var body struct {
		RPC json.RawMessage `json:"rpc"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		d.t.Fatalf("health body %q: %v", r.body, err)
	}
	return r.status, string(body.RPC)
}
