package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/httpapi"
	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/version"
)

// LockerHandler builds the Padlock service over store, seeds the demo pad and returns the
// HTTP handler. In txid mode a nil payments is built from cfg (NewLockerPayments: BASE_RPC_URL,
// PAYMENT_WALLET_ADDRESS, USDC_CONTRACT, REQUIRED_USDC_UNITS) over the same store, so lockerd
// and the pads Lambda get the same rail; tests pass their own. In open mode payments is
// ignored: pads are free.
func LockerHandler(ctx context.Context, cfg config.Locker, store locker.Store, payments httpapi.Payments, log *slog.Logger) (http.Handler, error) {
	switch {
	case cfg.Mode != config.ModeTxid:
		payments = nil
	case payments == nil:
		p, err := NewLockerPayments(cfg, store, log)
		if err != nil {
			return nil, fmt.Errorf("LOCKER_MODE=txid: %w", err)
		}
		payments = p
		if cfg.WalletAddress == "" && log != nil {
			log.ErrorContext(ctx, "LOCKER_MODE=txid without PAYMENT_WALLET_ADDRESS: every create answers 500 payment configuration error")
		}
	}
	svc, err := locker.New(locker.Config{Store: store, LeaseSeconds: cfg.LeaseSeconds, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := svc.SeedDemo(ctx); err != nil {
		return nil, err
	}
	return httpapi.New(httpapi.Config{Service: svc, Payments: payments, Version: version.Version, Logger: log})
}
