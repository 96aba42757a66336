package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Defaults of the interceptor's decision core: internal/enforce's own (this package does not
// link it, so that the pads function does not either; TestInterceptorDefaultsAreTheCores
// holds them equal).
const (
	DefaultInterceptorRefresh     = 5 * time.Second
	DefaultInterceptorStaleness   = 30 * time.Second
	DefaultInterceptorRecordEvery = 60 * time.Second
)

// Interceptor is the configuration of the AgentCore Gateway interceptor Lambda
// (functions/interceptor) beyond WarrantAWS (CATALOG_TABLE, CATALOG_BLOB_BUCKET,
// AUDIT_KMS_KEY). template.yaml sets every variable.
type Interceptor struct {
	// Role is INTERCEPTOR_ROLE_ARN, the function's IAM role: recorded as the author of the
	// audit entries it writes (gateway observations, decision records). Required.
	Role string
	// Servers is INTERCEPTOR_SERVERS, the catalog servers (= the gateway's target names)
	// the interceptor decides for, comma-separated. Default none: every server the catalog
	// holds at cold start.
	Servers []string
	// Shadow is INTERCEPTOR_SHADOW=1: decide and record as usual, let everything through
	// (what would have been filtered or denied is recorded as would-deny). Default false.
	Shadow bool
	// RecordEvery is INTERCEPTOR_RECORD_EVERY, how often an execution environment writes
	// its decision records to the audit log (and at shutdown). Default 60s, at least 1s.
	RecordEvery time.Duration
	// Refresh is INTERCEPTOR_REFRESH: approvals older than this are re-read at the start of
	// an invocation. Default 5s, at least 100ms.
	Refresh time.Duration
	// Staleness is INTERCEPTOR_STALENESS: approvals older than this deny everything (the
	// catalog unreachable). Default 30s, at least Refresh.
	Staleness time.Duration
}

// LogValue shows the configuration (it holds no secret).
func (c Interceptor) LogValue() slog.Value {
	return slog.GroupValue(slog.String("role", c.Role), slog.Any("servers", c.Servers), slog.Bool("shadow", c.Shadow),
		slog.Duration("record_every", c.RecordEvery), slog.Duration("refresh", c.Refresh), slog.Duration("staleness", c.Staleness))
}

// LoadInterceptor reads the interceptor's configuration through getenv and reports every
// problem together.
func LoadInterceptor(getenv func(string) string) (Interceptor, error) {
	c := Interceptor{RecordEvery: DefaultInterceptorRecordEvery, Refresh: DefaultInterceptorRefresh, Staleness: DefaultInterceptorStaleness}
	var errs []error
	c.Role = strings.TrimSpace(getenv("INTERCEPTOR_ROLE_ARN"))
	if !strings.HasPrefix(c.Role, "arn:") {
		errs = append(errs, fmt.Errorf("INTERCEPTOR_ROLE_ARN=%q must be the interceptor function's role ARN (template.yaml sets it)", c.Role))
	}
	seen := map[string]bool{}
	for _, s := range strings.Split(getenv("INTERCEPTOR_SERVERS"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if err := warrant.ValidateServerName(s); err != nil {
			errs = append(errs, fmt.Errorf("INTERCEPTOR_SERVERS: %w", err))
			continue
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("INTERCEPTOR_SERVERS: server %q given twice", s))
			continue
		}
		seen[s] = true
		c.Servers = append(c.Servers, s)
	}
	boolVar(getenv, "INTERCEPTOR_SHADOW", &c.Shadow, &errs)
	durationVar(getenv, "INTERCEPTOR_RECORD_EVERY", &c.RecordEvery, time.Second, &errs)
	refreshOK := durationVar(getenv, "INTERCEPTOR_REFRESH", &c.Refresh, 100*time.Millisecond, &errs)
	if durationVar(getenv, "INTERCEPTOR_STALENESS", &c.Staleness, 100*time.Millisecond, &errs) && refreshOK && c.Staleness < c.Refresh {
		errs = append(errs, fmt.Errorf("INTERCEPTOR_STALENESS=%s is shorter than INTERCEPTOR_REFRESH=%s: every read of the approvals would be stale before the next", c.Staleness, c.Refresh))
	}
	return c, errors.Join(errs...)
}

// durationVar sets *dst from the variable name, a Go duration of at least lo, and reports
// whether the value (set or default) is usable.
func durationVar(getenv func(string) string, name string, dst *time.Duration, lo time.Duration, errs *[]error) bool {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo {
		*errs = append(*errs, fmt.Errorf("%s=%q must be a duration of at least %s, such as %s", name, v, lo, *dst))
		return false
	}
	*dst = d
	return true
}
