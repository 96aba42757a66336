package awserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func response(status int, err error) error {
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err}
}

func TestTransient(t *testing.T) {
	codes := map[string]bool{"ThrottlingException": true}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                {nil, false},
		"canceled":           {fmt.Errorf("op: %w", context.Canceled), false},
		"deadline":           {fmt.Errorf("op: %w", context.DeadlineExceeded), true},
		"retries exhausted":  {&retry.MaxAttemptsError{Attempt: 3, Err: errors.New("x")}, true},
		"listed code":        {&smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}, true},
		"server fault":       {&smithy.GenericAPIError{Code: "Whatever", Fault: smithy.FaultServer}, true},
		"client fault":       {&smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient}, false},
		"503":                {response(503, errors.New("unavailable")), true},
		"403":                {response(403, errors.New("denied")), false},
		"network":            {&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		"plain error":        {errors.New("validation failed"), false},
		"wrapped 500 in API": {response(500, &smithy.GenericAPIError{Code: "InternalFailure"}), true},
	} {
		if got := Transient(tc.err, codes); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
	if Status(response(409, nil)) != 409 || Status(errors.New("x")) != 0 {
		t.Error("Status")
	}
}
