package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/evmrpc"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/payment"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

// These tests drive the real handler over SQLite with a scripted JSON-RPC server, for the
// provider failures a real node cannot produce on demand. The happy path against a real
// chain is in test/payments.

const (
	testWallet = "0xAbCdEf0123456789aBcDeF0123456789ABCDEF01"
	testToken  = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	testPayer  = "0x90f8bf6a479f320ead074411a4b0e7944ea8c9c1"
)

func hash(b byte) string { return "0x" + strings.Repeat(fmt.Sprintf("%02x", b), 32) }

// node is a scripted JSON-RPC server. chainID answers eth_chainId; receipt answers
// eth_getTransactionReceipt with the raw "result" JSON, or fails the way fail says.
type node struct {
	srv     *httptest.Server
	mu      sync.Mutex
	chainID string
	fail    string                   // "", "timeout", "rpcerror", "http500", "garbage"
	receipt func(hash string) string // raw result JSON
	calls   atomic.Int32
}

func newNode(t *testing.T) *node {
	t.Helper()
	n := &node{chainID: "0x2105", receipt: func(string) string { return "null" }}
	release := make(chan struct{})
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.calls.Add(1)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []string        `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		n.mu.Lock()
		fail, chainID, receipt := n.fail, n.chainID, n.receipt
		n.mu.Unlock()
		result := `"` + chainID + `"`
		if req.Method == "eth_getTransactionReceipt" {
			result = receipt(req.Params[0])
		}
		switch fail {
		case "timeout":
			select {
			case <-release:
			case <-time.After(2 * time.Second):
			}
			return
		case "rpcerror":
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32603,"message":"internal: upstream https://secret.example/KEY failed"}}`)
			return
		case "http500":
			http.Error(w, "upstream exploded at https://secret.example/KEY", http.StatusInternalServerError)
			return
		case "garbage":
			_, _ = io.WriteString(w, `<html>502 Bad Gateway</html>`)
			return
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`)
	}))
	t.Cleanup(func() { close(release); n.srv.Close() })
	return n
}

func (n *node) set(fn func(n *node)) { n.mu.Lock(); defer n.mu.Unlock(); fn(n) }

// paying answers every hash in ok with a receipt paying amount units to the wallet.
func paying(amount uint64, ok ...string) func(string) string {
	return func(h string) string {
		for _, o := range ok {
			if strings.EqualFold(h, o) {
				return fmt.Sprintf(`{"transactionHash":%q,"status":"0x1","logs":[{"address":%q,"topics":[%q,"0x000000000000000000000000%s","0x000000000000000000000000%s"],"data":"0x%064x"}]}`,
					h, strings.ToLower(testToken), payment.TransferTopic, testPayer[2:], strings.ToLower(testWallet[2:]), amount)
			}
		}
		return "null"
	}
}

type rig struct {
	t     *testing.T
	h     http.Handler
	store locker.Store
	node  *node
}

// flakyStore fails CreatePad while failCreate is set, after the payment was verified.
type flakyStore struct {
	locker.Store
	failCreate atomic.Bool
}

func (s *flakyStore) CreatePad(ctx context.Context, np locker.NewPad) error {
	if s.failCreate.Load() {
		return errors.New("injected: disk full")
	}
	return s.Store.CreatePad(ctx, np)
}

func newRig(t *testing.T, wallet string) (*rig, *flakyStore) {
	t.Helper()
	n := newNode(t)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: t.TempDir() + "/locker.db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fs := &flakyStore{Store: st}
	rpc, err := evmrpc.New(evmrpc.Config{URL: n.srv.URL, ReceiptTimeout: 300 * time.Millisecond, ChainIDTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pay, err := NewPayments(PaymentsConfig{Store: fs, RPC: rpc, Wallet: wallet, Token: testToken, RequiredUnits: 2000})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadLocker(func(k string) string { return map[string]string{"LOCKER_MODE": "txid"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	h, err := LockerHandler(t.Context(), cfg, fs, pay, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, h: h, store: st, node: n}, fs
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (r *rig) create(proof string, body ...string) reply {
	r.t.Helper()
	b := `{"ttl_seconds":60}`
	if len(body) > 0 {
		b = body[0]
	}
	req := httptest.NewRequestWithContext(r.t.Context(), http.MethodPost, "/v1/pads", strings.NewReader(b))
	if proof != "-" {
		req.Header.Set("X-Payment-Proof", proof)
	}
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	return reply{w.Code, w.Header(), w.Body.String()}
}

func (r *rig) pads() int {
	r.t.Helper()
	h, err := r.store.Health(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return h.Pads.Total
}

func (r *rig) health() (int, string) {
	req := httptest.NewRequestWithContext(r.t.Context(), http.MethodGet, "/health", nil)
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	var body struct {
		RPC json.RawMessage `json:"rpc"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	return w.Code, string(body.RPC)
}

const (
	unreachable = `{"detail":"rpc provider unreachable"}`
	configError = `{"detail":"payment configuration error"}`
)

func TestAdmitBeforeRPC(t *testing.T) {
	challenge := `{"error":"payment_required","network":"base","chain_id":8453,"currency":"USDC","token_contract":"` + testToken +
		`","amount":"0.002","amount_units":2000,"recipient":"` + testWallet + `","instructions":"Send 0.002 USDC on Base to ` + testWallet +
		`, then retry with the header X-Payment-Proof: <transaction_hash>."}`
	tests := []struct {
		name, wallet, proof, body string
		status                    int
		want                      string
	}{
		{name: "no wallet, no proof", proof: "-", status: 500, want: configError},
		{name: "no wallet, a proof", proof: hash(1), status: 500, want: configError},
		{name: "no wallet, malformed proof", proof: "0x1234", status: 500, want: configError},
		{name: "no header", wallet: testWallet, proof: "-", status: 402, want: challenge},
		{name: "blank header", wallet: testWallet, proof: "   ", status: 402, want: challenge},
		{name: "short", wallet: testWallet, proof: "0x1234", status: 400, want: `{"detail":"payment verification failed: invalid transaction format"}`},
		{name: "no prefix", wallet: testWallet, proof: strings.Repeat("11", 32), status: 400, want: `{"detail":"payment verification failed: invalid transaction format"}`},
		{name: "two hashes", wallet: testWallet, proof: hash(1) + "," + hash(2), status: 400, want: `{"detail":"payment verification failed: invalid transaction format"}`},
		{name: "body checked first", wallet: testWallet, proof: "-", body: `{"ttl_seconds":0}`, status: 422, want: `{"error":"unprocessable","detail":"invalid request body"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRig(t, tc.wallet)
			var got reply
			if tc.body != "" {
				got = r.create(tc.proof, tc.body)
			} else {
				got = r.create(tc.proof)
			}
			if got.status != tc.status || got.body != tc.want {
				t.Errorf("create = %d %s, want %d %s", got.status, got.body, tc.status, tc.want)
			}
			if tc.status == 402 {
				want := `Locker-Txid network="base", token="USDC", amount="0.002", recipient="` + testWallet + `"`
				if got := got.header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != want {
					t.Errorf("WWW-Authenticate = %q, want %q", got, want)
				}
			}
			if n := r.node.calls.Load(); n != 0 {
				t.Errorf("%d RPC calls, want none", n)
			}
			if p := r.pads(); p != 1 {
				t.Errorf("%d pads, want only the demo pad", p)
			}
		})
	}
}

func TestAdmitPaysOnceAnySpelling(t *testing.T) {
	r, _ := newRig(t, testWallet)
	tx := "0x" + strings.Repeat("aB", 32)
	r.node.set(func(n *node) { n.receipt = paying(2000, tx) })
	if got := r.create(tx); got.status != 201 {
		t.Fatalf("create = %d %s", got.status, got.body)
	}
	if ok, err := r.store.HasReceipt(t.Context(), strings.ToLower(tx)); err != nil || !ok {
		t.Fatalf("receipt under the lower-case key: %v, %v", ok, err)
	}
	calls := r.node.calls.Load()
	for _, spelling := range []string{tx, strings.ToLower(tx), "0x" + strings.ToUpper(tx[2:])} {
		if got := r.create(spelling); got.status != 409 || got.body != `{"detail":"payment already redeemed"}` {
			t.Errorf("replay %s = %d %s, want 409", spelling, got.status, got.body)
		}
	}
	if r.node.calls.Load() != calls {
		t.Errorf("a replay reached the RPC provider")
	}
	if p := r.pads(); p != 2 {
		t.Errorf("%d pads, want demo + 1", p)
	}
}

func TestAdmitRejections(t *testing.T) {
	tests := []struct {
		name    string
		receipt func(string) string
		reason  string
	}{
		{name: "not found", receipt: func(string) string { return "null" }, reason: "transaction not found"},
		{name: "reverted", receipt: func(h string) string { return `{"transactionHash":"` + h + `","status":"0x0","logs":[]}` }, reason: "transaction reverted"},
		{name: "underpaid", receipt: paying(1999, hash(3)), reason: "underpaid: 1999 units < 2000 required"},
		{name: "no transfer", receipt: func(h string) string { return `{"transactionHash":"` + h + `","status":"0x1","logs":[]}` }, reason: "no USDC transfer to the payment wallet found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRig(t, testWallet)
			r.node.set(func(n *node) { n.receipt = tc.receipt })
			want := `{"detail":"payment verification failed: ` + tc.reason + `"}`
			if got := r.create(hash(3)); got.status != 402 || got.body != want || got.header.Get("WWW-Authenticate") != "" {
				t.Errorf("create = %d %s %v, want 402 %s", got.status, got.body, got.header, want)
			}
			if p := r.pads(); p != 1 {
				t.Errorf("%d pads, want only the demo pad", p)
			}
		})
	}
}

// TestProviderFailures: every provider failure is the same sanitised 502, creates nothing,
// and leaves the proof redeemable once the provider recovers.
func TestProviderFailures(t *testing.T) {
	tests := []struct {
		name  string
		cold  bool // fail eth_chainId too: the chain check has not passed yet
		setup func(n *node)
	}{
		{name: "timeout", setup: func(n *node) { n.fail = "timeout" }},
		{name: "chain id timeout", cold: true, setup: func(n *node) { n.fail = "timeout" }},
		{name: "chain id json-rpc error", cold: true, setup: func(n *node) { n.fail = "rpcerror" }},
		{name: "json-rpc error", setup: func(n *node) { n.fail = "rpcerror" }},
		{name: "http 500", setup: func(n *node) { n.fail = "http500" }},
		{name: "not json", setup: func(n *node) { n.fail = "garbage" }},
		{name: "result a string", setup: func(n *node) { n.receipt = func(string) string { return `"0x1"` } }},
		{name: "receipt of another tx", setup: func(n *node) { n.receipt = paying(2000, hash(9)); n.receipt = swapHash(n.receipt, hash(9)) }},
		{name: "amount not a word", setup: func(n *node) {
			n.receipt = func(h string) string {
				return strings.Replace(paying(2000, h)(h), fmt.Sprintf("0x%064x", 2000), "0x7d0", 1)
			}
		}},
		{name: "chain id not a quantity", cold: true, setup: func(n *node) { n.chainID = "base" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRig(t, testWallet)
			tx := hash(4)
			r.node.set(func(n *node) { n.receipt = paying(2000, tx) })
			if !tc.cold {
				if _, rpc := r.health(); !strings.Contains(rpc, "true") { // remembers the chain
					t.Fatalf("health rpc = %s", rpc)
				}
			}
			r.node.set(tc.setup)
			calls := r.node.calls.Load()
			start := time.Now()
			got := r.create(tx)
			if got.status != 502 || got.body != unreachable {
				t.Fatalf("create = %d %s, want 502 %s", got.status, got.body, unreachable)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
			if n := r.node.calls.Load() - calls; n != 1 {
				t.Errorf("%d RPC calls, want 1 (no retry)", n)
			}
			if p := r.pads(); p != 1 {
				t.Errorf("%d pads after a provider failure, want only the demo pad", p)
			}
			r.node.set(func(n *node) { n.fail, n.chainID, n.receipt = "", "0x2105", paying(2000, tx) })
			if got := r.create(tx); got.status != 201 {
				t.Errorf("after recovery create = %d %s, want 201", got.status, got.body)
			}
		})
	}
}

// swapHash makes every receipt name the transaction other instead of the one asked for.
func swapHash(fn func(string) string, other string) func(string) string {
	return func(string) string { return fn(other) }
}

func TestWrongChain(t *testing.T) {
	r, _ := newRig(t, testWallet)
	tx := hash(5)
	r.node.set(func(n *node) { n.chainID, n.receipt = "0x1", paying(5000, tx) })
	if got := r.create(tx); got.status != 500 || got.body != configError {
		t.Errorf("create on chain 1 = %d %s, want 500 %s", got.status, got.body, configError)
	}
	if status, rpc := r.health(); status != 200 || rpc != `{"network":"base","reachable":false}` {
		t.Errorf("health = %d %s", status, rpc)
	}
	if p := r.pads(); p != 1 {
		t.Errorf("%d pads, want only the demo pad", p)
	}
	r.node.set(func(n *node) { n.chainID = "0x2105" })
	if got := r.create(tx); got.status != 201 {
		t.Errorf("on Base create = %d %s", got.status, got.body)
	}
}

func TestHealthProbe(t *testing.T) {
	r, _ := newRig(t, testWallet)
	if status, rpc := r.health(); status != 200 || rpc != `{"network":"base","reachable":true}` {
		t.Errorf("health = %d %s", status, rpc)
	}
	r.node.set(func(n *node) { n.fail = "timeout" })
	start := time.Now()
	if status, rpc := r.health(); status != 200 || rpc != `{"network":"base","reachable":false}` {
		t.Errorf("health with a hung node = %d %s", status, rpc)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("health took %v with a hung node, want the probe timeout", d)
	}
}

// TestStoreFailureKeepsProof: a create that fails after the payment was verified commits
// nothing, so the same proof pays for the retry.
func TestStoreFailureKeepsProof(t *testing.T) {
	r, fs := newRig(t, testWallet)
	tx := hash(6)
	r.node.set(func(n *node) { n.receipt = paying(2000, tx) })
	fs.failCreate.Store(true)
	if got := r.create(tx); got.status != 500 || strings.Contains(got.body, "disk") {
		t.Errorf("create with a failing store = %d %s, want a generic 500", got.status, got.body)
	}
	if ok, _ := r.store.HasReceipt(t.Context(), tx); ok || r.pads() != 1 {
		t.Fatalf("a failed create left a receipt or a pad")
	}
	fs.failCreate.Store(false)
	if got := r.create(tx); got.status != 201 {
		t.Errorf("retry = %d %s, want 201", got.status, got.body)
	}
}

// TestRace: eight creates with one proof, at once: exactly one pad, the rest 409.
func TestRace(t *testing.T) {
	r, _ := newRig(t, testWallet)
	tx := hash(7)
	r.node.set(func(n *node) { n.receipt = paying(2000, tx) })
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() { statuses[i] = r.create(tx).status })
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 409:
		default:
			t.Errorf("status %d in race", s)
		}
	}
	if created != 1 || r.pads() != 2 {
		t.Errorf("statuses %v, %d pads: want exactly one 201 and one new pad", statuses, r.pads()-1)
	}
}

func TestNewPaymentsRefusesBadTerms(t *testing.T) {
	st := &flakyStore{}
	rpc, _ := evmrpc.New(evmrpc.Config{URL: "http://127.0.0.1:1"})
	for _, cfg := range []PaymentsConfig{
		{RPC: rpc, Token: testToken, RequiredUnits: 1},
		{Store: st, Token: testToken, RequiredUnits: 1},
		{Store: st, RPC: rpc, Token: "usdc", RequiredUnits: 1},
		{Store: st, RPC: rpc, Token: testToken},
		{Store: st, RPC: rpc, Wallet: "0x12", Token: testToken, RequiredUnits: 1},
	} {
		if _, err := NewPayments(cfg); err == nil {
			t.Errorf("NewPayments(%+v) accepted", cfg)
		}
	}
	if _, err := NewPayments(PaymentsConfig{Store: st, RPC: rpc, Token: testToken, RequiredUnits: 1}); err != nil {
		t.Errorf("an unset wallet must be allowed (refused per request): %v", err)
	}
}

func TestLockerHandlerBuildsPayments(t *testing.T) {
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: t.TempDir() + "/l.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg, err := config.LoadLocker(func(k string) string {
		return map[string]string{"LOCKER_MODE": "x402", "BASE_RPC_URL": "http://127.0.0.1:1/rpc"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := LockerHandler(t.Context(), cfg, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/pads", strings.NewReader(`{}`)))
	if w.Code != 500 || w.Body.String() != configError {
		t.Errorf("txid without wallet = %d %s", w.Code, w.Body)
	}
}
