package awstest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Lambda's payload limits for a synchronous invocation, as its error messages state them.
const (
	MaxLambdaRequest  = 6291456 // the event
	MaxLambdaResponse = 6291556 // the function's result, serialized
)

// HTTPFunc is an API Gateway HTTP API (payload format 2.0) Lambda handler.
type HTTPFunc = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// LambdaHTTP runs h as Lambda would for API Gateway: the event and the result are
// serialized as the runtime serializes them, and either over its limit fails the
// invocation — the client then gets API Gateway's own error, not the function's answer.
// In-process handler tests call through it so that a handler cannot pass a test with an
// answer a real deployment could not return.
func LambdaHTTP(h HTTPFunc) HTTPFunc {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		in, err := json.Marshal(ev)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if len(in) > MaxLambdaRequest {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("awstest: Lambda refuses the event: %d bytes exceeds the %d-byte request payload limit", len(in), MaxLambdaRequest)
		}
		resp, err := h(ctx, ev)
		if err != nil {
			return resp, err
		}
		out, err := json.Marshal(resp)
		if err != nil {
			return resp, err
		}
		if len(out) > MaxLambdaResponse {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("awstest: Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes)", len(out), MaxLambdaResponse)
		}
		return resp, nil
	}
}
