package config

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
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
	c.PadsTable = strings.TrimSpace(getenv("PADS_TABLE"))
	switch {
	case c.PadsTable == "":
		errs = append(errs, errors.New("PADS_TABLE is not set: name the DynamoDB pads table (template.yaml sets it)"))
	case !tableName.MatchString(c.PadsTable):
		errs = append(errs, fmt.Errorf("PADS_TABLE=%q is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)", c.PadsTable))
	}
	intVar(getenv, "PADS_DYNAMODB_MAX_ATTEMPTS", &c.MaxAttempts, 1, 10, &errs)
	return c, errors.Join(errs...)
}
