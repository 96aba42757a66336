package awsapp

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/emf"
)

// MetricAuditQueued is, per run of the audit queue's sweep, the queue items it found
// waiting (decision records whose writer died before integrating them, or gave up
// waiting): above 0 now and then is a writer that was cut short; every run is a sweep
// that is not keeping up, or writers that cannot integrate (their role, KMS).
const MetricAuditQueued = "AuditEventsQueued"

// SequenceResult is what one sweep did.
type SequenceResult struct {
	// Queued is how many queue items waited when it began, and Oldest when the oldest of
	// them was queued (zero when none).
	Queued int       `json:"queued"`
	Oldest time.Time `json:"oldest,omitzero"`
	// Written is the audit entries it integrated.
	Written int `json:"written"`
}

// SequenceHandler is the audit sequencer Lambda's handler (template.yaml's
// AuditSequencerFunction, on a schedule): it integrates whatever the audit queue holds
// (dynamostore.Catalog.Sequence) and ends with one EMF line of the items it found. An
// error — the queue could not be read, or integrating failed (KMS, the table) — fails the
// invocation, so its Errors alarm fires; what was queued stays queued.
func SequenceHandler(cat *dynamostore.Catalog, log *slog.Logger, m Metrics) (func(context.Context, any) (SequenceResult, error), error) {
	if cat == nil {
		return nil, errors.New("audit sequencer: no catalog")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, _ any) (SequenceResult, error) {
		var res SequenceResult
		n, oldest, err := cat.QueuedAudit(ctx)
		if err == nil {
			res.Queued, res.Oldest = n, oldest
			if n > 0 {
				res.Written, err = cat.Sequence(ctx)
			}
		}
		m.emit(ctx, log, []emf.Metric{{Name: MetricAuditQueued, Unit: emf.Count, Value: float64(res.Queued)}},
			map[string]any{"written": res.Written})
		if err != nil {
			log.ErrorContext(ctx, "audit queue not integrated", slog.String("error", err.Error()), slog.Int("queued", res.Queued), slog.Int("written", res.Written))
			return res, err
		}
		if res.Queued > 0 {
			log.InfoContext(ctx, "audit queue integrated", slog.Int("queued", res.Queued), slog.Time("oldest", res.Oldest), slog.Int("written", res.Written))
		}
		return res, nil
	}, nil
}
