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
// HTTP handler. In txid mode payments must be non-nil.
func LockerHandler(ctx context.Context, cfg config.Locker, store locker.Store, payments httpapi.Payments, log *slog.Logger) (http.Handler, error) {
	if cfg.Mode == config.ModeTxid && payments == nil {
		return nil, fmt.Errorf("LOCKER_MODE=txid: payment verification is not available in this build; refusing to serve free pads")
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
