package payments

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/locker"
)

// wallet is the payment wallet: ganache account 2 in its EIP-55 mixed-case spelling, which
// the daemon must report verbatim and match case-insensitively.
const wallet = "0x22d491Bde2303f2f43325b2108D26f1eAbA1e32b"

func failed(reason string) string { return `{"detail":"payment verification failed: ` + reason + `"}` }

const redeemed = `{"detail":"payment already redeemed"}`

// world is the base chain with a deployed stand-in USDC, a second token, and a daemon whose
// RPC goes through a counting proxy.
type world struct {
	g       *ganache
	usdc    *token
	other   *token
	accts   []string
	proxy   *proxy
	d       *daemon
	payer   string
	nobody  string // an account that holds no tokens
	another string // a recipient that is not the wallet
}

func newWorld(t *testing.T, wrap func(locker.Store) locker.Store) *world {
	t.Helper()
	g := baseChain(t)
	accts := g.accounts(t)
	w := &world{g: g, accts: accts, payer: accts[0], nobody: accts[5], another: accts[3]}
	w.usdc = deployToken(t, g, w.payer)
	w.other = deployToken(t, g, w.payer)
	w.proxy = newProxy(t, g.URL)
	w.d = newDaemon(t, daemonOptions{rpcURL: w.proxy.srv.URL, wallet: wallet, token: w.usdc.Address, wrap: wrap})
	return w
}

// pay transfers amount stand-in USDC from the payer to the wallet and returns the hash.
func (w *world) pay(t *testing.T, amount int) string {
	t.Helper()
	hash, status := w.usdc.transfer(t, w.payer, wallet, amount)
	if status != "0x1" {
		t.Fatalf("transfer status %s", status)
	}
	return hash
}

func TestPaidCreateAndReplay(t *testing.T) {
	w := newWorld(t, nil)
	tx := w.pay(t, 2500)

	got := w.d.create(tx)
	if got.status != http.StatusCreated {
		t.Fatalf("create = %d %s", got.status, got.body)
	}
	var c struct {
		PadID    string `json:"pad_id"`
		WriteKey string `json:"write_key"`
	}
	if err := json.Unmarshal([]byte(got.body), &c); err != nil || len(c.PadID) != 32 || c.WriteKey == "" {
		t.Fatalf("create body %s: %v", got.body, err)
	}
	want := []receiptRow{{TxHash: strings.ToLower(tx), PadID: c.PadID, AmountUnits: "2500", Payer: strings.ToLower(w.payer)}}
	if got := w.d.receipts(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("receipts = %+v, want %+v", got, want)
	}
	// The pad is a normal pad: its write key appends.
	block0 := `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	if r := w.d.do(http.MethodPost, "/v1/pads/"+c.PadID+"/append", block0, "Authorization", "Bearer "+c.WriteKey); r.status != http.StatusCreated {
		t.Errorf("append to the paid pad = %d %s", r.status, r.body)
	}

	rpcCalls := w.proxy.total()
	for _, spelling := range []string{tx, "0x" + strings.ToUpper(tx[2:])} {
		if r := w.d.create(spelling); r.status != http.StatusConflict || r.body != redeemed {
			t.Errorf("replay %s = %d %s, want 409 %s", spelling, r.status, r.body, redeemed)
		}
	}
	if n := w.proxy.total() - rpcCalls; n != 0 {
		t.Errorf("replays made %d RPC calls, want none (pre-check)", n)
	}
	if n := w.d.pads(); n != 2 {
		t.Errorf("%d pads, want the demo pad and one paid pad", n)
	}
}

func TestRejectedPayments(t *testing.T) {
	w := newWorld(t, nil)
	underpaid := w.pay(t, 1999)
	otherToken, _ := w.other.transfer(t, w.payer, wallet, 5000)
	otherRecipient, _ := w.usdc.transfer(t, w.payer, w.another, 5000)
	reverted, status := w.usdc.transfer(t, w.nobody, wallet, 5000)
	if status != "0x0" {
		t.Fatalf("a transfer beyond the balance was mined with status %s, want 0x0", status)
	}
	firstMatch := w.usdc.batch(t, []string{w.another, wallet, wallet}, []int{9000, 10, 9000})

	tests := []struct {
		name, proof string
		status      int
		want        string
	}{
		{name: "underpaid", proof: underpaid, status: 402, want: failed("underpaid: 1999 units < 2000 required")},
		{name: "another token", proof: otherToken, status: 402, want: failed("no USDC transfer to the payment wallet found")},
		{name: "another recipient", proof: otherRecipient, status: 402, want: failed("no USDC transfer to the payment wallet found")},
		{name: "reverted", proof: reverted, status: 402, want: failed("transaction reverted")},
		{name: "unknown transaction", proof: "0x" + strings.Repeat("5a", 32), status: 402, want: failed("transaction not found")},
		{name: "first transfer to the wallet decides", proof: firstMatch, status: 402, want: failed("underpaid: 10 units < 2000 required")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.d.create(tc.proof)
			if r.status != tc.status || r.body != tc.want {
				t.Errorf("create = %d %s, want %d %s", r.status, r.body, tc.status, tc.want)
			}
		})
	}
	if n := w.d.pads(); n != 1 || len(w.d.receipts()) != 0 {
		t.Errorf("%d pads, %d receipts after rejections: want the demo pad only", n, len(w.d.receipts()))
	}
	if w.proxy.count("eth_getTransactionReceipt") != len(tests) {
		t.Errorf("%d receipt calls for %d proofs", w.proxy.count("eth_getTransactionReceipt"), len(tests))
	}
}

func TestChallengeAndMalformedProofNeverReachRPC(t *testing.T) {
	w := newWorld(t, nil)
	tests := []struct {
		name, proof string
		status      int
		want        string
	}{
		{name: "no proof", proof: "-", status: 402, want: `{"error":"payment_required","network":"base","chain_id":8453,"currency":"USDC","token_contract":"` +
			w.usdc.Address + `","amount":"0.002","amount_units":2000,"recipient":"` + wallet + `","instructions":"Send 0.002 USDC on Base to ` +
			wallet + `, then retry with the header X-Payment-Proof: <transaction_hash>."}`},
		{name: "blank proof", proof: "  ", status: 402},
		{name: "short", proof: "0x1234", status: 400, want: failed("invalid transaction format")},
		{name: "64 hex without 0x", proof: strings.Repeat("ab", 32), status: 400, want: failed("invalid transaction format")},
		{name: "66 chars, not hex", proof: "0x" + strings.Repeat("zz", 32), status: 400, want: failed("invalid transaction format")},
		{name: "SQL-ish", proof: "0x'; DROP TABLE payment_receipts; --", status: 400, want: failed("invalid transaction format")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := w.d.create(tc.proof)
			if r.status != tc.status || (tc.want != "" && r.body != tc.want) {
				t.Errorf("create = %d %s, want %d %s", r.status, r.body, tc.status, tc.want)
			}
			if tc.status == 402 {
				want := `Locker-Txid network="base", token="USDC", amount="0.002", recipient="` + wallet + `"`
				if got := r.header.Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate = %q, want %q", got, want)
				}
			}
		})
	}
	if n := w.proxy.total(); n != 0 {
		t.Errorf("%d RPC calls, want none", n)
	}
}

func TestHealthReportsTheNode(t *testing.T) {
	w := newWorld(t, nil)
	if status, rpc := w.d.health(); status != 200 || rpc != `{"network":"base","reachable":true}` {
		t.Errorf("health = %d %s", status, rpc)
	}
	if w.proxy.count("eth_chainId") != 1 {
		t.Errorf("health made %d eth_chainId calls, want 1", w.proxy.count("eth_chainId"))
	}
}

// TestRPCDown: with nothing listening at BASE_RPC_URL a create is 502 with the sanitised
// text, /health stays 200 with reachable false, and the proof is still good afterwards.
func TestRPCDown(t *testing.T) {
	w := newWorld(t, nil)
	tx := w.pay(t, 2000)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v2/api-key-in-path"
	ln.Close()
	down := newDaemon(t, daemonOptions{rpcURL: dead, wallet: wallet, token: w.usdc.Address})
	if r := down.create(tx); r.status != http.StatusBadGateway || r.body != `{"detail":"rpc provider unreachable"}` {
		t.Errorf("create = %d %s, want 502", r.status, r.body)
	}
	if status, rpc := down.health(); status != 200 || rpc != `{"network":"base","reachable":false}` {
		t.Errorf("health = %d %s, want 200 and reachable false", status, rpc)
	}
	if down.pads() != 1 {
		t.Errorf("a pad was created without a reachable RPC")
	}
	if r := w.d.create(tx); r.status != http.StatusCreated {
		t.Errorf("the proof after the outage = %d %s, want 201", r.status, r.body)
	}
}

// TestRace: eight creates with one proof at once make exactly one pad.
func TestRace(t *testing.T) {
	w := newWorld(t, nil)
	tx := w.pay(t, 2000)
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			<-start
			statuses[i] = w.d.create(tx).status
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[201] != 1 || count[409] != n-1 {
		t.Errorf("statuses %v: want exactly one 201 and %d 409", statuses, n-1)
	}
	if w.d.pads() != 2 || len(w.d.receipts()) != 1 {
		t.Errorf("%d pads, %d receipts: want one paid pad", w.d.pads()-1, len(w.d.receipts()))
	}
}

// failingStore fails CreatePad while armed: after the receipt was verified, before commit.
type failingStore struct {
	locker.Store
	armed atomic.Bool
}

func (s *failingStore) CreatePad(ctx context.Context, np locker.NewPad) error {
	if s.armed.Load() && np.Receipt != nil {
		return errors.New("injected failure before commit")
	}
	return s.Store.CreatePad(ctx, np)
}

// TestFailedCreateKeepsThePayment injects two failures after the receipt check: one before
// the store is called, and one inside SQLite's transaction after the receipt row itself was
// inserted (a trigger aborts it). Neither commits anything and the same proof then pays.
func TestFailedCreateKeepsThePayment(t *testing.T) {
	fs := &failingStore{}
	w := newWorld(t, func(s locker.Store) locker.Store { fs.Store = s; return fs })
	tx := w.pay(t, 2000)

	fs.armed.Store(true)
	if r := w.d.create(tx); r.status != http.StatusInternalServerError || strings.Contains(r.body, "injected") {
		t.Errorf("create with a failing store = %d %s, want a generic 500", r.status, r.body)
	}
	fs.armed.Store(false)
	if w.d.pads() != 1 || len(w.d.receipts()) != 0 {
		t.Fatalf("the failed create left %d pads, %d receipts", w.d.pads()-1, len(w.d.receipts()))
	}

	w.d.exec(`CREATE TRIGGER inject_after_receipt AFTER INSERT ON payment_receipts BEGIN SELECT RAISE(ABORT, 'injected after the receipt insert'); END`)
	if r := w.d.create(tx); r.status != http.StatusInternalServerError || strings.Contains(r.body, "injected") {
		t.Errorf("create with an aborting transaction = %d %s, want a generic 500", r.status, r.body)
	}
	if w.d.pads() != 1 || len(w.d.receipts()) != 0 {
		t.Fatalf("the aborted transaction left %d pads, %d receipts", w.d.pads()-1, len(w.d.receipts()))
	}
	w.d.exec(`DROP TRIGGER inject_after_receipt`)

	if r := w.d.create(tx); r.status != http.StatusCreated {
		t.Errorf("retry = %d %s, want 201", r.status, r.body)
	}
	if r := w.d.create(tx); r.status != http.StatusConflict {
		t.Errorf("second retry = %d %s, want 409", r.status, r.body)
	}
}

// TestAnotherChainDoesNotPay: a real USDC-shaped transfer on a chain other than Base (a node
// with chain ID 1337 behind BASE_RPC_URL) is refused as a configuration error, and health
// reports the node as unusable.
func TestAnotherChainDoesNotPay(t *testing.T) {
	g := otherChain(t, 1337)
	accts := g.accounts(t)
	tk := deployToken(t, g, accts[0])
	tx, status := tk.transfer(t, accts[0], wallet, 5000)
	if status != "0x1" {
		t.Fatalf("transfer status %s", status)
	}
	d := newDaemon(t, daemonOptions{rpcURL: g.URL, wallet: wallet, token: tk.Address})
	if r := d.create(tx); r.status != http.StatusInternalServerError || r.body != `{"detail":"payment configuration error"}` {
		t.Errorf("create = %d %s, want 500 payment configuration error", r.status, r.body)
	}
	if status, rpc := d.health(); status != 200 || rpc != `{"network":"base","reachable":false}` {
		t.Errorf("health = %d %s", status, rpc)
	}
	if d.pads() != 1 || len(d.receipts()) != 0 {
		t.Errorf("a transfer on chain 1337 paid for a pad")
	}
}
