// Package awserr decides one question for every AWS adapter (DynamoDB, KMS, S3): does an
// SDK error mean "not now" — the call may succeed if retried later — rather than "no"?
// Each adapter maps a transient error to its port's ErrUnavailable (503 with Retry-After,
// nothing acknowledged) and adds the error codes its service uses for throttling.
package awserr

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Transient reports whether err is temporary: a deadline, the SDK's retries or its client
// rate limit exhausted, an API error whose code is in codes or that the service marks as
// its own fault, an HTTP 5xx, a network error, or anything the SDK's default retry rules
// would retry. A canceled context is not transient: the caller gave up.
func Transient(err error, codes map[string]bool) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ma *retry.MaxAttemptsError
	var qe ratelimit.QuotaExceededError
	if errors.As(err, &ma) || errors.As(err, &qe) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (codes[ae.ErrorCode()] || ae.ErrorFault() == smithy.FaultServer) {
		return true
	}
	if Status(err) >= 500 {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// Status is the HTTP status of the response err came with, or 0.
func Status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
