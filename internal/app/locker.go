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
// HTTP handler (lockerd: a local store, where the seed is a read or two and /health counts
// the demo pad from the first request). In txid mode a nil payments is built from cfg
// (NewLockerPayments: BASE_RPC_URL, PAYMENT_WALLET_ADDRESS, USDC_CONTRACT,
// REQUIRED_USDC_UNITS) over the same store, so lockerd and the pads Lambda get the same
// rail; tests pass their own. In open mode payments is ignored: pads are free.
func LockerHandler(ctx context.Context, cfg config.Locker, store locker.Store, payments httpapi.Payments, log *slog.Logger) (http.Handler, error) {
	h, err := LazyLockerHandler(ctx, cfg, store, payments, log)
	if err != nil {
		return nil, err
	}
	if err := locker.SeedDemo(ctx, store, nil); err != nil {
		return nil, err
	}
	return h, nil
}

// LazyLockerHandler is LockerHandler without the start-up seed: building it calls nothing
// outside the process, so the pads Lambda's cold start makes no AWS call. The demo pad is
// seeded on first use instead: by the store when it initialises a new table
// (dynamostore.Config.Initialize, before the format marker is written) and by the service
// whenever a read of demo-pad-v1 finds it missing.
func LazyLockerHandler(ctx context.Context, cfg config.Locker, store locker.Store, payments httpapi.Payments, log *slog.Logger) (http.Handler, error) {
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
	return httpapi.New(httpapi.Config{Service: svc, Payments: payments, Version: version.Version, Logger: log})
}
