package awsapp

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

// CheckpointHandler is the checkpoint Lambda's handler: on each scheduled event it runs
// checkpoint.Writer once (verify the entries since the last checkpoint, sign the head
// with KMS, put checkpoints/<seq>.json if absent). An error is returned — and the Lambda
// invocation fails, so the Errors metric alarms — when the log does not verify against
// the last checkpoint or KMS/S3 cannot be used; nothing is written then.
func CheckpointHandler(w *Warrant, log *slog.Logger) (func(context.Context, any) (checkpoint.Result, error), error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if w.Blobs == nil {
		return nil, errors.New("checkpoint: CHECKPOINT_BUCKET is not set")
	}
	cw := &checkpoint.Writer{Log: w.Catalog, Signer: w.Signer, Blobs: w.Blobs, Now: w.Now, Logger: log}
	return func(ctx context.Context, _ any) (checkpoint.Result, error) {
		res, err := cw.Run(ctx)
		if err != nil {
			log.ErrorContext(ctx, "checkpoint failed", slog.String("error", err.Error()), slog.Int64("head", res.Head.Seq))
			return res, err
		}
		return res, nil
	}, nil
}
