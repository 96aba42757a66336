package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/agentgate-dev/agentgate/internal/locker"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// unavailableCodes are DynamoDB error codes that mean "throttled or temporarily failing".
var unavailableCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"ThrottlingException":                    true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"TransactionConflictException":           true,
	"TransactionInProgressException":         true,
	"LimitExceededException":                 true,
	"ReplicatedWriteConflictException":       true,
}

// classify wraps a DynamoDB error that is not a condition failure. Throttling, 5xx,
// transaction conflicts outside a transaction, exhausted retries and timeouts (the write's
// outcome is unknown and it is not acknowledged) become locker.ErrUnavailable, which the
// service answers with 503 and Retry-After. The driver's cause is kept as text (%v): it is
// not part of the port's contract.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("%s: %w: %v", op, locker.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %v", op, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ma *retry.MaxAttemptsError
	var qe ratelimit.QuotaExceededError
	if errors.As(err, &ma) || errors.As(err, &qe) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if unavailableCodes[ae.ErrorCode()] {
			return true
		}
		if ae.ErrorFault() == smithy.FaultServer {
			return true
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}
