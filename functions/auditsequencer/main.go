// Command auditsequencer is the toolwarrant audit queue's sweep Lambda (template.yaml's
// AuditSequencerFunction, every 5 minutes): decision records are queued and integrated
// into the audit log by their writers (dynamostore, "Sequenced appends"); this integrates
// what a writer left queued when it died or gave up waiting, and reports how much it found
// (internal/app/awsapp.SequenceHandler). Configuration: CATALOG_TABLE, AUDIT_KMS_KEY
// (internal/config).
package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/config"
)

// newHandler does the cold start: config, AWS config (unless given), the catalog with its
// sequencer and the KMS log key.
func newHandler(ctx context.Context, getenv func(string) string, awsCfg *aws.Config, o awsapp.WarrantOptions, metrics io.Writer, log *slog.Logger) (func(context.Context, any) (awsapp.SequenceResult, error), error) {
	c, err := config.LoadWarrantAWS(getenv, config.WarrantAWSNeeds{})
	if err != nil {
		return nil, err
	}
	w, err := awsapp.ColdStart(ctx, c, awsCfg, "audit-sequencer", log, o)
	if err != nil {
		return nil, err
	}
	return awsapp.SequenceHandler(w.Catalog, log, awsapp.Metrics{W: metrics})
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	h, err := newHandler(context.Background(), os.Getenv, nil, awsapp.WarrantOptions{}, os.Stdout, log)
	if err != nil {
		log.Error("audit sequencer: cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
