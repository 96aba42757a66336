// Command interceptor is the toolwarrant AgentCore Gateway interceptor Lambda: invoked by
// the gateway at its REQUEST and RESPONSE points, it filters tools/list results to the
// approved definitions and denies every other tools/call (internal/agentcore over the
// decision core, reading approvals from the DynamoDB catalog; internal/app/awsinterceptor
// composes them). Configuration: CATALOG_TABLE, CATALOG_BLOB_BUCKET, AUDIT_KMS_KEY and the
// INTERCEPTOR_* settings (internal/config). A configuration it refuses, or a cold start
// that cannot read the catalog, denies every message rather than failing the invocation.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/agentcore"
	"github.com/agentgate-dev/agentgate/internal/app/awsinterceptor"
	"github.com/agentgate-dev/agentgate/internal/app/awswarrant"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// newHandler does the cold start; its error is the configuration's only (a start that
// cannot reach AWS denies and retries). final writes the last decision records.
func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, o awswarrant.Options, log *slog.Logger) (agentcore.HandlerFunc, func(context.Context), error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{})
	ic, ierr := config.LoadInterceptor(getenv)
	if err := errors.Join(err, ierr); err != nil {
		return nil, nil, err
	}
	instance := "" // the core's default: host and pid
	if lambdacontext.LogStreamName != "" {
		instance = lambdacontext.FunctionName + "/" + lambdacontext.LogStreamName
	}
	return awsinterceptor.New(ctx, awsinterceptor.Config{Warrant: c, Interceptor: ic, AWS: awsCfg, Options: o, Instance: instance, Logger: log})
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, final, err := newHandler(context.Background(), os.Getenv, nil, awswarrant.Options{}, log)
	if err != nil {
		log.Error("interceptor: configuration refused; every message is denied", slog.String("error", err.Error()))
		h, final = agentcore.Unavailable("toolwarrant: the interceptor's configuration is refused; denied (see its log)", log), func(context.Context) {}
	}
	// At shutdown Lambda gives the runtime a few hundred milliseconds: write the window of
	// decision records held, then exit.
	lambda.StartWithOptions(h, lambda.WithEnableSIGTERM(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		final(ctx)
		cancel()
		os.Exit(0)
	}))
}
