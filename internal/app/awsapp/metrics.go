package awsapp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/emf"
)

// The toolwarrant functions' own CloudWatch metrics, published as EMF lines in their logs
// (package emf). template.yaml's alarms name the same namespace, metrics and dimension;
// test/template reads these constants to check that they do.
const (
	// MetricsNamespace is the namespace of every metric below.
	MetricsNamespace = "agentgate/toolwarrant"
	// MetricDimension is the one dimension of every metric: the Lambda function's name.
	// template.yaml names the functions ${Stage}-toolwarrant-…, so the dimension tells two
	// deployments in one account and region apart, and it is the value an alarm names.
	MetricDimension = "FunctionName"

	// MetricServersCrawled is, per crawl invocation, the servers it tried to list (every
	// requested one, including those refused before listing).
	MetricServersCrawled = "ServersCrawled"
	// MetricServersFailed is, per crawl invocation, the servers whose crawl was not
	// recorded: not listed, refused (not in the catalog, a missing header), or not stored.
	// The invocation itself succeeds, so this is the only signal of a failing server.
	MetricServersFailed = "ServersFailed"
	// MetricCheckpointMismatch is 1 for a checkpoint run that found the audit log no longer
	// verifying against its last checkpoint, or that checkpoint not genuine
	// (checkpoint.ErrRewritten, checkpoint.ErrUntrusted): possible tampering. 0 otherwise.
	MetricCheckpointMismatch = "CheckpointMismatch"
	// MetricCheckpointUnavailable is 1 for a checkpoint run that could not finish for any
	// other reason (DynamoDB, KMS or S3 unavailable or refusing): an outage, not evidence
	// about the log. 0 otherwise.
	MetricCheckpointUnavailable = "CheckpointUnavailable"
)

// Metrics is where a function writes its EMF records.
type Metrics struct {
	// W receives one EMF line per invocation: os.Stdout in Lambda, which the runtime sends
	// to the function's log group, where CloudWatch Logs extracts the metrics. Nil: none.
	W io.Writer
	// Function is the value of the FunctionName dimension. Default: the Lambda runtime's
	// function name (lambdacontext.FunctionName, from AWS_LAMBDA_FUNCTION_NAME).
	Function string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// emit writes one record; a failed write is logged, never the invocation's failure (the
// metric is lost, the work is not).
func (m Metrics) emit(ctx context.Context, log *slog.Logger, ms []emf.Metric, props map[string]any) {
	if m.W == nil {
		return
	}
	fn := m.Function
	if fn == "" {
		fn = lambdacontext.FunctionName
	}
	if fn == "" {
		fn = "unknown"
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	r := emf.Record{Namespace: MetricsNamespace, Dimensions: []emf.Dimension{{Name: MetricDimension, Value: fn}}, Metrics: ms, Properties: props, Time: now()}
	if err := emf.Write(m.W, r); err != nil {
		log.ErrorContext(ctx, "metrics not written", slog.String("error", err.Error()))
	}
}

// checkpointOutcome classifies a checkpoint run's error: evidence against the log
// (mismatch) or a run that could not finish (unavailable).
func checkpointOutcome(err error) (mismatch, unavailable bool) {
	switch {
	case err == nil:
		return false, false
	case errors.Is(err, checkpoint.ErrRewritten), errors.Is(err, checkpoint.ErrUntrusted):
		return true, false
	default:
		return false, true
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
