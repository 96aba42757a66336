package payment

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	wallet = "0xAbCdEf0123456789aBcDeF0123456789ABCDEF01"
	token  = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	payer  = "0x90f8bf6a479f320ead074411a4b0e7944ea8c9c1"
	txHash = "0x1111111111111111111111111111111111111111111111111111111111111111"
)

var terms = Terms{Wallet: wallet, Token: token, RequiredUnits: 2000}

func TestParseProof(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{name: "lower", in: txHash, want: txHash},
		{name: "upper digits normalised", in: "0x" + strings.Repeat("AB", 32), want: "0x" + strings.Repeat("ab", 32)},
		{name: "mixed", in: "0x" + strings.Repeat("aB", 32), want: "0x" + strings.Repeat("ab", 32)},
		{name: "empty", in: "", err: ErrInvalidProof},
		{name: "short", in: "0x1234", err: ErrInvalidProof},
		{name: "long", in: txHash + "1", err: ErrInvalidProof},
		{name: "no prefix", in: strings.Repeat("11", 33), err: ErrInvalidProof},
		{name: "upper prefix", in: "0X" + strings.Repeat("11", 32), err: ErrInvalidProof},
		{name: "non hex", in: "0x" + strings.Repeat("g1", 32), err: ErrInvalidProof},
		{name: "spaces kept", in: " " + txHash[1:] + " ", err: ErrInvalidProof},
		{name: "unicode digits", in: "0x" + strings.Repeat("١", 32), err: ErrInvalidProof},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProof(tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("ParseProof(%q) err = %v, want %v", tc.in, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("ParseProof(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestFormatUnits(t *testing.T) {
	tests := []struct {
		units int64
		want  string
	}{
		{2000, "0.002"}, {1, "0.000001"}, {10, "0.00001"}, {999999, "0.999999"}, {1000000, "1"},
		{1500000, "1.5"}, {1234567, "1.234567"}, {0, "0"}, {100000000, "100"}, {-2000, "-0.002"},
		{9007199254740993, "9007199254.740993"}, // beyond float64 precision: still exact
		{9223372036854775807, "9223372036854.775807"},
	}
	for _, tc := range tests {
		if got := FormatUnits(tc.units); got != tc.want {
			t.Errorf("FormatUnits(%d) = %q, want %q", tc.units, got, tc.want)
		}
	}
}

func TestTermsValidate(t *testing.T) {
	tests := []struct {
		name  string
		terms Terms
		want  []string
	}{
		{name: "ok", terms: terms},
		{name: "no wallet", terms: Terms{Token: token, RequiredUnits: 1}, want: []string{"payment wallet"}},
		{name: "everything", terms: Terms{Wallet: "0x12", Token: "usdc"}, want: []string{"payment wallet", "token contract", "required units"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.terms.Validate()
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("Validate() = %v, want problems %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, does not mention %q", err, w)
				}
			}
		})
	}
}

// TestChallengeGolden pins the 402 body (as the transport encodes it: compact, no HTML
// escaping) and the WWW-Authenticate header byte for byte.
func TestChallengeGolden(t *testing.T) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(terms.Challenge()); err != nil {
		t.Fatal(err)
	}
	got := "-- body.json --\n" + body.String() + "-- www-authenticate --\n" + terms.WWWAuthenticate() + "\n"
	checkGolden(t, "challenge.golden", got)
}

// checkGolden compares got with testdata/name after the golden file's leading comment (every
// line before the first "-- " section marker).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	raw, err := os.ReadFile(path)
	if err != nil && !*update {
		t.Fatal(err)
	}
	comment, want, _ := strings.Cut(string(raw), "-- ")
	want = "-- " + want
	if *update {
		if err := os.WriteFile(path, []byte(comment+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// word32 is a 32-byte big-endian hex word.
func word32(n uint64) string { return fmt.Sprintf("0x%064x", n) }

// addrTopic is an indexed address topic.
func addrTopic(addr string) string { return "0x" + strings.Repeat("0", 24) + strings.ToLower(addr[2:]) }

type logSpec struct {
	address string
	topics  []string
	data    string
	removed bool
}

func transfer(from, to string, amount uint64) logSpec {
	return logSpec{address: token, topics: []string{TransferTopic, addrTopic(from), addrTopic(to)}, data: word32(amount)}
}

func receiptJSON(hash, status string, logs ...logSpec) string {
	type l struct {
		Address string   `json:"address"`
		Topics  []string `json:"topics"`
		Data    string   `json:"data"`
		Removed bool     `json:"removed"`
	}
	r := struct {
		TransactionHash string `json:"transactionHash"`
		Status          string `json:"status"`
		Logs            []l    `json:"logs"`
	}{TransactionHash: hash, Status: status, Logs: []l{}}
	for _, s := range logs {
		r.Logs = append(r.Logs, l{s.address, s.topics, s.data, s.removed})
	}
	b, _ := json.Marshal(r)
	return string(b)
}

func TestVerify(t *testing.T) {
	other := "0x" + strings.Repeat("99", 20)
	otherToken := "0x" + strings.Repeat("77", 20)
	upper := transfer(payer, wallet, 2000)
	upper.address = strings.ToUpper(token[2:])
	upper.address = "0x" + upper.address
	upper.topics = []string{strings.ToUpper(TransferTopic[2:]), addrTopic(payer), strings.ToUpper(addrTopic(wallet))}
	upper.topics[0] = "0x" + upper.topics[0]
	paid := Payment{TxHash: txHash, Payer: payer, AmountUnits: "2000"}

	tests := []struct {
		name    string
		raw     string
		want    Payment
		wantErr error
		reason  string // for an underpaid rejection
	}{
		{name: "exact amount", raw: receiptJSON(txHash, "0x1", transfer(payer, wallet, 2000)), want: paid},
		{name: "overpaid", raw: receiptJSON(txHash, "0x1", transfer(payer, wallet, 1<<40)),
			want: Payment{TxHash: txHash, Payer: payer, AmountUnits: "1099511627776"}},
		{name: "case-insensitive topic, address, recipient", raw: receiptJSON(txHash, "0x1", upper), want: paid},
		{name: "receipt hash in upper case", raw: receiptJSON("0x"+strings.ToUpper(txHash[2:]), "0x1", transfer(payer, wallet, 2000)), want: paid},
		{name: "receipt hash without prefix", raw: receiptJSON(txHash[2:], "0x1", transfer(payer, wallet, 2000)), wantErr: ErrMalformedReceipt},
		{name: "uint256 max", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: transfer(payer, wallet, 0).topics, data: "0x" + strings.Repeat("f", 64)}),
			want: Payment{TxHash: txHash, Payer: payer, AmountUnits: "115792089237316195423570985008687907853269984665640564039457584007913129639935"}},
		{name: "null", raw: "null", wantErr: ErrTxNotFound},
		{name: "null with spaces", raw: " null\n", wantErr: ErrTxNotFound},
		{name: "reverted", raw: receiptJSON(txHash, "0x0", transfer(payer, wallet, 2000)), wantErr: ErrTxReverted},
		{name: "status 0x01 is not 0x1", raw: receiptJSON(txHash, "0x01", transfer(payer, wallet, 2000)), wantErr: ErrTxReverted},
		{name: "status missing", raw: `{"transactionHash":"` + txHash + `","logs":[]}`, wantErr: ErrTxReverted},
		{name: "underpaid", raw: receiptJSON(txHash, "0x1", transfer(payer, wallet, 1999)), reason: "underpaid: 1999 units < 2000 required"},
		{name: "zero", raw: receiptJSON(txHash, "0x1", transfer(payer, wallet, 0)), reason: "underpaid: 0 units < 2000 required"},
		{name: "no logs", raw: receiptJSON(txHash, "0x1"), wantErr: ErrNoTransfer},
		{name: "other recipient", raw: receiptJSON(txHash, "0x1", transfer(payer, other, 5000)), wantErr: ErrNoTransfer},
		{name: "other token", raw: receiptJSON(txHash, "0x1", logSpec{address: otherToken, topics: transfer(payer, wallet, 0).topics, data: word32(5000)}), wantErr: ErrNoTransfer},
		{name: "other event", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: []string{word32(1), addrTopic(payer), addrTopic(wallet)}, data: word32(5000)}), wantErr: ErrNoTransfer},
		{name: "two topics only", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: []string{TransferTopic, addrTopic(payer)}, data: word32(5000)}), wantErr: ErrNoTransfer},
		{name: "no topics", raw: receiptJSON(txHash, "0x1", logSpec{address: token, data: word32(5000)}), wantErr: ErrNoTransfer},
		{name: "removed log skipped", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: transfer(payer, wallet, 0).topics, data: word32(5000), removed: true}), wantErr: ErrNoTransfer},
		{name: "first match wins (underpaid first)", raw: receiptJSON(txHash, "0x1", transfer(payer, other, 9000), transfer(payer, wallet, 10), transfer(payer, wallet, 9000)),
			reason: "underpaid: 10 units < 2000 required"},
		{name: "first match wins (paid first)", raw: receiptJSON(txHash, "0x1", transfer(payer, wallet, 2500), transfer(payer, wallet, 1)),
			want: Payment{TxHash: txHash, Payer: payer, AmountUnits: "2500"}},
		{name: "recipient is the last 40 hex of topic 2", raw: receiptJSON(txHash, "0x1", logSpec{address: token,
			topics: []string{TransferTopic, addrTopic(payer), "0x" + strings.Repeat("f", 24) + strings.ToLower(wallet[2:])}, data: word32(2000)}), want: paid},
		{name: "matching log with short data", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: transfer(payer, wallet, 0).topics, data: "0x7d0"}), wantErr: ErrMalformedReceipt},
		{name: "matching log with empty data", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: transfer(payer, wallet, 0).topics, data: ""}), wantErr: ErrMalformedReceipt},
		{name: "matching log with bad sender topic", raw: receiptJSON(txHash, "0x1", logSpec{address: token, topics: []string{TransferTopic, "0x12", addrTopic(wallet)}, data: word32(2000)}), wantErr: ErrMalformedReceipt},
		{name: "another transaction", raw: receiptJSON("0x"+strings.Repeat("22", 32), "0x1", transfer(payer, wallet, 2000)), wantErr: ErrMalformedReceipt},
		{name: "no transaction hash", raw: `{"status":"0x1","logs":[]}`, wantErr: ErrMalformedReceipt},
		{name: "status a number", raw: `{"transactionHash":"` + txHash + `","status":1,"logs":[]}`, wantErr: ErrMalformedReceipt},
		{name: "logs an object", raw: `{"transactionHash":"` + txHash + `","status":"0x1","logs":{}}`, wantErr: ErrMalformedReceipt},
		{name: "a string", raw: `"0x1"`, wantErr: ErrMalformedReceipt},
		{name: "an array", raw: `[]`, wantErr: ErrMalformedReceipt},
		{name: "not JSON", raw: `{`, wantErr: ErrMalformedReceipt},
		{name: "empty object", raw: `{}`, wantErr: ErrMalformedReceipt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := terms.Verify(txHash, []byte(tc.raw))
			if tc.reason != "" {
				var rej *Rejection
				if !errors.As(err, &rej) || rej.Reason != tc.reason {
					t.Fatalf("Verify err = %v, want rejection %q", err, tc.reason)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Verify err = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Verify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectionText(t *testing.T) {
	for _, r := range []*Rejection{ErrTxNotFound, ErrTxReverted, ErrNoTransfer} {
		if !strings.HasPrefix(r.Error(), "payment verification failed: ") {
			t.Errorf("%q lacks the wire prefix", r.Error())
		}
	}
}
