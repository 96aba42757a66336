package config

import (
	"errors"
	"log/slog"
	"regexp"
)

// AWS is the configuration of the pads Lambda beyond Locker: which table holds the pads and
// how hard the SDK retries. Region, credentials and endpoints (AWS_REGION,
// AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, ...) are read by the AWS SDK's own default
// chain when awsapp.AWSConfig loads it; they are not repeated here.
type AWS struct {
	// PadsTable is PADS_TABLE, the DynamoDB table of template.yaml's PadsTable (SAM sets it
	// with !Ref PadsTable). Required.
	PadsTable string
	// MaxAttempts is PADS_DYNAMODB_MAX_ATTEMPTS, the SDK's attempts per DynamoDB call
	// (retries of throttling, 5xx and lost responses reuse the transaction's idempotency
	// token). Default 3, 1 to 10.
	MaxAttempts int
}

// LogValue logs the effective configuration; it holds no secrets.
func (c AWS) LogValue() slog.Value {
	return slog.GroupValue(slog.String("pads_table", c.PadsTable), slog.Int("max_attempts", c.MaxAttempts))
}

// tableName is DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// LoadAWS reads the AWS configuration through getenv and reports every problem at once.
func LoadAWS(getenv func(string) string) (AWS, error) {
	c := AWS{MaxAttempts: 3}
	var errs []error
	c.PadsTable = tableVar(getenv, "PADS_TABLE", "pads", " (3-255 of a-z A-Z 0-9 _ . -)", &errs)
	intVar(getenv, "PADS_DYNAMODB_MAX_ATTEMPTS", &c.MaxAttempts, 1, 10, &errs)
	return c, errors.Join(errs...)
}
