package config

import (
	"errors"
	"log/slog"
)

// AWS is the configuration of the pads Lambda beyond Locker: which table holds the pads and
// how hard the SDK retries. Region, credentials and endpoints (AWS_REGION,
// AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, ...) are read by the AWS SDK's own default
// chain when awsbase.AWSConfig loads it; they are not repeated here.
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

// validTableName is DynamoDB's rule for table names: 3 to 255 of [a-zA-Z0-9_.-]. (Checked by
// hand: a regular expression with {3,255} is expanded into a state per repetition, built at
// every cold start of every binary that links this package.)
func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// LoadAWS reads the AWS configuration through getenv and reports every problem at once.
func LoadAWS(getenv func(string) string) (AWS, error) {
	c := AWS{MaxAttempts: 3}
	var errs []error
	c.PadsTable = tableVar(getenv, "PADS_TABLE", "pads", " (3-255 of a-z A-Z 0-9 _ . -)", &errs)
	intVar(getenv, "PADS_DYNAMODB_MAX_ATTEMPTS", &c.MaxAttempts, 1, 10, &errs)
	return c, errors.Join(errs...)
}
