package payment

import (
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

var proofRE = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// FuzzParseProof checks ParseProof against the wire's regular expression and that its replay
// key is canonical: lower case, accepted again unchanged, and equal for every case spelling.
func FuzzParseProof(f *testing.F) {
	for _, s := range []string{txHash, "0x" + strings.Repeat("AB", 32), "0x1234", "", "0X" + strings.Repeat("11", 32), txHash + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseProof(s)
		if ok := proofRE.MatchString(s); ok != (err == nil) {
			t.Fatalf("ParseProof(%q) err = %v, regexp match = %v", s, err, ok)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidProof) || key != "" {
				t.Fatalf("ParseProof(%q) = %q, %v", s, key, err)
			}
			return
		}
		if key != strings.ToLower(s) {
			t.Fatalf("key %q is not the lower-case spelling of %q", key, s)
		}
		if again, err := ParseProof(key); err != nil || again != key {
			t.Fatalf("key %q not stable: %q, %v", key, again, err)
		}
		if up, err := ParseProof("0x" + strings.ToUpper(s[2:])); err != nil || up != key {
			t.Fatalf("upper-case spelling of %q gives %q, %v", s, up, err)
		}
	})
}

// FuzzVerify feeds arbitrary bytes to the receipt scanner. Properties: it never panics; it
// returns exactly one of a payment, a rejection or ErrMalformedReceipt; and a payment is for
// the asked hash, names a well-formed payer and is at least the required amount.
func FuzzVerify(f *testing.F) {
	seeds := []string{
		receiptJSON(txHash, "0x1", transfer(payer, wallet, 2000)),
		receiptJSON(txHash, "0x1", transfer(payer, wallet, 1999)),
		receiptJSON(txHash, "0x0", transfer(payer, wallet, 2000)),
		receiptJSON(txHash, "0x1", transfer(payer, "0x"+strings.Repeat("99", 20), 2000), transfer(payer, wallet, 5000)),
		receiptJSON(txHash, "0x1", logSpec{address: token, topics: []string{TransferTopic, "0x", "0x" + strings.Repeat("ab", 20)}, data: "0x"}),
		"null", "{}", "[]", `{"transactionHash":null}`, `{"logs":[{"topics":[null]}]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	addrRE := regexp.MustCompile(`^0x[0-9a-f]{40}$`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := terms.Verify(txHash, raw)
		var rej *Rejection
		switch {
		case err == nil:
			if p.TxHash != txHash || !addrRE.MatchString(p.Payer) {
				t.Fatalf("payment %+v from %q", p, raw)
			}
			n, ok := new(big.Int).SetString(p.AmountUnits, 10)
			if !ok || n.Cmp(big.NewInt(terms.RequiredUnits)) < 0 || n.BitLen() > 256 || n.String() != p.AmountUnits {
				t.Fatalf("amount %q accepted from %q", p.AmountUnits, raw)
			}
		case errors.As(err, &rej):
			if rej.Reason == "" || p != (Payment{}) {
				t.Fatalf("rejection %+v with payment %+v", rej, p)
			}
		case errors.Is(err, ErrMalformedReceipt):
			if p != (Payment{}) {
				t.Fatalf("malformed with payment %+v", p)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}
