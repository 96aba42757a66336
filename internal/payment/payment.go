package payment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// The payment network the challenge advertises. Only Base mainnet is supported: the challenge
// names it, and a node that reports another chain ID cannot verify a payment (see ChainID).
const (
	// Network is the challenge's network name and /health's rpc.network.
	Network = "base"
	// ChainID is Base mainnet's EIP-155 chain ID. The daemon pays out only for receipts read
	// from a node whose eth_chainId equals it.
	ChainID uint64 = 8453
	// Currency is the token the challenge asks for.
	Currency = "USDC"
	// Decimals is the token's number of decimals (USDC has 6).
	Decimals = 6
	// TransferTopic is keccak256("Transfer(address,address,uint256)"), topic 0 of an ERC-20
	// Transfer log.
	TransferTopic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	// ProofHeader is the request header carrying the payment's transaction hash.
	ProofHeader = "X-Payment-Proof"
	// AuthScheme is the WWW-Authenticate scheme of the challenge.
	AuthScheme = "Locker-Txid"
)

// ErrInvalidProof is returned by ParseProof for anything that is not 0x and 64 hex digits.
var ErrInvalidProof = errors.New("invalid transaction format")

// ErrMalformedReceipt means the node's answer is not a receipt this package can read: wrong
// JSON types, a transaction hash other than the one asked for, or a matching Transfer log
// whose topics or data are not a standard ERC-20 encoding. It is a provider failure, not a
// verdict on the payment: callers answer it like an unreachable provider and consume nothing.
var ErrMalformedReceipt = errors.New("malformed transaction receipt")

// Rejection is a verdict against the payment: the receipt was read and does not pay for a
// pad. Reason is the exact text after "payment verification failed: " on the wire.
type Rejection struct {
	Reason string
}

func (r *Rejection) Error() string { return "payment verification failed: " + r.Reason }

// The refusals of the payment path that are not a verdict on a receipt. A payment rail
// returns them with ErrInvalidProof, a *Rejection and a *RequiredError, and the
// transport maps each to the wire's status and body (docs/spec/padlock-wire.md §1.2).
var (
	// ErrUnconfigured: the operator's configuration cannot verify payments (no payment
	// wallet, or a node that serves another chain than Base).
	ErrUnconfigured = errors.New("payment configuration error")
	// ErrUnreachable: the RPC provider failed or answered something unusable
	// (ErrMalformedReceipt). The provider's own error is logged, never returned.
	ErrUnreachable = errors.New("rpc provider unreachable")
)

// RequiredError asks for payment: the request carried no proof. Terms say what to pay:
// the 402 body (Terms.Challenge) and its WWW-Authenticate header (Terms.WWWAuthenticate).
type RequiredError struct {
	Terms Terms
}

func (e *RequiredError) Error() string { return "payment required" }

// Rejections with fixed reasons; an underpayment is a *Rejection built by Verify.
var (
	// ErrTxNotFound: the node knows no receipt for the hash (result null).
	ErrTxNotFound = &Rejection{Reason: "transaction not found"}
	// ErrTxReverted: the receipt's status is not "0x1".
	ErrTxReverted = &Rejection{Reason: "transaction reverted"}
	// ErrNoTransfer: no Transfer log from the token contract to the wallet.
	ErrNoTransfer = &Rejection{Reason: "no USDC transfer to the payment wallet found"}
)

// ParseProof checks an X-Payment-Proof value and returns its replay key: the hash with its
// hex digits in lower case. The wire accepts either case (^0x[0-9a-fA-F]{64}$); the key is
// normalised so that one transaction spelled in two cases is still one payment. Surrounding
// whitespace is not trimmed here (the transport trims the header). ErrInvalidProof otherwise.
func ParseProof(s string) (string, error) {
	if len(s) != 66 || s[0] != '0' || s[1] != 'x' {
		return "", ErrInvalidProof
	}
	for i := 2; i < len(s); i++ {
		if !isHex(s[i]) {
			return "", ErrInvalidProof
		}
	}
	return strings.ToLower(s), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// FormatUnits renders an amount of token units as the peer does: units / 10^Decimals with
// Decimals fraction digits, then trailing zeros and a trailing dot removed (2000 → "0.002",
// 1000000 → "1"). It is exact integer arithmetic, so it never rounds.
func FormatUnits(units int64) string {
	neg := units < 0
	u := new(big.Int).SetInt64(units)
	u.Abs(u)
	s := u.String()
	if len(s) <= Decimals {
		s = strings.Repeat("0", Decimals-len(s)+1) + s
	}
	whole, frac := s[:len(s)-Decimals], strings.TrimRight(s[len(s)-Decimals:], "0")
	if frac != "" {
		whole += "." + frac
	}
	if neg {
		whole = "-" + whole
	}
	return whole
}

// Terms are the operator's price and where to pay it.
type Terms struct {
	// Wallet is PAYMENT_WALLET_ADDRESS (0x and 40 hex digits), reported verbatim in the
	// challenge and compared case-insensitively. Required.
	Wallet string
	// Token is the token contract (USDC_CONTRACT), reported verbatim and compared
	// case-insensitively. Required.
	Token string
	// RequiredUnits is REQUIRED_USDC_UNITS, the minimum transfer in token units. Required > 0.
	RequiredUnits int64
}

// Validate reports what is missing or malformed in t.
func (t Terms) Validate() error {
	var errs []error
	if !isAddress(t.Wallet) {
		errs = append(errs, fmt.Errorf("payment wallet %q is not a 0x-prefixed 20-byte address", t.Wallet))
	}
	if !isAddress(t.Token) {
		errs = append(errs, fmt.Errorf("token contract %q is not a 0x-prefixed 20-byte address", t.Token))
	}
	if t.RequiredUnits <= 0 {
		errs = append(errs, fmt.Errorf("required units %d must be positive", t.RequiredUnits))
	}
	return errors.Join(errs...)
}

func isAddress(s string) bool {
	if len(s) != 42 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// Challenge is the body of the 402 that asks for payment. Field order is the wire's.
type Challenge struct {
	Error         string `json:"error"`
	Network       string `json:"network"`
	ChainID       uint64 `json:"chain_id"`
	Currency      string `json:"currency"`
	TokenContract string `json:"token_contract"`
	Amount        string `json:"amount"`
	AmountUnits   int64  `json:"amount_units"`
	Recipient     string `json:"recipient"`
	Instructions  string `json:"instructions"`
}

// Challenge returns the 402 body for t.
func (t Terms) Challenge() Challenge {
	amount := FormatUnits(t.RequiredUnits)
	return Challenge{
		Error: "payment_required", Network: Network, ChainID: ChainID, Currency: Currency,
		TokenContract: t.Token, Amount: amount, AmountUnits: t.RequiredUnits, Recipient: t.Wallet,
		Instructions: "Send " + amount + " " + Currency + " on Base to " + t.Wallet +
			", then retry with the header " + ProofHeader + ": <transaction_hash>.",
	}
}

// WWWAuthenticate returns the challenge's WWW-Authenticate header value.
func (t Terms) WWWAuthenticate() string {
	return AuthScheme + ` network="` + Network + `", token="` + Currency + `", amount="` +
		FormatUnits(t.RequiredUnits) + `", recipient="` + t.Wallet + `"`
}

// Payment is a verified transfer, ready to be stored as the pad's receipt.
type Payment struct {
	// TxHash is the replay key: 0x and 64 lower-case hex digits.
	TxHash string
	// Payer is the Transfer's sender: 0x and 40 lower-case hex digits.
	Payer string
	// AmountUnits is the transferred amount in token units, as a decimal integer (a uint256
	// does not fit an int64).
	AmountUnits string
}

type receipt struct {
	TransactionHash *string `json:"transactionHash"`
	Status          *string `json:"status"`
	Logs            []txLog `json:"logs"`
}

type txLog struct {
	Address *string  `json:"address"`
	Topics  []string `json:"topics"`
	Data    *string  `json:"data"`
	Removed bool     `json:"removed"`
}

// Verify checks raw, the JSON result of eth_getTransactionReceipt for txHash (as returned by
// ParseProof), against t. The order is the wire's: null → ErrTxNotFound; status other than
// "0x1" → ErrTxReverted; then the logs are scanned in order for the first one whose topic 0
// is TransferTopic (any case), whose address is t.Token (any case), that has at least three
// topics and whose recipient (the last 40 hex digits of topic 2) is t.Wallet (any case).
// Logs marked removed (a reorganised chain) are skipped. That log's data is the amount: less
// than t.RequiredUnits → an underpaid *Rejection; no such log → ErrNoTransfer.
//
// ErrMalformedReceipt (wrapped) when raw is not a receipt object, names another transaction,
// or the matching log's sender topic or amount is not a standard 32-byte encoding. It never
// panics, whatever raw holds.
func (t Terms) Verify(txHash string, raw []byte) (Payment, error) {
	if strings.TrimSpace(string(raw)) == "null" {
		return Payment{}, ErrTxNotFound
	}
	var r receipt
	if err := json.Unmarshal(raw, &r); err != nil {
		return Payment{}, fmt.Errorf("%w: not a receipt object", ErrMalformedReceipt)
	}
	if r.TransactionHash == nil || !strings.EqualFold(*r.TransactionHash, txHash) {
		return Payment{}, fmt.Errorf("%w: receipt is for another transaction", ErrMalformedReceipt)
	}
	if r.Status == nil || *r.Status != "0x1" {
		return Payment{}, ErrTxReverted
	}
	wallet := strings.ToLower(strings.TrimPrefix(t.Wallet, "0x"))
	for i, l := range r.Logs {
		if l.Removed || len(l.Topics) == 0 || !strings.EqualFold(l.Topics[0], TransferTopic) {
			continue
		}
		if l.Address == nil || !strings.EqualFold(*l.Address, t.Token) {
			continue
		}
		if len(l.Topics) < 3 || !strings.EqualFold(last40(l.Topics[2]), wallet) {
			continue
		}
		payer, ok := topicAddress(l.Topics[1])
		if !ok {
			return Payment{}, fmt.Errorf("%w: log %d: sender topic is not a 32-byte word", ErrMalformedReceipt, i)
		}
		amount, ok := word(l.Data)
		if !ok {
			return Payment{}, fmt.Errorf("%w: log %d: data is not one 32-byte word", ErrMalformedReceipt, i)
		}
		if amount.Cmp(big.NewInt(t.RequiredUnits)) < 0 {
			return Payment{}, &Rejection{Reason: "underpaid: " + amount.String() + " units < " +
				strconv.FormatInt(t.RequiredUnits, 10) + " required"}
		}
		return Payment{TxHash: strings.ToLower(txHash), Payer: payer, AmountUnits: amount.String()}, nil
	}
	return Payment{}, ErrNoTransfer
}

// last40 is the recipient rule of the wire: the last 40 characters of the topic. A topic
// shorter than that names no address.
func last40(topic string) string {
	if len(topic) < 40 {
		return ""
	}
	return topic[len(topic)-40:]
}

// topicAddress reads an indexed address topic: 0x and 64 hex digits, the address being the
// last 40, returned as 0x and lower case.
func topicAddress(topic string) (string, bool) {
	if !isWord(topic) {
		return "", false
	}
	return "0x" + strings.ToLower(topic[len(topic)-40:]), true
}

// word reads the data of a Transfer log: exactly one 32-byte big-endian word.
func word(data *string) (*big.Int, bool) {
	if data == nil || !isWord(*data) {
		return nil, false
	}
	n, ok := new(big.Int).SetString((*data)[2:], 16)
	return n, ok
}

func isWord(s string) bool {
	if len(s) != 66 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}
