// Command baseline is the smallest Lambda bootstrap: lambda.Start with a handler that
// answers every API Gateway event with a fixed 404, touching nothing. test/rie's
// BenchmarkColdStart builds it exactly as functions/pads is built and runs both under
// aws-lambda-rie in the same run, so the pads function's init can be reported with the
// emulator's and the Go runtime's own share subtracted.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 404, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"detail":"Not Found"}`}, nil
	})
}
