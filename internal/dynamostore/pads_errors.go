package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/locker"
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
	if awserr.Transient(err, unavailableCodes) {
		return fmt.Errorf("%s: %w: %v", op, locker.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %v", op, err)
}
