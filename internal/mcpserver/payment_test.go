package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/app"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
	"github.com/agentgate-dev/agentgate/internal/payment"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
)

const (
	testWallet = "0x1111111111111111111111111111111111111111"
	testToken  = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	paidTx     = "0xabababababababababababababababababababababababababababababababab"
)

// chainRPC answers like a Base node that knows one transaction: paidTx, a transfer of 2000
// units of testToken to testWallet. (The real node path is covered in test/payments.)
type chainRPC struct{}

func (chainRPC) ChainID(context.Context) (uint64, error) { return payment.ChainID, nil }

func (chainRPC) TransactionReceipt(_ context.Context, tx string) (json.RawMessage, error) {
	if !strings.EqualFold(tx, paidTx) {
		return json.RawMessage("null"), nil
	}
	word := func(hex string) string { return "0x" + strings.Repeat("0", 64-len(hex)) + hex }
	return json.RawMessage(fmt.Sprintf(`{"transactionHash":%q,"status":"0x1","logs":[{"address":%q,"topics":[%q,%q,%q],"data":%q}]}`,
		paidTx, testToken, payment.TransferTopic, word("22"), word(testWallet[2:]), word("7d0"))), nil
}

// paidDaemon is the real lockerd handler in txid mode over SQLite.
func paidDaemon(t *testing.T) string {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "l.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pay, err := app.NewPayments(app.PaymentsConfig{Store: st, RPC: chainRPC{}, Wallet: testWallet, Token: testToken, RequiredUnits: 2000})
	if err != nil {
		t.Fatal(err)
	}
	h, err := app.LockerHandler(t.Context(), config.Locker{Mode: config.ModeTxid, LeaseSeconds: 600}, st, pay, nil)
	if err != nil {
		t.Fatal(err)
	}
	var _ httpapi.Payments = pay
	return lockertest.Serve(t, h)
}

// TestPaymentChallengeAndProof: without payment_tx_hash, locker_create and locker_deposit
// return the daemon's 402 challenge in error.challenge (and create nothing); with it, the
// proof travels as X-Payment-Proof and the pad is paid for exactly once.
func TestPaymentChallengeAndProof(t *testing.T) {
	cs := sessionURL(t, paidDaemon(t), config.TicketHeader)
	r := call(t, cs, "locker_create", `{"ttl_seconds":600}`)
	ch, ok := get(t, r.m, "error.challenge").(map[string]any)
	if !ok || get(t, r.m, "error.status") != float64(402) {
		t.Fatalf("create without payment = %v", r.m)
	}
	if ch["recipient"] != testWallet || ch["amount"] != "0.002" || ch["network"] != "base" || ch["error"] != "payment_required" {
		t.Errorf("challenge = %v", ch)
	}
	env := `{"schema":"locker.handoff.v1","task_id":"t","from_agent":"a","to_agent":"b","constraints":[],"artifacts":[],"budget_usd":null}`
	d := call(t, cs, "locker_deposit", `{"envelope":`+env+`,"artifacts":["work"]}`)
	if get(t, d.m, "error.status") != float64(402) || get(t, d.m, "error.challenge.recipient") != testWallet {
		t.Errorf("deposit without payment = %v", d.m)
	}
	if _, leaked := d.m["pad_id"]; leaked && d.m["pad_id"] != nil {
		t.Errorf("an unpaid deposit names a pad: %v", d.m)
	}
	ok1 := call(t, cs, "locker_deposit", `{"envelope":`+env+`,"artifacts":["work"],"payment_tx_hash":"`+paidTx+`"}`)
	if ok1.m["status"] != "sealed" || ok1.m["head_source"] != "locally_computed" {
		t.Fatalf("paid deposit = %v", ok1.m)
	}
	again := call(t, cs, "locker_create", `{"ttl_seconds":600,"payment_tx_hash":"`+paidTx[:2]+strings.ToUpper(paidTx[2:])+`"}`)
	if get(t, again.m, "error.status") != float64(409) || !strings.Contains(fmt.Sprint(get(t, again.m, "error.detail")), "payment already redeemed") {
		t.Errorf("the same proof again (upper case) = %v", again.m)
	}
	unknown := call(t, cs, "locker_create", `{"ttl_seconds":600,"payment_tx_hash":"0x`+strings.Repeat("cd", 32)+`"}`)
	if get(t, unknown.m, "error.status") != float64(402) || !strings.Contains(fmt.Sprint(get(t, unknown.m, "error.detail")), "transaction not found") {
		t.Errorf("an unknown transaction = %v", unknown.m)
	}
	_ = locker.DemoPadID
}
