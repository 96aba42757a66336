package agentcore

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// requestID is the invocation's Lambda request ID as a log attribute ("" outside Lambda).
func requestID(ctx context.Context) slog.Attr {
	id := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		id = lc.AwsRequestID
	}
	return slog.String("request_id", id)
}
