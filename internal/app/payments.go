package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/evmrpc"
	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/payment"
)

// RPC is what Payments needs from a chain node; *evmrpc.Client implements it. Both methods
// bound their own duration (5 s and 2 s for evmrpc) and return errors meant for logs only.
type RPC interface {
	// ChainID returns the node's eth_chainId.
	ChainID(ctx context.Context) (uint64, error)
	// TransactionReceipt returns the raw result of eth_getTransactionReceipt (null when the
	// node knows no such transaction).
	TransactionReceipt(ctx context.Context, txHash string) (json.RawMessage, error)
}

// PaymentsConfig configures NewPayments.
type PaymentsConfig struct {
	// Store answers the replay pre-check (HasReceipt). Required. The authoritative replay
	// check is the store's CreatePad, which refuses a stored tx hash in the same transaction.
	Store locker.Store
	// RPC reads receipts and the chain ID. Required.
	RPC RPC
	// Wallet is PAYMENT_WALLET_ADDRESS. Empty is allowed and makes every create answer 500
	// "payment configuration error", as the wire requires; otherwise 0x and 40 hex digits.
	Wallet string
	// Token is the USDC contract whose Transfer logs pay. Required (0x and 40 hex digits).
	Token string
	// RequiredUnits is the minimum transfer in token units. Required > 0.
	RequiredUnits int64
	// Logger receives one line per refused or accepted payment (transaction hashes are
	// public; provider errors are logged here and never returned). Default: discard.
	Logger *slog.Logger
}

// Payments is the txid-mode implementation of httpapi.Payments: it admits a create when its
// X-Payment-Proof names a successful transfer of enough USDC to the wallet on Base that has
// not paid for a pad before. It is safe for concurrent use.
type Payments struct {
	store  locker.Store
	rpc    RPC
	terms  payment.Terms
	log    *slog.Logger
	chain  atomic.Bool // the node has answered eth_chainId with payment.ChainID
	warned atomic.Bool // the wrong-chain warning was logged by Probe
}

var _ httpapi.Payments = (*Payments)(nil)

// NewPayments checks cfg and returns the payment rail. It makes no RPC call.
func NewPayments(cfg PaymentsConfig) (*Payments, error) {
	if cfg.Store == nil || cfg.RPC == nil {
		return nil, errors.New("payments: Store and RPC are required")
	}
	t := payment.Terms{Wallet: cfg.Wallet, Token: cfg.Token, RequiredUnits: cfg.RequiredUnits}
	check := t
	if check.Wallet == "" { // refused per request with the wire's 500, not at startup
		check.Wallet = "0x0000000000000000000000000000000000000000"
	}
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	p := &Payments{store: cfg.Store, rpc: cfg.RPC, terms: t, log: cfg.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// NewLockerPayments builds the payment rail of LOCKER_MODE=txid from the daemon's
// configuration: an evmrpc client for BASE_RPC_URL and the store's receipts.
func NewLockerPayments(cfg config.Locker, store locker.Store, log *slog.Logger) (*Payments, error) {
	rpc, err := evmrpc.New(evmrpc.Config{URL: cfg.RPCURL})
	if err != nil {
		return nil, fmt.Errorf("BASE_RPC_URL: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("rpc_endpoint", rpc.Endpoint()))
	return NewPayments(PaymentsConfig{Store: store, RPC: rpc, Wallet: cfg.WalletAddress, Token: cfg.USDCContract,
		RequiredUnits: cfg.RequiredUnits, Logger: log})
}

// Admit implements httpapi.Payments. The order is the wire's: wallet configured
// (payment.ErrUnconfigured) → proof present (*payment.RequiredError, the challenge) → proof
// well-formed (payment.ErrInvalidProof, before any RPC call) → not redeemed yet
// (locker.ErrRedeemed) → the node is on Base (payment.ErrUnconfigured if it reports
// another chain) → the receipt (payment.ErrUnreachable for any provider failure, a
// *payment.Rejection when it does not pay). A store that cannot answer the replay
// pre-check is locker.Unavailable. Provider and store errors are logged here, never
// returned. The returned receipt's TxHash is the lower-cased proof: the replay key is
// case-insensitive.
func (p *Payments) Admit(ctx context.Context, proof string) (*locker.Receipt, error) {
	if p.terms.Wallet == "" {
		p.log.ErrorContext(ctx, "payment refused: PAYMENT_WALLET_ADDRESS is not set")
		return nil, payment.ErrUnconfigured
	}
	if proof == "" {
		return nil, &payment.RequiredError{Terms: p.terms}
	}
	txHash, err := payment.ParseProof(proof)
	if err != nil {
		return nil, err
	}
	log := p.log.With(slog.String("tx_hash", txHash))
	redeemed, err := p.store.HasReceipt(ctx, txHash)
	if err != nil {
		log.WarnContext(ctx, "payment pre-check: store unreadable", slog.String("error", err.Error()))
		return nil, fmt.Errorf("payment pre-check: %w", locker.Unavailable(err))
	}
	if redeemed {
		log.InfoContext(ctx, "payment refused: already redeemed")
		return nil, locker.ErrRedeemed
	}
	if err := p.checkChain(ctx, log); err != nil {
		return nil, err
	}
	raw, err := p.rpc.TransactionReceipt(ctx, txHash)
	if err != nil {
		log.WarnContext(ctx, "payment: rpc provider failed", slog.String("error", err.Error()))
		return nil, payment.ErrUnreachable
	}
	paid, err := p.terms.Verify(txHash, raw)
	var rej *payment.Rejection
	switch {
	case errors.As(err, &rej):
		log.InfoContext(ctx, "payment refused", slog.String("reason", rej.Reason))
		return nil, rej
	case err != nil:
		log.WarnContext(ctx, "payment: rpc provider returned an unusable receipt", slog.String("error", err.Error()))
		return nil, payment.ErrUnreachable
	}
	log.InfoContext(ctx, "payment verified", slog.String("payer", paid.Payer), slog.String("amount_units", paid.AmountUnits))
	return &locker.Receipt{TxHash: paid.TxHash, AmountUnits: paid.AmountUnits, Payer: paid.Payer}, nil
}

// checkChain makes sure receipts come from Base: a node on another chain would let a transfer
// there pay for a pad here. A match is remembered for the process; the endpoint's chain does
// not change under a fixed URL, and a mismatch is checked again on every request.
func (p *Payments) checkChain(ctx context.Context, log *slog.Logger) error {
	if p.chain.Load() {
		return nil
	}
	id, err := p.rpc.ChainID(ctx)
	if err != nil {
		log.WarnContext(ctx, "payment: rpc provider failed", slog.String("error", err.Error()))
		return payment.ErrUnreachable
	}
	if id != payment.ChainID {
		log.ErrorContext(ctx, "payment refused: BASE_RPC_URL serves the wrong chain",
			slog.Uint64("chain_id", id), slog.Uint64("want_chain_id", payment.ChainID))
		return payment.ErrUnconfigured
	}
	p.chain.Store(true)
	return nil
}

// Probe implements httpapi.Payments: eth_chainId within 2 s (the RPC client's bound). A node
// that answers with a chain other than Base counts as unreachable, since it cannot verify a
// payment.
func (p *Payments) Probe(ctx context.Context) bool {
	id, err := p.rpc.ChainID(ctx)
	if err != nil {
		return false
	}
	if id != payment.ChainID {
		if !p.warned.Swap(true) {
			p.log.ErrorContext(ctx, "health: BASE_RPC_URL serves the wrong chain",
				slog.Uint64("chain_id", id), slog.Uint64("want_chain_id", payment.ChainID))
		}
		return false
	}
	p.chain.Store(true)
	return true
}

// Network implements httpapi.Payments.
func (p *Payments) Network() string { return payment.Network }
